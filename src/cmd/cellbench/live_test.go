package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// A small live cell is laid out as the fixture's cell is (each container's
// processes in its cgroups, its init in a pid namespace of its own, a state
// file naming both), escapes and heals as planted, and leaves nothing behind:
// no process, no cgroup, kernel.pid_max as it was.
func TestLiveCellComesAndGoes(t *testing.T) {
	testkit.RequireRoot(t, "the live cell's processes go into cgroups of their own")
	if _, err := exec.LookPath("cc"); err != nil {
		testkit.Unavailable(t, "no C compiler (cc) to build the cell's process; apt-get install gcc")
	}
	pidMax, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	// Built apart, as `cellbench farm` builds it for a VM without a C
	// compiler (run --live --farm).
	farm, err := buildFarm(filepath.Join(t.TempDir(), "farm"))
	if err != nil {
		t.Fatal(err)
	}
	s := fakehost.Spec{Containers: 3, ProcsPerContainer: 4, HostProcs: 5}
	c, err := startLive(s, 0.25, 1, t.TempDir(), farm)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			if err := c.stop(); err != nil {
				t.Error(err)
			}
		}
	})

	selfNS, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	var all []int
	for i, init := range c.inits {
		if ns, err := os.Readlink("/proc/" + strconv.Itoa(init) + "/ns/pid"); err != nil || ns == selfNS {
			t.Errorf("container %d: init %d in pid namespace %q (%v), want one of its own", i, init, ns, err)
		}
		var state struct {
			Pid   int               `json:"init_process_pid"`
			Paths map[string]string `json:"cgroup_paths"`
		}
		b, err := os.ReadFile(filepath.Join(c.runtimeRoot(), fakehost.ContainerID(i), "state.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &state); err != nil {
			t.Fatal(err)
		}
		if state.Pid != init || len(state.Paths) < len(c.hiers) {
			t.Errorf("container %d: state names init %d and %d cgroup paths, want %d and at least %d", i, state.Pid, len(state.Paths), init, len(c.hiers))
		}
		for _, h := range c.hiers {
			pids, err := c.listed(h, c.containerRel(i))
			if err != nil {
				t.Fatal(err)
			}
			for p, ci := range c.escaped {
				if ci == i && h.moved {
					pids = append(pids, p) // moved out: counted back for the size check
				}
			}
			if len(pids) != s.ProcsPerContainer || !slices.Contains(pids, init) {
				t.Errorf("%s%s lists %v, want %d pids with init %d", h.Dir, c.containerRel(i), pids, s.ProcsPerContainer, init)
			}
			if h.Name == c.hiers[0].Name {
				all = append(all, pids...)
			}
		}
		if p := state.Paths["pids"]; p != "" {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("container %d: cgroup_paths[pids] %s: %v", i, p, err)
			}
		}
	}
	if want := int(0.25 * float64(s.Containers*(s.ProcsPerContainer-1))); len(c.escaped) != want {
		t.Errorf("%d processes escaped, want %d", len(c.escaped), want)
	}
	movedHiers := 0
	for _, h := range c.hiers {
		if h.moved {
			movedHiers++
			got, err := c.listed(h, c.escapedRel())
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.escaped) {
				t.Errorf("%s%s lists %v, want the %d escaped", h.Dir, c.escapedRel(), got, len(c.escaped))
			}
		}
	}
	if len(c.truth) != len(c.escaped)*movedHiers {
		t.Errorf("%d escapes to report, want %d pids x %d hierarchies", len(c.truth), len(c.escaped), movedHiers)
	}
	if err := c.heal(); err != nil {
		t.Fatal(err)
	}
	for _, h := range c.hiers {
		if got, _ := c.listed(h, c.escapedRel()); len(got) > 0 {
			t.Errorf("after heal %s%s still lists %v", h.Dir, c.escapedRel(), got)
		}
	}

	stopped = true
	if err := c.stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		if err := syscall.Kill(p, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("pid %d still there after stop (kill 0: %v)", p, err)
		}
	}
	for _, h := range c.hiers {
		for _, d := range []string{"/" + c.prefix, c.hostRel(), c.escapedRel()} {
			if _, err := os.Stat(filepath.Join(h.Dir, d)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("cgroup %s%s left behind (%v)", h.Dir, d, err)
			}
		}
	}
	if now, _ := os.ReadFile("/proc/sys/kernel/pid_max"); strings.TrimSpace(string(now)) != strings.TrimSpace(string(pidMax)) {
		t.Errorf("kernel.pid_max %s after the cell, was %s", now, pidMax)
	}
}
