package cli

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// crashes are the ways a Go process dies that no recover in drain catches.
var crashes = []string{"panic", "fatal", "kill"}

// TestDrainCrashGivesNoVerdict: a crash no code of cellguard's can catch
// (an unrecovered panic in a goroutine, a Go runtime fatal error, SIGKILL)
// ends `cellguard drain`, run as bin/drain runs it, with nothing on stdout
// and the previous drain's textfile in place, still saying pass. That is
// what bin/drain, drain's one crash boundary, reads: no integer from an
// exit 2 or a signal is a crash, after which it prints 0 and has `drain
// could-not-run` rewrite the textfile (spec/jobs:
// TestDrainWrapperOnACrashingCellguard runs the real binary through it).
// Go exits 2 on a panic or fatal error, the code of cellguard's own
// could_not_run, which prints its 0 first: so the integer, not the exit
// code, tells them apart.
func TestDrainCrashGivesNoVerdict(t *testing.T) {
	testkit.RequireCrashHooks(t)
	for _, how := range crashes {
		t.Run(how, func(t *testing.T) {
			d := newDrainHost(t, cell(t).Root, `{}`)
			if code, _, errOut := d.drain(t, "job_changed", "hash_changed"); code != ExitOK {
				t.Fatalf("first drain: exit %d\n%s", code, errOut)
			}
			before := d.read(t, d.prom)
			mustContainAll(t, "first textfile", before, `cellguard_drain_outcome{event="update",outcome="pass"} 1`)
			cmd := drainWorker(t, how)(d.drainArgs())
			var out, errb strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("the crash hook did not crash the drain: %v", err)
			}
			t.Logf("drain crashed (%s): %v; stderr: %.120s", how, err, strings.TrimSpace(errb.String()))
			wantCode := 2 // Go's exit code for a panic or a fatal error
			if how == "kill" {
				wantCode = -1 // killed by a signal
			}
			if ee.ExitCode() != wantCode || out.String() != "" {
				t.Fatalf("crash (%s): exit %d stdout %q, want %d and nothing", how, ee.ExitCode(), out.String(), wantCode)
			}
			if after := d.read(t, d.prom); after != before {
				t.Fatalf("the textfile changed:\n%s", after)
			}
		})
	}
}

func (d *drainHost) drainArgs() []string {
	return []string{"--config", d.cfg, "--root", d.root, "--log-file", d.log,
		"--lift-file", d.lift, "--prometheus-textfile", d.prom, "--", "job_changed", "hash_changed"}
}

// drainWorker returns a command that runs `cellguard drain ARGS` in a
// child process, here this test binary as TestFaultHelper, with the crash
// hook set to how ("" for none).
func drainWorker(t *testing.T, how string) func(args []string) *exec.Cmd {
	return func(args []string) *exec.Cmd {
		spec, err := json.Marshal(faultJob{Args: append([]string{"drain"}, args...)})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestFaultHelper$", "-test.count=1", "-test.v=false")
		cmd.Env = append(os.Environ(), faultHelperEnv+"="+string(spec))
		if how != "" {
			cmd.Env = append(cmd.Env, safefile.CrashEnv+"=drain:"+how)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return cmd
	}
}
