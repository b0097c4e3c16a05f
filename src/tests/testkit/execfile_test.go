package testkit

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Go issue 22315, made deterministic: a child forked (by another test's
// exec.Command) while WriteExec has the script open for writing inherits
// that descriptor until it execs. Here the child keeps it (ExtraFiles), as
// a slow exec would, and the script is run meanwhile: it fails with
// ETXTBSY unless WriteExec lets no fork happen while the descriptor is open.
func TestWriteExecLeavesNoWriterInAForkedChild(t *testing.T) {
	script := filepath.Join(t.TempDir(), "run")
	forked := make(chan *exec.Cmd, 1)
	duringWrite = func(f *os.File) {
		go func() {
			c := exec.Command("sleep", "30")
			c.ExtraFiles = []*os.File{f}
			if err := c.Start(); err != nil {
				forked <- nil
				return
			}
			forked <- c
		}()
		// Wait for the fork to happen while f is open, or to be held off.
		time.Sleep(2 * time.Second)
	}
	t.Cleanup(func() { duringWrite = nil })
	WriteExec(t, script, "#!/bin/sh\nexit 0\n")
	if c := <-forked; c != nil {
		t.Cleanup(func() {
			_ = c.Process.Kill() // the child this test started, by its pid
			_ = c.Wait()
		})
	}
	err := exec.Command(script).Run()
	if errors.Is(err, syscall.ETXTBSY) {
		t.Fatalf("run %s while a forked child holds a write descriptor: %v", script, err)
	}
	if err != nil {
		t.Fatal(err)
	}
}
