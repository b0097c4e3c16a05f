package bpfiter

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// Procs reads what /proc/<pid>/stat says, for every process on this host:
// the same pids (but for a few, see below), and for each the same ppid, start time and command name
// (kernel threads' names excepted: /proc shows them in full), and the same
// state for this test's helpers, one in each state the checks care about
// (sleeping, stopped, zombie) and one in a pid namespace of its own.
func TestProcsMatchProc(t *testing.T) {
	testkit.RequireRoot(t, "a BPF iterator")
	sleeping := start(t, "sleep", "300")
	stopped := start(t, "sleep", "301")
	if err := stopped.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	zombie := start(t, "true") // never waited for until the end
	nested := start(t, "unshare", "--pid", "--fork", "sleep", "302")
	want := map[int]byte{sleeping.Process.Pid: 'S', stopped.Process.Pid: 'T', zombie.Process.Pid: 'Z', nested.Process.Pid: 'S'}
	// Let the states settle: the stop delivered, the zombie exited.
	r := procfs.New("/").NewReader()
	defer r.Close()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		settled := true
		for pid, st := range want {
			if s, err := r.Stat(pid); err != nil || s.State != st {
				settled = false
			}
		}
		if settled {
			break
		}
	}

	before, err := procfs.New("/").PIDs(nil)
	if err != nil {
		t.Fatal(err)
	}
	// Each process's stat before the iterator runs: one that starts, execs
	// or is reparented meanwhile (a busy host's churn) is not held to it.
	statBefore := map[int]procfs.Stat{}
	for _, pid := range before {
		if st, err := r.Stat(pid); err == nil {
			statBefore[pid] = st
		}
	}
	procs, err := Procs(&Kernel{})
	if err != nil {
		t.Fatalf("the task iterator on this host (kernel 5.8+ with BTF, as root): %v", err)
	}
	after, err := procfs.New("/").PIDs(nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]Proc{}
	for _, p := range procs {
		got[p.PID] = p
	}
	inAfter := map[int]bool{}
	for _, pid := range after {
		inAfter[pid] = true
	}
	// The iterator may leave a process out: on the sandbox these tests were
	// written on it never shows pid 1 (its init, process_api, whose
	// /proc/1/exe even root cannot read), though in a child pid namespace
	// it shows that namespace's pid 1. The snapshot lists /proc and reads
	// the stat of what the iterator lacks, so a few are allowed.
	var missing []int
	for _, pid := range before {
		if _, ok := got[pid]; !ok && inAfter[pid] {
			missing = append(missing, pid)
		}
	}
	t.Logf("in /proc before and after, not in the iterator: %v", missing)
	if len(missing) > 2+len(before)/100 {
		t.Errorf("%d of /proc's %d processes are not among the iterator's %d: %v", len(missing), len(before), len(procs), missing)
	}
	compared, kthreads, churned := 0, 0, 0
	for _, p := range procs {
		st, err := r.Stat(p.PID)
		if procfs.IsGone(err) {
			continue // ended since
		}
		if err != nil {
			t.Fatal(err)
		}
		if b, ok := statBefore[p.PID]; !ok || b.Comm != st.Comm || b.PPID != st.PPID {
			churned++ // started, exec'd or reparented around the iterator
			continue
		}
		compared++
		if p.KThread {
			kthreads++
			st.Comm = p.Comm
		}
		if st.PID != p.PID || st.PPID != p.PPID || st.StartTime != p.StartTime || st.Comm != p.Comm {
			t.Errorf("pid %d: iterator %+v, /proc %+v", p.PID, p.Stat, st)
		}
		if w, ok := want[p.PID]; ok && p.State != w {
			t.Errorf("pid %d: iterator state %c, want %c (/proc: %c)", p.PID, p.State, w, st.State)
		}
		delete(want, p.PID)
	}
	for pid := range want {
		t.Errorf("helper pid %d not among the iterator's processes", pid)
	}
	t.Logf("%d processes compared with /proc (%d kernel threads), %d listed before, %d changed meanwhile", compared, kthreads, len(before), churned)
	if compared < len(before)/2 {
		t.Errorf("compared %d processes, /proc listed %d", compared, len(before))
	}
}

// start runs argv and ends it, by its pid, when the test does.
func start(t *testing.T, argv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func TestStateLetter(t *testing.T) {
	for _, c := range []struct {
		state, exit uint32
		want        byte
	}{
		{0, 0, 'R'}, {1, 0, 'S'}, {2, 0, 'D'}, {4, 0, 'T'}, {8, 0, 't'},
		{0, 16, 'X'}, {0, 32, 'Z'}, {0x40, 0, 'P'}, {0x402, 0, 'I'}, {0x1000, 0, 'D'},
		{0x81, 0, 'S'}, // TASK_WAKEKILL|TASK_INTERRUPTIBLE: outside TASK_REPORT but the 1
	} {
		if got := stateLetter(c.state, c.exit); got != c.want {
			t.Errorf("stateLetter(%#x, %#x) = %c, want %c", c.state, c.exit, got, c.want)
		}
	}
}
