package qemuvm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const helperEnv = "CELLGUARD_QEMUVM_HELPER"

// TestHelperBoot is not a test: TestNothingLeftBehind runs the test binary
// with helperEnv set, and this boots a VM in it until a signal ends it.
func TestHelperBoot(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process of TestNothingLeftBehind")
	}
	img, err := LoadImage(os.Getenv(helperEnv + "_IMAGE"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Boot(context.Background(), img, Options{Accel: "tcg"})
	t.Fatalf("Boot returned (%v); the parent should have signalled first", err)
}

// TestNothingLeftBehind: whatever ends the test process while a VM boots
// (Ctrl-C, SIGTERM, SIGKILL), no qemu process survives it and its
// directory (socket, console, snapshot overlay) goes: at once on SIGINT and
// SIGTERM, at the next Boot's cleanup after SIGKILL.
func TestNothingLeftBehind(t *testing.T) {
	img := RequireImage(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBoot$", "-test.count=1")
			cmd.Env = append(os.Environ(), helperEnv+"=1", helperEnv+"_IMAGE="+img.Dir)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // our signal only
			out := &strings.Builder{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			qemu := waitForChild(t, cmd.Process.Pid, "qemu-system-x86")
			dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-*", dirPrefix, cmd.Process.Pid)))
			if len(dirs) != 1 {
				t.Fatalf("want one VM directory of pid %d, got %v", cmd.Process.Pid, dirs)
			}
			time.Sleep(2 * time.Second) // qemu is running the guest
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			t.Logf("helper after %v:\n%s", sig, out)
			deadline := time.Now().Add(30 * time.Second)
			for alive(qemu) && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			if alive(qemu) {
				syscall.Kill(qemu, syscall.SIGKILL)
				t.Fatalf("qemu pid %d outlived the test process ended by %v", qemu, sig)
			}
			if sig == syscall.SIGKILL {
				removeStaleDirs() // what the next Boot does first
			}
			if _, err := os.Stat(dirs[0]); !os.IsNotExist(err) {
				os.RemoveAll(dirs[0])
				t.Fatalf("%s left behind after %v (stat: %v)", dirs[0], sig, err)
			}
		})
	}
}

// waitForChild returns the pid of parent's child named comm once it runs.
func waitForChild(t *testing.T, parent int, comm string) int {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		stats, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, p := range stats {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			s := string(b)
			name := s[strings.IndexByte(s, '(')+1 : strings.LastIndexByte(s, ')')]
			f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
			if len(f) > 1 && f[1] == strconv.Itoa(parent) && strings.HasPrefix(name, comm) {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
				return pid
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no %s child of pid %d after 2 minutes", comm, parent)
	return 0
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	return len(f) > 0 && f[0] != "Z"
}
