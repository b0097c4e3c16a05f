package testkit

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// KernelComm gives name to a thread of this test process with
// prctl(PR_SET_NAME), as a tenant's process names itself, and returns the
// comm the kernel then shows in /proc (at most 15 bytes, any byte but NUL),
// so fixtures carry what the kernel really lets a tenant write. The
// thread's own name is restored before it returns.
func KernelComm(t testing.TB, name string) string {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	path := "/proc/self/task/" + strconv.Itoa(unix.Gettid()) + "/comm"
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := setName(name); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if rerr := setName(strings.TrimSuffix(string(old), "\n")); rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	// The kernel ends comm with a newline in /proc/PID/comm.
	return strings.TrimSuffix(string(got), "\n")
}

func setName(name string) error {
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(p)), 0, 0, 0); err != nil {
		return fmt.Errorf("prctl PR_SET_NAME %q: %w", name, err)
	}
	return nil
}
