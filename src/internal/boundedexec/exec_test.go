package boundedexec

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestRunKillsOnContextEnd(t *testing.T) {
	// Long enough for sh to print on a loaded machine: the line must be
	// there before the kill.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	out, err := Run(ctx, exec.Command("/bin/sh", "-c", "echo started; exec sleep 60"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run = %v, want the context's error", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Run returned after %v", d)
	}
	if !strings.Contains(out, "started") {
		t.Errorf("output before the kill lost: %q", out)
	}
}

func TestRunCombinesOutput(t *testing.T) {
	out, err := Run(context.Background(), exec.Command("/bin/sh", "-c", "echo out; echo err >&2; exit 3"))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(out, "out") || !strings.Contains(out, "err") {
		t.Fatalf("Run = %q, %v", out, err)
	}
}

// Output kills the whole process group: a wrapper's child that keeps
// stdout open does not hold it past the timeout.
func TestOutputTimesOutAndKillsTheGroup(t *testing.T) {
	start := time.Now()
	_, err := Output(context.Background(), 300*time.Millisecond, openSh(t), "-c", "sleep 60 & wait")
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Output = %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Output returned after %v", d)
	}
}

func TestOutputReportsStderr(t *testing.T) {
	out, err := Output(context.Background(), 0, openSh(t), "-c", "echo partial; echo broken >&2; exit 1")
	if err == nil || !strings.Contains(err.Error(), `"broken"`) || string(out) != "partial\n" {
		t.Fatalf("Output = %q, %v", out, err)
	}
}

func openSh(t *testing.T) *os.File {
	t.Helper()
	f, err := os.Open("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
