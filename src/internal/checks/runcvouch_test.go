package checks

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
)

// copyExe copies the executable src to dst, mode 0755.
func copyExe(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// spawnChild runs shell (a copy of sh) with a child running child (a copy
// of sleep) and returns the child's pid. Both are in a process group of
// their own, killed with the test.
func spawnChild(t *testing.T, shell, child string) int {
	t.Helper()
	cmd := exec.Command(shell, "-c", `"$0" 60 & echo $!; wait`, child)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group we made
		_ = cmd.Wait()
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	// The child first: its shell reaps it and ends, so no zombie is left
	// to pid 1.
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return pid
}

// The excuse rests on kernel facts of real processes: a child whose
// parent executes the configured runc file (by device and inode) is
// vouched for within the grace; a child of a process that is named runc
// but runs another file is not, nor is a process that names itself
// runc:[2:INIT], nor the runc child once the grace is over.
func TestVoucherOnRealProcesses(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	runc := filepath.Join(dir, "host/runc")
	other := filepath.Join(dir, "other/runc")
	forged := filepath.Join(dir, "runc:[2:INIT]")
	copyExe(t, sh, runc)
	copyExe(t, sh, other) // same bytes, another file: names and content are not identity
	copyExe(t, sleep, forged)

	fs := procfs.New("/")
	boot, err := fs.BootTime()
	if err != nil {
		t.Fatal(err)
	}
	r := fs.NewReader()
	defer r.Close()
	stat := func(pid int) procfs.Stat {
		t.Helper()
		st, err := r.Stat(pid)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	vouched := func(pid int, now time.Time) bool {
		st := stat(pid)
		v := newVoucher(fs, RuncFiles{Configured: map[string]string{"runc": runc}}, boot, func() time.Time { return now }, facts.LiveRecheck{})
		return v.runcChild(st.PPID, st.StartTime)
	}

	// $! is known before the forked shell has run exec: wait for the name.
	named := func(pid int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); stat(pid).Comm != "runc:[2:INIT]"; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d's comm is %q, not runc:[2:INIT]", pid, stat(pid).Comm)
			}
		}
	}
	child := spawnChild(t, runc, forged)
	named(child)
	if !vouched(child, time.Now()) {
		t.Fatal("a young child of the configured runc is not vouched for")
	}
	byPath := newVoucher(fs, RuncFiles{Paths: []string{runc}}, boot, time.Now, facts.LiveRecheck{})
	if st := stat(child); !byPath.runcChild(st.PPID, st.StartTime) {
		t.Fatal("a child of runc at one of RuncFiles.Paths is not vouched for")
	}
	if vouched(child, time.Now().Add(runcGrace+time.Minute)) {
		t.Fatal("a child of runc is vouched for past the grace")
	}
	impostor := spawnChild(t, other, forged)
	named(impostor)
	if vouched(impostor, time.Now()) {
		t.Fatal("a child of a process named runc that runs another file is vouched for")
	}
	direct := exec.Command(forged, "60")
	if err := direct.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = direct.Process.Kill(); _ = direct.Wait() })
	if vouched(direct.Process.Pid, time.Now()) {
		t.Fatal("a process named runc:[2:INIT] whose parent is not runc is vouched for")
	}
}
