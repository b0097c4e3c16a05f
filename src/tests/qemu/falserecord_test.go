package qemu

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/qemuvm"
)

// TestNobleFalseRecord is the record Garden leaves with CPU throttling on
// (issue 37, /work/notes/garden37-run3.txt), with real runc on the noble
// kernel: a container with no cgroupsPath, as guardian gives privileged
// ones (rundmc/bundlerules/cgroup_path.go), started from a unit in
// system.slice, lands at /system.slice/<id> (runc resolves its name
// against the parent of its own cgroup); then its state.json's
// cgroup_paths[""] is rewritten to /sys/fs/cgroup/garden/good/<id>, which
// nothing makes, as guardian c2d9348's throttle/enforcer_linux.go Release
// does (an empty bad/<id> moves no pid; updateContainerStateCgroupPath
// writes good/<id> all the same). cgroup-integrity must call the record
// false (a warning), not the init escaped; cgroup-topology must not say
// "could not read"; validate --fix must neither move the init nor make the
// cgroup. With CELLGUARD_BEFORE_REV the cellguard before says escaped.
func TestNobleFalseRecord(t *testing.T) {
	t.Parallel()
	qemuvm.RequireImage(t)
	g, before := bootWithCellguard(t)
	g.bundle()
	g.run("p2", "")
	pid := strings.TrimSpace(g.sh(`runc state p2 | sed -n 's/.*"pid": \([0-9]*\).*/\1/p'`))
	at := strings.TrimSpace(g.sh("sed -n 's/^0:://p' /proc/" + pid + "/cgroup"))
	if at != "/system.slice/p2" {
		t.Fatalf("runc put p2's init %s at %s, want /system.slice/p2", pid, at)
	}
	// runc writes state.json as compact JSON (libcontainer/utils.WriteJSON).
	rec := g.sh(`mkdir -p /sys/fs/cgroup/garden/good
st=/run/runc/p2/state.json
sed 's|"cgroup_paths":{"":"/sys/fs/cgroup/system.slice/p2"}|"cgroup_paths":{"":"/sys/fs/cgroup/garden/good/p2"}|' $st > $st.new
mv $st.new $st
grep -o '"cgroup_paths":{[^}]*}' $st`)
	if !strings.Contains(rec, `"":"/sys/fs/cgroup/garden/good/p2"`) {
		t.Fatalf("state.json's record not rewritten: %s", rec)
	}
	if before {
		falseRecordFindings(&g, guestBefore, "validate")
	}
	got := falseRecordFindings(&g, guestBin, "validate")
	want := fmt.Sprintf("cgroup-integrity warn p2 pid=%s actual=/system.slice/p2 recorded=/garden/good/p2", pid)
	if len(got) != 1 || got[0] != want {
		t.Fatalf("findings %q, want [%q]", got, want)
	}
	// delegation-audit places p2 where systemd reaches it, below
	// system.slice, not under the /garden/good it is not in (it may not
	// judge at all when D-Bus times out in a loaded TCG guest).
	rep, _ := g.validate(guestBin)
	for _, r := range rep.Results {
		for _, f := range r.Findings {
			if r.ID == "delegation-audit" {
				t.Logf("delegation-audit %s %s: %s", f.Status, f.Subject, f.Detail)
			}
			if strings.Contains(f.Subject+f.Detail, "/garden/good") && !(r.ID == "cgroup-integrity" && f.Status == "warn") {
				t.Errorf("%s judges the false record: %s %s: %s", r.ID, f.Status, f.Subject, f.Detail)
			}
		}
	}
	res, err := g.vm.Output(2*time.Minute, guestBin, "validate", "--phase", "pre-start", "--fix", "--format", "json", "--runtime-root", g.runtimeRoot())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("validate --fix: exit %d\n%s", res.Exit, res.Stderr)
	after := strings.TrimSpace(g.sh("sed -n 's/^0:://p' /proc/" + pid + "/cgroup; ls -d /sys/fs/cgroup/garden/good/p2 2>&1 || true"))
	if !strings.HasPrefix(after, "/system.slice/p2\n") || !strings.Contains(after, "No such file or directory") {
		t.Fatalf("after validate --fix: %q, want the init still at /system.slice/p2 and no /garden/good/p2", after)
	}
}

// falseRecordFindings runs bin's validate and returns cgroup-integrity's
// and cgroup-topology's warnings and failures, logging the whole results.
func falseRecordFindings(g *guest, bin, step string) []string {
	g.t.Helper()
	rep, res := g.validate(bin)
	var got, details []string
	for _, r := range rep.Results {
		if r.ID != "cgroup-integrity" && r.ID != "cgroup-topology" {
			continue
		}
		for _, f := range r.Findings {
			details = append(details, r.ID+" "+f.Status+" "+f.Subject+": "+f.Detail)
			if f.Status == "fail" || f.Status == "warn" {
				got = append(got, fmt.Sprintf("%s %s %s pid=%s actual=%s recorded=%s", r.ID, f.Status, f.Subject, f.Data["pid"], f.Data["actual"], f.Data["recorded"]))
			}
		}
	}
	g.t.Logf("%s: %s exit %d (blocked %v)\n%s", step, bin, res.Exit, rep.Blocked, strings.Join(details, "\n"))
	return got
}
