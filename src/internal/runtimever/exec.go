package runtimever

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"
)

// DefaultTimeout bounds every exec of a runtime binary. A healthy
// `runc --version` returns in milliseconds; a hung one must not hang a
// BOSH pre-start or drain.
const DefaultTimeout = 5 * time.Second

// ErrTimeout means a probed binary did not exit in time and its process
// group was killed.
var ErrTimeout = errors.New("runtimever: timed out")

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
