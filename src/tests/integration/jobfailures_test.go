package integration

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// cellguardRun is one run of the cellguard binary inside the box.
type cellguardRun struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// runCellguard runs cellguard in the box and returns its exit code and
// output; it fails the test only when the binary could not run at all.
func runCellguard(t *testing.T, box *sdbox.Box, args ...string) cellguardRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := box.Command(ctx, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := cellguardRun{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("run %v: %v\n%s", args, err, r.stderr)
	}
	return r
}

// wantFailure checks that a run exited 1 and that stderr says each of want.
func wantFailure(t *testing.T, r cellguardRun, want ...string) {
	t.Helper()
	if r.code != 1 {
		t.Errorf("exit %d, want 1\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	t.Logf("exit %d after %s: %s", r.code, r.took.Round(time.Millisecond), strings.TrimSpace(r.stderr))
}

// killAtEnd kills, when the test ends, the process whose pid the file in
// the box names (a daemon this test started and systemd left running).
func killAtEnd(t *testing.T, box *sdbox.Box, pidfile string) {
	t.Cleanup(func() {
		_, _ = box.Output("sh", "-c", "p=$(cat "+pidfile+" 2>/dev/null) && kill -KILL $p")
	})
}

// TestJobFailures: on a real systemd, every way a start or stop job can go
// wrong ends `cellguard start/stop` with exit 1 and says what happened in
// words: the job result, the unit, where to look, or the pidfile or pid it
// waited for; and the waits are bounded by --start-timeout/--stop-timeout.
func TestJobFailures(t *testing.T) {
	box := bootBox(t, "jobfail")
	cellguard := box.InstallCellguard(t)
	// Log to a file: stderr then holds only cellguard's own error lines.
	common := []string{"--log-file", "/var/log/cellguard.log"}
	start := func(name string, args ...string) []string {
		return append(append([]string{cellguard, "start", name}, common...), args...)
	}
	stop := func(name string, args ...string) []string {
		return append(append([]string{cellguard, "stop", name}, common...), args...)
	}
	activeState := func(unit string) string {
		return strings.TrimSpace(box.Run(t, "systemctl", "show", "-p", "ActiveState", "--value", unit))
	}

	t.Run("start command fails", func(t *testing.T) {
		writeFile(t, box, "/usr/local/bin/jf-fail-start", "#!/bin/sh\necho 'jf-fail: refusing to start' >&2\nexit 1\n", 0o755)
		// A forking unit: the start job lasts as long as the start command,
		// so its exit status is the job's result.
		r := runCellguard(t, box, start("jf-fail", "--start", "/usr/local/bin/jf-fail-start",
			"--type", "forking", "--pidfile", "/run/jf-fail.pid", "--start-timeout", "10s")...)
		wantFailure(t, r, "start cellguard-jf-fail.service: job failed: the command exited non-zero",
			"journalctl -u cellguard-jf-fail.service", "cellguard unit status jf-fail")
		if st := activeState("cellguard-jf-fail.service"); st != "failed" {
			t.Errorf("unit is %s, want failed", st)
		}
		if j := box.Run(t, "journalctl", "-u", "cellguard-jf-fail.service", "--no-pager"); !strings.Contains(j, "jf-fail: refusing to start") {
			t.Errorf("the journal the error points at lacks the command's output:\n%s", j)
		}
	})

	t.Run("start job canceled by a stop", func(t *testing.T) {
		// The start command records its pid and then takes 30s: the start
		// job is still running when another process stops the unit.
		writeFile(t, box, "/usr/local/bin/jf-slow-start", "#!/bin/sh\necho $$ > /run/jf-slow.script\nexec sleep 30\n", 0o755)
		killAtEnd(t, box, "/run/jf-slow.script")
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := box.Command(ctx, start("jf-slow", "--start", "/usr/local/bin/jf-slow-start",
			"--type", "forking", "--pidfile", "/run/jf-slow.pid", "--start-timeout", "60s")...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		began := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "the start job to run", func() (bool, string) {
			st, _ := box.Output("systemctl", "show", "-p", "ActiveState", "--value", "cellguard-jf-slow.service")
			_, err := box.ReadFile("/run/jf-slow.script")
			return strings.TrimSpace(st) == "activating" && err == nil, st
		})
		box.Run(t, "systemctl", "stop", "--no-block", "cellguard-jf-slow.service")
		err := cmd.Wait()
		r := cellguardRun{stdout: out.String(), stderr: errb.String(), took: time.Since(began)}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		wantFailure(t, r, "start cellguard-jf-slow.service: job canceled: another job replaced it",
			"journalctl -u cellguard-jf-slow.service")
		if r.took > 20*time.Second {
			t.Errorf("start took %s: it waited for the start command instead of the job", r.took)
		}
	})

	t.Run("pidfile never appears", func(t *testing.T) {
		// The daemon runs but never writes the pidfile monit watches.
		r := runCellguard(t, box, start("jf-nopid", "--start", "/bin/sleep 1000",
			"--pidfile", "/run/jf-nopid.pid", "--start-timeout", "3s")...)
		t.Cleanup(func() { _, _ = box.Output("systemctl", "stop", "cellguard-jf-nopid.service") })
		wantFailure(t, r, "start cellguard-jf-nopid.service: pidfile /run/jf-nopid.pid names no running process",
			"journalctl -u cellguard-jf-nopid.service")
		if r.took < 3*time.Second || r.took > 15*time.Second {
			t.Errorf("gave up after %s, want the 3s start timeout", r.took)
		}
	})

	t.Run("stop command leaves the daemon running", func(t *testing.T) {
		// KillMode=none: only the stop command ends the daemon, and this
		// one ends nothing.
		args := []string{"--start", "/bin/sleep 1000", "--stop", "/bin/true", "--start-timeout", "10s", "--stop-timeout", "3s"}
		r := runCellguard(t, box, start("jf-stay", args...)...)
		if r.code != 0 {
			t.Fatalf("start: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		m := regexp.MustCompile(`pid (\d+)`).FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("start printed no pid: %q", r.stdout)
		}
		pid := m[1]
		writeFile(t, box, "/run/jf-stay.daemon", pid+"\n", 0o644)
		killAtEnd(t, box, "/run/jf-stay.daemon")
		r = runCellguard(t, box, stop("jf-stay", args...)...)
		wantFailure(t, r, "stop cellguard-jf-stay.service: process "+pid+" still running", "KillMode=none")
		if r.took < 3*time.Second || r.took > 15*time.Second {
			t.Errorf("gave up after %s, want the 3s stop timeout", r.took)
		}
		if _, err := box.Output("kill", "-0", pid); err != nil {
			t.Fatalf("daemon pid %s is gone, so the failure above was not about it: %v", pid, err)
		}
	})
}
