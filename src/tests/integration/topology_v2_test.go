package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// TestValidateRealRuncThreadRoot: on a unified box, a cgroup made below a
// running runc container's cgroup and switched to `threaded` turns the
// container's cgroup into a thread root (`domain threaded`): from then on
// runc refuses to enter it with domain controllers
// (opencontainers/cgroups fs2/create.go CreateCgroupPath) and no domain
// controller can be enabled below it. The kernel allows the switch with
// the init inside (cgroup_can_be_thread_root). The validator must name
// the container and the cgroup.
//
// The internal-process half of the check (a process in a cgroup whose
// subtree_control is non-empty) cannot be provoked in a box on a host that
// binds its controllers to v1: the box's cgroup2 root offers none to
// enable (its cgroup.controllers is empty). It is shown on the noble VM
// (src/tests/qemu, TestNobleTopology).
func TestValidateRealRuncThreadRoot(t *testing.T) {
	box := bootBoxMode(t, "topology-unified", cgroup.Unified,
		sdbox.WithNspawnArgs("--system-call-filter=bpf", "--capability=CAP_BPF"))
	cellguard := box.InstallCellguard(t)
	const dir, id, cg = "/var/lib/t1", "t1", "/garden/t1"
	installBundle(t, box, dir, cg)
	removeContainersAtEnd(t, box, id)
	box.Run(t, "sh", "-c", fmt.Sprintf("runc --root %s run -d --no-new-keyring --bundle %s %s </dev/null >/run/%s.log 2>&1",
		runcRoot, dir, id, id))
	initPid(t, box, id)
	keep := []string{"cgroup-topology"}

	v := validateKeeping(t, box, cellguard, "{}", keep, "--phase", "pre-start")
	if p := v.problems(t, "cgroup-topology"); len(p) != 0 {
		t.Fatalf("before the threaded child: %v", p)
	}
	th := "/sys/fs/cgroup" + cg + "/th"
	box.Run(t, "sh", "-c", "mkdir "+th+" && echo threaded > "+th+"/cgroup.type")
	t.Cleanup(func() { box.Output("rmdir", th) })
	out, _ := box.Output("sh", "-c", "cat /sys/fs/cgroup"+cg+"/cgroup.type "+th+"/cgroup.type")
	t.Logf("types of %s and its threaded child: %s", cg, strings.Join(strings.Fields(string(out)), " "))

	v = validateKeeping(t, box, cellguard, "{}", keep, "--phase", "pre-start")
	named := false
	for _, f := range v.problems(t, "cgroup-topology") {
		t.Logf("named: %s %s", f["status"], f["detail"])
		if f["container"] == id && f["cgroup"] == cg && f["type"] == "domain threaded" {
			named = true
		}
	}
	if !named {
		t.Fatalf("%s's cgroup %s, now a thread root, was not named: exit %d\n%s", id, cg, v.code, v.stdout)
	}
}
