package garden

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// UnmountedV1 returns the v1 controllers (and named hierarchies, as
// "name=systemd") that procCgroup, a /proc/PID/cgroup, lists and that no
// cgroup mount of mountinfo, from the same mount namespace, holds. The 2020
// Garden's containerd (runtime v1) fails every create while one is left:
// it loads a new task's cgroups from its init's /proc/PID/cgroup and wants a
// mount for each controller (containerd v1.6.20 runtime/v1/linux/task.go
// newTask; containerd/cgroups v1.0.4 paths.go existingPath and utils.go
// getCgroupDestination, which this follows: a "cgroup" mount whose super
// options name the controller).
func UnmountedV1(procCgroup, mountinfo []byte) ([]string, error) {
	var m cgroup.Membership
	if err := cgroup.ParseProcCgroup(procCgroup, &m); err != nil {
		return nil, fmt.Errorf("parse /proc/PID/cgroup: %w", err)
	}
	mounted := map[string]bool{}
	for _, l := range bytes.Split(mountinfo, []byte{'\n'}) {
		_, post, found := bytes.Cut(l, []byte(" - "))
		if g := bytes.Fields(post); found && len(g) >= 3 && string(g[0]) == "cgroup" {
			for _, o := range strings.Split(string(g[2]), ",") {
				mounted[o] = true
			}
		}
	}
	var missing []string
	for _, e := range m.Entries() {
		for _, c := range strings.Split(string(e.Controllers), ",") {
			if c != "" && !mounted[c] && !slices.Contains(missing, c) {
				missing = append(missing, c)
			}
		}
	}
	return missing, nil
}

// unmountedInBox reads the box's init's /proc/PID/cgroup and mountinfo (the
// box's mount namespace, where Garden and containerd run) and judges them.
func unmountedInBox(box *sdbox.Box) ([]string, error) {
	if box.Mode == cgroup.Unified {
		return nil, nil // pure v2: nspawn mounts no v1 hierarchy there at all
	}
	pid := strconv.Itoa(box.InitPID)
	cg, err := box.ReadFile("/proc/1/cgroup")
	if err != nil {
		return nil, err
	}
	mi, err := box.ReadFile("/proc/1/mountinfo")
	if err != nil {
		return nil, err
	}
	missing, err := UnmountedV1(cg, mi)
	if err != nil {
		return nil, fmt.Errorf("box %s (init %s): %w", box.Name, pid, err)
	}
	return missing, nil
}

// requireV1Mounted fails the test unless the box mounts every v1 hierarchy
// the kernel has, which the 2020 Garden's creates need: the box was not
// booted with BoxOptions, or a hierarchy appeared between its boot and now.
func requireV1Mounted(t testing.TB, box *sdbox.Box) {
	t.Helper()
	missing, err := unmountedInBox(box)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Fatalf("box %s lists v1 controllers it has mounted nowhere: %v (boot it with garden.BoxOptions; a hierarchy made since its boot fails Garden's creates: cgroups: cannot find cgroup mount destination)", box.Name, missing)
	}
}
