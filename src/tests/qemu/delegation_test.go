package qemu

import (
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/qemuvm"
)

// TestNobleGardenDelegation is issue 37 items 2 and 4 for delegation-audit
// on a real noble VM: runc containers in a Garden-like tree no systemd unit
// owns (/garden/g1, and /garden/good/g2 as guardian's throttler lays them
// out). While /garden's cgroup.subtree_control enables every controller,
// daemon-reloads strip nothing below it (the kernel refuses systemd's
// "-cpu" at the root with EBUSY) and delegation-audit passes them; with
// cpuset taken out of /garden's subtree_control it warns naming cpuset.
func TestNobleGardenDelegation(t *testing.T) {
	t.Parallel()
	qemuvm.RequireImage(t)
	g, _ := bootWithCellguard(t)
	g.sh("systemd-analyze log-level debug") // the controller writes are logged at debug only
	t.Logf("runc: %s", firstLine(g.sh("runc --version")))
	g.bundle()

	t.Log("step 1: g1 at /garden/g1; -cpuset on /garden (no child enables it: the kernel allows it)")
	g.run("g1", "/garden/g1")
	g.sh("echo -cpuset > /sys/fs/cgroup/garden/cgroup.subtree_control")
	g.state("g1")
	g.audit("/garden", "warn", "does not enable cpuset")

	t.Log("step 2: +cpuset back on /garden, g2 at /garden/good/g2, daemon-reload twice")
	g.sh("echo +cpuset > /sys/fs/cgroup/garden/cgroup.subtree_control")
	g.run("g2", "/garden/good/g2")
	g.reload()
	g.reload()
	g.state("g1", "g2")
	g.expect("after two daemon-reloads", nil) // limits-intact: every limit still there
	g.audit("/garden", "pass", "/garden's cgroup.subtree_control enables cpu cpuset io memory pids")
	g.audit("/garden/good", "pass", "in /garden: /garden's cgroup.subtree_control enables")

	t.Log("step 3: -cpu at the root, as systemd writes it, while /garden enables cpu")
	// coreutils' echo says the errno; dash's builtin says only "I/O error".
	res, err := g.vm.Output(time.Minute, "sh", "-c", "/bin/echo -cpu > /sys/fs/cgroup/cgroup.subtree_control")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("/bin/echo -cpu > /sys/fs/cgroup/cgroup.subtree_control: exit %d, %s", res.Exit, strings.TrimSpace(string(res.Stderr)))
	if res.Exit == 0 || !strings.Contains(string(res.Stderr), "Device or resource busy") {
		t.Errorf("-cpu at the root: exit %d %q, want EBUSY", res.Exit, res.Stderr)
	}
	t.Logf("root subtree_control after: %s", g.sh("cat /sys/fs/cgroup/cgroup.subtree_control"))
}

// audit checks delegation-audit's finding about subject in this tree's
// validate: its status and a part of its detail.
func (g *guest) audit(subject, status, says string) {
	g.t.Helper()
	rep, _ := g.validate(guestBin)
	for _, r := range rep.Results {
		if r.ID != "delegation-audit" {
			continue
		}
		for _, f := range r.Findings {
			if f.Subject != subject {
				continue
			}
			g.t.Logf("delegation-audit %s %s: %s (top_cgroup %q, subtree_control %q, slice_keepers %q, missing %q)", f.Status, f.Subject, f.Detail,
				f.Data["top_cgroup"], f.Data["subtree_control"], f.Data["slice_keepers"], f.Data["missing_controllers"])
			if f.Status != status || !strings.Contains(f.Detail, says) {
				g.t.Errorf("delegation-audit %s: %s %q, want %s saying %q", subject, f.Status, f.Detail, status, says)
			}
			return
		}
		g.t.Errorf("delegation-audit says nothing about %s: %+v", subject, r.Findings)
		return
	}
	g.t.Errorf("no delegation-audit in the report")
}
