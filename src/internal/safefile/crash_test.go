package safefile_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// Env of the helper process: the helper is this test binary, re-run with
// -test.run=TestCrashHelper.
const (
	helperEnv   = "CELLGUARD_SAFEFILE_CRASH_HELPER" // "once" or "loop"
	helperPath  = "CELLGUARD_SAFEFILE_CRASH_TARGET"
	helperData  = "CELLGUARD_SAFEFILE_CRASH_DATA"  // file holding the new content
	helperOther = "CELLGUARD_SAFEFILE_CRASH_OTHER" // loop: second content to alternate with
)

// steps are WriteFileAtomic's steps, as safefile.CrashEnv names them.
var steps = []string{"create", "write", "chmod", "fsync", "close", "rename", "fsync-dir"}

// TestCrashHelper is not a test: it is the child process the crash tests
// kill. It writes one file (once) or alternates two contents forever (loop).
func TestCrashHelper(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process for the crash tests")
	}
	target := os.Getenv(helperPath)
	data, err := os.ReadFile(os.Getenv(helperData))
	if err != nil {
		t.Fatal(err)
	}
	if mode == "once" {
		if _, err := safefile.WriteFileAtomic(target, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	other, err := os.ReadFile(os.Getenv(helperOther))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		d := data
		if i%2 == 1 {
			d = other
		}
		if _, err := safefile.WriteFileAtomic(target, d, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// helper starts the helper process; extra env is appended.
func helper(t *testing.T, mode, target string, data, other []byte, env ...string) *exec.Cmd {
	t.Helper()
	dir := t.TempDir()
	df, of := filepath.Join(dir, "data"), filepath.Join(dir, "other")
	if err := os.WriteFile(df, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(of, other, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperPath+"="+target, helperData+"="+df, helperOther+"="+of)
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

func killedBySIGKILL(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// litter lists what a crashed write left next to target besides target.
// It must be hidden temp files that neither systemd (units, drop-ins: a
// known type suffix) nor systemd-sysctl (*.conf) would ever load.
func checkLitter(t *testing.T, target string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Dir(target))
	if err != nil {
		t.Fatal(err)
	}
	var litter []string
	for _, e := range ents {
		name := e.Name()
		if name == filepath.Base(target) {
			continue
		}
		litter = append(litter, name)
		if !strings.HasPrefix(name, "."+filepath.Base(target)+".tmp-") {
			t.Errorf("unexpected file %s next to %s", name, target)
		}
		for _, suffix := range []string{".conf", ".service", ".socket", ".slice", ".scope", ".target", ".mount", ".timer", ".path", ".swap", ".device", ".automount"} {
			if strings.HasSuffix(name, suffix) {
				t.Errorf("temp file %s ends in %s: systemd would load it", name, suffix)
			}
		}
	}
	return litter
}

// unitFiles returns the (old, new) content pairs cellguard writes: a unit
// changing delegation and kill mode, a supervisor drop-in, a sysctl.d file.
func contentPairs(t *testing.T) map[string][2][]byte {
	t.Helper()
	s := unitfile.Spec{Name: "garden", Start: []string{"/var/vcap/jobs/garden/bin/garden_ctl", "start"},
		Type: unitfile.TypeExec, Delegate: unitfile.DelegateV2, KillMode: unitfile.KillModeProcess}
	oldUnit, err := unitfile.Render(s)
	if err != nil {
		t.Fatal(err)
	}
	s.Delegate, s.KillMode = unitfile.DelegateV1, unitfile.KillModeNone
	newUnit, err := unitfile.Render(s)
	if err != nil {
		t.Fatal(err)
	}
	oldDrop, err := unitfile.RenderSupervisorDropIn("runit.service", unitfile.DelegateV2)
	if err != nil {
		t.Fatal(err)
	}
	newDrop, err := unitfile.RenderSupervisorDropIn("runit.service", unitfile.DelegateV1)
	if err != nil {
		t.Fatal(err)
	}
	return map[string][2][]byte{
		"etc/systemd/system/cellguard-garden.service":                   {oldUnit, newUnit},
		"etc/systemd/system/runit.service.d/50-cellguard-delegate.conf": {oldDrop, newDrop},
		"etc/sysctl.d/60-cellguard.conf":                                {[]byte("vm.panic_on_oom = 2\n"), []byte("vm.panic_on_oom = 0\nkernel.pid_max = 4194304\n")},
	}
}

// TestCrashAtEveryStep kills a writer with SIGKILL right after each step of
// WriteFileAtomic, for a unit file, a drop-in and a sysctl.d file, with and
// without an old version: the target holds the old or the new content
// (nothing, when there was no old file and the crash came before the
// rename), never a mix; what is left beside it is a hidden temp file no
// loader reads; and the next run writes the new content.
func TestCrashAtEveryStep(t *testing.T) {
	testkit.RequireCrashHooks(t)
	for rel, pair := range contentPairs(t) {
		for _, hadOld := range []bool{true, false} {
			for _, step := range steps {
				t.Run(fmt.Sprintf("%s/old=%v/%s", filepath.Base(rel), hadOld, step), func(t *testing.T) {
					target := filepath.Join(t.TempDir(), rel)
					if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
						t.Fatal(err)
					}
					if hadOld {
						if err := os.WriteFile(target, pair[0], 0o644); err != nil {
							t.Fatal(err)
						}
					}
					cmd := helper(t, "once", target, pair[1], nil, safefile.CrashEnv+"="+step)
					out, err := cmd.CombinedOutput()
					if !killedBySIGKILL(err) {
						t.Fatalf("helper was not killed at %s: %v\n%s", step, err, out)
					}
					got, err := os.ReadFile(target)
					renamed := step == "rename" || step == "fsync-dir"
					switch {
					case errors.Is(err, os.ErrNotExist) && !hadOld && !renamed:
					case err != nil:
						t.Fatalf("after a crash at %s: %v", step, err)
					case renamed && !bytes.Equal(got, pair[1]):
						t.Fatalf("crash after %s: want the new content, got %q", step, got)
					case !renamed && !bytes.Equal(got, pair[0]):
						t.Fatalf("crash after %s: want the old content, got %q", step, got)
					}
					litter := checkLitter(t, target)
					if renamed && len(litter) != 0 {
						t.Errorf("crash after %s left %v", step, litter)
					}

					res, err := safefile.WriteFileAtomic(target, pair[1], 0o644)
					if err != nil {
						t.Fatalf("next run: %v", err)
					}
					if res.Changed == renamed {
						t.Errorf("next run after a crash at %s: Changed=%v", step, res.Changed)
					}
					assertFile(t, target, pair[1], 0o644)
					// Pre-start's cleanup removes what the crash left, and
					// only that.
					removed, err := safefile.RemoveStaleTemps(filepath.Dir(target),
						func(n string) bool { return n == filepath.Base(target) }, 0, time.Now().Add(time.Second))
					if err != nil || len(removed) != len(litter) {
						t.Errorf("RemoveStaleTemps removed %q (%v), want the %d temp files %q", removed, err, len(litter), litter)
					}
					if left := checkLitter(t, target); len(left) != 0 {
						t.Errorf("after RemoveStaleTemps: %q left", left)
					}
					assertFile(t, target, pair[1], 0o644)
				})
			}
		}
	}
}

// TestKillAnywhereLeavesOldOrNew kills, at random moments, a writer that
// alternates two 2 MiB contents: no instrumentation, so the kill lands
// inside write(2), fsync and rename as often as the timing allows.
func TestKillAnywhereLeavesOldOrNew(t *testing.T) {
	a := bytes.Repeat([]byte("a"), 2<<20)
	b := bytes.Repeat([]byte("b"), 2<<20)
	target := filepath.Join(t.TempDir(), "etc/sysctl.d/60-cellguard.conf")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	rounds := 40
	if testing.Short() {
		rounds = 10
	}
	for i := 0; i < rounds; i++ {
		cmd := helper(t, "loop", target, a, b)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until the loop has written once, then kill at a random moment.
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, err := os.Stat(target); err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(rand.IntN(20000)) * time.Microsecond)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		got, err := os.ReadFile(target)
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
			t.Fatalf("round %d: torn file: %d bytes, want %d of one letter (a: %d, b: %d)", i, len(got), len(a),
				bytes.Count(got, []byte("a")), bytes.Count(got, []byte("b")))
		}
		checkLitter(t, target)
	}
}

func assertFile(t *testing.T, path string, want []byte, perm os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != perm {
		t.Errorf("%s: mode %v, want a regular file %v", path, fi.Mode(), perm)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Geteuid() {
		t.Errorf("%s: owner uid %d, want %d", path, st.Uid, os.Geteuid())
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: content %q, want %q", path, got, want)
	}
}
