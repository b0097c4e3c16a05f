package testkit

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// RunInPidNS re-runs the calling test (t.Name(), alone) as pid 1 of a new
// pid and mount namespace, with env=value in its environment, and fails t
// unless it passed. The child finds env set and calls PidNSChild first.
// Everything the child starts dies with it: the kernel kills a pid
// namespace's processes when its pid 1 exits. Tests use it to hand out a
// pid again through ns_last_pid without touching the host's pid counter,
// or to run where systemd is not init. Needs root.
func RunInPidNS(t testing.TB, env, value string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+value)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("in a pid namespace of its own: %v\n%s", err, out)
	}
	t.Logf("ran in a pid namespace of its own:\n%s", out)
}

// PidNSChild is the child's side of RunInPidNS: mounts private, a /proc
// of this pid namespace (so ns_last_pid and /proc/<pid> are its own), and
// this process pid 1.
func PidNSChild(t testing.TB) {
	t.Helper()
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Fatalf("make mounts private: %v", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		t.Fatalf("mount this pid namespace's /proc: %v", err)
	}
	if os.Getpid() != 1 {
		t.Fatalf("child: pid %d, not 1", os.Getpid())
	}
}

// StartWithPid starts a process with start that holds pid, which must be
// free in this (the test's own) pid namespace: ns_last_pid is set to the
// pid before it. A thread the Go runtime makes in between can take the pid
// first; then the process is killed and it tries again.
func StartWithPid(t testing.TB, pid int, start func() *exec.Cmd) *exec.Cmd {
	t.Helper()
	for range 20 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0o644); err != nil {
			t.Fatalf("set ns_last_pid: %v", err)
		}
		cmd := start()
		if cmd.Process.Pid == pid {
			return cmd
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	t.Fatalf("pid %d was not handed out again", pid)
	return nil
}
