package boundedexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
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

// Output runs the program open in bin with args, bounded by timeout
// (DefaultTimeout when 0) and by ctx, and returns stdout. bin is what
// safefile.OpenTrusted checked: the program is run through that open file
// (Command), never by its path again. On timeout the whole process group
// is killed (a wrapper script's children too) and the error wraps
// ErrTimeout. A non-zero exit returns stdout with an error that includes
// stderr.
func Output(ctx context.Context, timeout time.Duration, bin *os.File, args ...string) ([]byte, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	path := bin.Name()
	cmd := exec.CommandContext(ctx, selfFD, args...)
	throughFile(cmd, bin)
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

// selfFD names, in the child at its exec, the descriptor Command hands it
// as its first extra file.
const selfFD = "/proc/self/fd/3"

// Command returns a command that runs the program open in bin (from
// safefile.OpenTrusted) with args, for Run: the kernel execs the checked
// file itself, through the child's descriptor 3 (/proc/self/fd/3), so a
// path swapped after the check changes nothing. Descriptor 3 stays open in
// the program, read-only: a script's interpreter is handed the script as
// /proc/self/fd/3 and opens it there, after the exec, so the descriptor
// must outlive it (one closed on exec fails with ENOENT). A script thus
// sees /proc/self/fd/3 as $0; an ELF binary sees bin's name as argv[0].
// Keep bin open until the command has started.
func Command(bin *os.File, args ...string) *exec.Cmd {
	cmd := exec.Command(selfFD, args...)
	throughFile(cmd, bin)
	return cmd
}

func throughFile(cmd *exec.Cmd, bin *os.File) {
	cmd.Args[0] = bin.Name()
	cmd.ExtraFiles = []*os.File{bin}
}
