package heal

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/checks"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// pidNSEnv names the cgroup the child in its own pid namespace works in
// (inPidNS).
const pidNSEnv = "CELLGUARD_HEAL_PIDNS_CHILD"

// inPidNS makes the test body run as pid 1 of a pid namespace of its own
// (with a mount namespace whose /proc is that namespace's), so it can
// hand out a pid again by writing ns_last_pid without touching the
// host's pid counter. The parent makes a cgroup of a unique name for the
// child (base, in hierarchy key of the host's layout: pids, or the v2
// one), removes it when the child is done, and reports the child's
// result; it returns "" and the test has nothing left to do. In the child
// it returns the cgroup. Everything the child starts dies with it: the
// kernel kills a pid namespace's processes when its pid 1 exits.
func inPidNS(t *testing.T) string {
	t.Helper()
	if base := os.Getenv(pidNSEnv); base != "" {
		testkit.PidNSChild(t)
		return base
	}
	testkit.RequireRoot(t, "processes in a pid namespace of the test's own and a cgroup it makes")
	l, h := testHierarchy(t)
	base := fmt.Sprintf("/cellguard-heal-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	for _, rel := range []string{base, base + "/home", base + "/outside"} {
		if err := os.Mkdir(l.Path(h, rel), 0o755); err != nil {
			t.Fatalf("make test cgroup: %v", err)
		}
	}
	t.Cleanup(func() {
		// The child's processes died with it; v1 may take a moment to let
		// the cgroups go.
		for _, rel := range []string{base + "/home", base + "/outside", base} {
			var err error
			for range 50 {
				if err = os.Remove(l.Path(h, rel)); err == nil || errors.Is(err, os.ErrNotExist) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("remove test cgroup: %v", err)
			}
		}
	})
	testkit.RunInPidNS(t, pidNSEnv, base)
	return ""
}

// testHierarchy is the hierarchy the test's cgroups are made in: pids on
// a v1 or hybrid host, else the v2 one.
func testHierarchy(t *testing.T) (*cgroup.Layout, *cgroup.Hierarchy) {
	t.Helper()
	l, err := cgroup.Discover("/")
	if err != nil {
		t.Fatal(err)
	}
	h := l.ForKey("pids")
	if h == nil {
		h = l.ForKey("")
	}
	if h == nil {
		t.Fatalf("no pids or v2 hierarchy in %+v", l)
	}
	return l, h
}

// sleeper starts a process of the test's own in cgroup rel; it is killed
// at the end of the test if it is still there.
func sleeper(t *testing.T, l *cgroup.Layout, h *cgroup.Hierarchy, rel string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	if err := l.Move(h, rel, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// escapeOf is the escape cgroup-integrity would confirm for pid: outside
// in rel's hierarchy, with the process's identity as read now.
func escapeOf(t *testing.T, h *cgroup.Hierarchy, pid int, home, outside string) checks.Escape {
	t.Helper()
	r := procfs.New("/").NewReader()
	defer r.Close()
	st, err := r.Stat(pid)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := r.PidNS(pid)
	if err != nil {
		t.Fatal(err)
	}
	return checks.Escape{Container: "c1", PID: pid, Comm: st.Comm, Actual: outside,
		Want:      snapshot.Expectation{Hierarchy: h, Key: h.Key(), Rel: home},
		StartTime: st.StartTime, PidNS: ns}
}

// cgroupOf is pid's cgroup in h.
func cgroupOf(t *testing.T, h *cgroup.Hierarchy, pid int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		t.Fatal(err)
	}
	var m cgroup.Membership
	if err := cgroup.ParseProcCgroup(b, &m); err != nil {
		t.Fatal(err)
	}
	p, _ := m.Lookup(h.Key())
	return string(p)
}

// reuse starts a process of the test's own in cgroup rel that holds pid,
// which must be free (testkit.StartWithPid).
func reuse(t *testing.T, l *cgroup.Layout, h *cgroup.Hierarchy, pid int, rel string) *exec.Cmd {
	t.Helper()
	return testkit.StartWithPid(t, pid, func() *exec.Cmd { return sleeper(t, l, h, rel) })
}

// TestHealMovesOnlyTheConfirmedProcess: with the escapee gone and its pid
// given to an unrelated process, the heal leaves that process where it is
// and reports the escapee gone, not moved back; the confirmed process
// itself is moved back. Real processes in a pid namespace of the test's
// own, real cgroups it makes.
func TestHealMovesOnlyTheConfirmedProcess(t *testing.T) {
	base := inPidNS(t)
	if base == "" {
		return
	}
	v, err := snapshot.Read(snapshot.Spec{Root: "/", RuntimeRoots: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	l := v.Layout()
	h := l.ForKey("pids")
	if h == nil {
		h = l.ForKey("")
	}
	home, outside := base+"/home", base+"/outside"

	t.Run("recycled", func(t *testing.T) {
		escapee := sleeper(t, l, h, outside)
		e := escapeOf(t, h, escapee.Process.Pid, home, outside)
		_ = escapee.Process.Kill()
		_ = escapee.Wait()
		time.Sleep(30 * time.Millisecond) // another clock tick: another start time
		other := reuse(t, l, h, e.PID, outside)
		outs := Mover{}.Heal(v, []checks.Escape{e})
		now := cgroupOf(t, h, other.Process.Pid)
		t.Logf("outcome %+v; pid %d's new holder is in %s", outs[0], e.PID, now)
		if now != outside {
			t.Errorf("the process that took pid %d was moved to %s", e.PID, now)
		}
		if !outs[0].Gone || outs[0].Moved || outs[0].Written {
			t.Errorf("outcome moved=%v written=%v gone=%v, want gone and nothing written", outs[0].Moved, outs[0].Written, outs[0].Gone)
		}
		if f, ok := outs[0].Finding(); ok {
			t.Errorf("reported %q", f.Detail)
		}
	})
	t.Run("confirmed", func(t *testing.T) {
		escapee := sleeper(t, l, h, outside)
		e := escapeOf(t, h, escapee.Process.Pid, home, outside)
		outs := Mover{}.Heal(v, []checks.Escape{e})
		if now := cgroupOf(t, h, e.PID); now != home || !outs[0].Moved {
			t.Errorf("outcome %+v, process in %s: want it moved back to %s", outs[0], now, home)
		}
	})
}
