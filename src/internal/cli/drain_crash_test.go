package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/testkit"
)

// crashes are the ways a Go process dies that no recover in drain catches.
var crashes = []string{"panic", "fatal", "kill"}

// TestDrainCrashUnsupervisedLeavesStaleTextfile is the hole, kept as the
// reason for the supervisor: `cellguard drain` run directly (as bin/drain
// ran it before issue 23) and crashed leaves the previous drain's
// textfile, which still says pass.
func TestDrainCrashUnsupervisedLeavesStaleTextfile(t *testing.T) {
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
			var errb strings.Builder
			cmd.Stderr = &errb
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("the crash hook did not crash the drain: %v", err)
			}
			t.Logf("unsupervised drain crashed (%s): %v; stderr: %.120s", how, err, strings.TrimSpace(errb.String()))
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

// drainWorker returns what Env.DrainChild would: a command that runs
// `cellguard drain ARGS` in a child process, here this test binary as
// TestFaultHelper, with the crash hook set to how ("" for none).
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

// TestDrainSupervisorWritesCouldNotRunOnCrash: supervised, a worker that
// crashes in each way no recover catches still ends in the could-not-run
// outcome: 0 on stdout (a broken guard does not hold the VM), exit 2, the
// textfile rewritten to say could_not_run, and the log saying the worker
// crashed. A worker that does not crash is relayed as it is.
func TestDrainSupervisorWritesCouldNotRunOnCrash(t *testing.T) {
	testkit.RequireCrashHooks(t)
	for _, how := range append([]string{""}, crashes...) {
		name := how
		if name == "" {
			name = "no crash"
		}
		t.Run(name, func(t *testing.T) {
			d := newDrainHost(t, cell(t).Root, `{}`)
			if code, _, errOut := d.drain(t, "job_changed", "hash_changed"); code != ExitOK {
				t.Fatalf("first drain: exit %d\n%s", code, errOut)
			}
			d.now = d.now.Add(time.Hour)
			var out, errb bytes.Buffer
			env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return d.env[k] },
				Now: func() time.Time { return d.now }, DrainChild: drainWorker(t, how)}
			code := Main(context.Background(), env, append([]string{"drain"}, d.drainArgs()...))
			prom := d.read(t, d.prom)
			if how == "" {
				if code != ExitOK || !strings.HasPrefix(out.String(), "0\n") {
					t.Fatalf("relayed worker: exit %d stdout %q\n%s", code, out.String(), errb.String())
				}
				mustContainAll(t, "textfile", prom, `cellguard_drain_outcome{event="update",outcome="pass"} 1`)
				return
			}
			if code != ExitCantRun || out.String() != "0\n" {
				t.Fatalf("crashed worker (%s): exit %d stdout %q, want 2 and \"0\\n\"\n%s", how, code, out.String(), errb.String())
			}
			mustContainAll(t, "textfile", prom, `cellguard_drain_could_not_run{event="update"} 1`,
				`cellguard_drain_outcome{event="update",outcome="could_not_run"} 1`, `cellguard_drain_outcome{event="update",outcome="pass"} 0`,
				fmt.Sprintf(`cellguard_drain_timestamp_seconds{event="update"} %g`, float64(d.now.Unix()))) // the crash's time, not the first drain's
			mustContainAll(t, "log", d.read(t, d.log), `"message":"cellguard.drain.worker-crashed"`, `"outcome":"could_not_run"`)
			mustContainAll(t, "stderr", errb.String(), "cellguard drain crashed (")
			t.Logf("%s: exit %d, stdout %q; stderr tail: %s", how, code, out.String(), lastLine(errb.String()))
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
