package testkit

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

// duringWrite, when set by this package's tests, runs while the file
// WriteExec writes is open for writing: where a concurrent fork would
// copy the descriptor.
var duringWrite func(*os.File)

// WriteExec writes an executable file (mode 0755) that a test then runs.
// os.WriteFile is not enough: a child forked by a parallel test while the
// file is open inherits the writable descriptor until it execs, and
// running the file meanwhile fails with "text file busy" (Go issue
// 22315). WriteExec holds off every fork from this process while the
// descriptor is open (NoForks), so once it returns no process holds one.
func WriteExec(t testing.TB, path string, content string) {
	t.Helper()
	if err := writeExec(path, content); err != nil {
		t.Fatal(err)
	}
}

func writeExec(path, content string) error {
	return NoForks(func() error {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
		if err != nil {
			return fmt.Errorf("write executable %s: %w", path, err)
		}
		if duringWrite != nil {
			duringWrite(f)
		}
		_, err = f.WriteString(content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write executable %s: %w", path, err)
		}
		return nil
	})
}

// NoForks runs fn while no goroutine of this process forks: every fork
// (os/exec, os.StartProcess) holds syscall.ForkLock for writing, so
// holding it for reading keeps a descriptor fn opens and closes out of
// every child. fn must not start a process itself (it would wait forever).
func NoForks(fn func() error) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	return fn()
}
