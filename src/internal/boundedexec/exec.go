package boundedexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// DefaultTimeout bounds an Output that names none. A healthy `runc
// --version` or `systemctl --version` returns in milliseconds; a hung one
// must not hang a BOSH pre-start or drain.
const DefaultTimeout = 5 * time.Second

// ErrTimeout means a command did not exit in time and its process group
// was killed.
var ErrTimeout = errors.New("boundedexec: timed out")

// Output runs path with args, bounded by timeout (DefaultTimeout when 0)
// and by ctx, and returns stdout. On timeout the whole process group is
// killed (a wrapper script's children too) and the error wraps ErrTimeout.
// A non-zero exit returns stdout with an error that includes stderr.
func Output(ctx context.Context, timeout time.Duration, path string, args ...string) ([]byte, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	// A fixed, small environment: LANG=C keeps messages parseable, and no
	// inherited variables change what the runtime prints.
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	setProcessGroup(cmd)
	// If a grandchild keeps stdout open after the kill, stop waiting for
	// its output rather than for the grandchild.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err != nil && ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return stdout.Bytes(), fmt.Errorf("run %s %v: no exit after %s, killed its process group: %w", path, args, timeout, ErrTimeout)
		}
		return stdout.Bytes(), fmt.Errorf("run %s %v: %w", path, args, ctx.Err())
	}
	if err != nil {
		msg := bytes.TrimSpace(stderr.Bytes())
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return stdout.Bytes(), fmt.Errorf("run %s %v: %w (stderr: %q)", path, args, err, msg)
	}
	return stdout.Bytes(), nil
}

// Run starts cmd (made with exec.Command, its SysProcAttr the caller's)
// and waits for it, killing its process when ctx ends; it returns stdout
// and stderr together. Only the process itself is killed: a ctl script
// that backgrounded a daemon must not take the daemon with it. After a
// kill the error is ctx's.
func Run(ctx context.Context, cmd *exec.Cmd) (string, error) {
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return out.String(), ctx.Err()
	}
}
