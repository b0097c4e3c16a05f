package interrupt

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The child: a test process that registers three teardowns, runs one as
// its test's end would, says it is ready and waits to be interrupted. Its first teardown blocks
// until the parent has sent a second signal.
func TestMain(m *testing.M) {
	if dir := os.Getenv("INTERRUPT_CHILD_DIR"); dir != "" {
		child(dir)
	}
	os.Exit(m.Run())
}

func child(dir string) {
	log := filepath.Join(dir, "log")
	note := func(s string) {
		f, _ := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		f.WriteString(s + "\n")
		f.Close()
	}
	work := Context()
	Add("the lab", func() {
		if work.Err() == nil {
			note("a teardown ran before the work's context was cancelled")
		}
		note("teardown started")
		os.Stdout.WriteString("tearing down\n")
		for {
			if _, err := os.Stat(filepath.Join(dir, "second-sent")); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		note("lab down")
	})
	forget, _ := Add("a VM deleted at its test's end", func() { note("VM taken down twice") })
	note("VM deleted at its test's end")
	forget()
	Add("a VM", func() { note("VM down") })
	Add("a teardown that fails its test", func() {
		note("failing teardown")
		runtime.Goexit() // what t.Fatal does
	})
	os.Stdout.WriteString("ready\n")
	select {}
}

// SIGINT runs every registered teardown, newest first, and none that
// already ran, also after one that ended its goroutine as t.Fatal does; a second SIGINT during the teardown does not cut it short; the
// process exits 130.
func TestSignalRunsTeardownsNewestFirst(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), "INTERRUPT_CHILD_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := bufio.NewScanner(out)
	expect := func(want string) {
		t.Helper()
		if !lines.Scan() || lines.Text() != want {
			t.Fatalf("child said %q (%v), want %q", lines.Text(), lines.Err(), want)
		}
	}
	expect("ready")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	expect("tearing down")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "second-sent"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-time.After(2 * time.Minute): // a liveness bound, not a timing
		cmd.Process.Kill()
		t.Fatal("the child did not exit 2 minutes after its teardown was let go")
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("child ended with %v, want exit status 130", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "log"))
	if got, want := strings.TrimSpace(string(b)), "VM deleted at its test's end\nfailing teardown\nVM down\nteardown started\nlab down"; got != want {
		t.Fatalf("teardowns ran as:\n%s\nwant:\n%s", got, want)
	}
}

// Cleanup's f runs once at the test's end, and is then no longer
// registered for a signal.
func TestCleanupRunsOnce(t *testing.T) {
	n := 0
	t.Run("a test", func(t *testing.T) {
		Cleanup(t, "counter", func() { n++ })
	})
	if n != 1 {
		t.Fatalf("ran %d times, want 1", n)
	}
	state.Lock()
	defer state.Unlock()
	for _, e := range state.entries {
		if e.name == "counter" {
			t.Fatal("a teardown that ran is still registered")
		}
	}
}
