package integration

import (
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
)

// TestDevicesCgroupRealRunc: Debian's runc runs a busybox container; its
// devices cgroup allows what runc recorded. Then `a` is written to the
// cgroup's devices.deny, which is what an interrupted `runc update` of
// runc < 1.0.0-rc91 left (deny all, the allows not yet written back):
// devices-cgroup names the container and every rule now missing.
func TestDevicesCgroupRealRunc(t *testing.T) {
	box := bootBoxMode(t, "devices-runc", cgroup.Hybrid)
	cellguard := box.InstallCellguard(t)
	installRunc(t, box)
	startGarden(t, box)
	removeContainersAtEnd(t, box, "c1")

	v := validate(t, box, cellguard, "--phase", "pre-start")
	if p := v.problems(t, "devices-cgroup"); len(p) != 0 {
		t.Fatalf("as runc left it: %v", p)
	}
	list := "/sys/fs/cgroup/devices" + ctrCgroup + "/devices.list"
	before := box.Run(t, "cat", list)
	box.Run(t, "sh", "-c", "echo a > /sys/fs/cgroup/devices"+ctrCgroup+"/devices.deny")
	if after := box.Run(t, "cat", list); strings.TrimSpace(after) != "" {
		t.Fatalf("devices.deny a left %q", after)
	}

	v = validate(t, box, cellguard, "--phase", "pre-start")
	p := v.problems(t, "devices-cgroup")
	if len(p) != 1 || p[0]["container"] != "c1" || p[0]["cgroup"] != ctrCgroup {
		t.Fatalf("after deny all: %v", p)
	}
	// Every line runc's rules had put in devices.list is named missing.
	missing := strings.Split(p[0]["missing"], ",")
	for _, line := range strings.Split(strings.TrimSpace(before), "\n") {
		found := false
		for _, m := range missing {
			found = found || m == strings.TrimSpace(line)
		}
		if !found {
			t.Errorf("%q was allowed before and is not named missing: %v", line, missing)
		}
	}
	t.Logf("named: %s", p[0]["detail"])
	for _, r := range v.report.Results {
		if r.ID == "devices-cgroup" && r.Status != "warn" {
			t.Errorf("devices-cgroup is %s, want warn", r.Status)
		}
	}
	if v.code != 0 {
		t.Fatalf("a warning must not fail pre-start: exit %d", v.code)
	}
}
