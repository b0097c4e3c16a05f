package checks

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// Issue 38, hole 3: one unprivileged process holding ~20,000 one-page
// pipes made stuck-runc-init report one finding per pipe (19,800) and
// pre-start log 9.6 MB. Findings per holder and per check are bounded.

// pipeHolderEnv makes this test binary a helper (TestMain): it holds that
// many one-page pipes, prints "ready N" and waits for stdin to close.
const pipeHolderEnv = "CELLGUARD_TEST_PIPE_HOLDER"

// pipeHolderMain returns unless this process is the pipe-holder helper.
func pipeHolderMain() {
	v := os.Getenv(pipeHolderEnv)
	if v == "" {
		return
	}
	n, _ := strconv.Atoi(v)
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		lim.Cur = lim.Max
		_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
	}
	held := 0
	for held < n {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			break // out of descriptors: hold what we have
		}
		_, _ = unix.FcntlInt(uintptr(p[0]), unix.F_SETPIPE_SZ, os.Getpagesize())
		_ = unix.Close(p[1]) // the read end keeps the pipe
		held++
	}
	fmt.Printf("ready %d\n", held)
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// unusedUID is a uid no account names and no process runs as.
func unusedUID(t *testing.T) uint32 {
	t.Helper()
	passwd, _ := os.ReadFile("/etc/passwd")
	used := map[string]bool{}
	for _, l := range strings.Split(string(passwd), "\n") {
		if f := strings.Split(l, ":"); len(f) > 3 {
			used[f[2]] = true
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/status")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" {
				used[f[1]] = true
			}
		}
	}
	for uid := uint32(61234); uid < 65000; uid++ {
		if !used[strconv.Itoa(int(uid))] {
			return uid
		}
	}
	t.Fatal("no unused uid in 61234-64999")
	return 0
}

// A real process of an unused uid, named runc, holding 19,800 one-page
// pipes: stuck-runc-init, as root on the live host, reports it once, with
// the count, and its findings stay within the per-check cap.
func TestStuckRuncInitAggregatesAPipeHolder(t *testing.T) {
	testkit.RequireRoot(t, "a process of an unused uid holding many pipes, read as root")
	const pipes = 19800
	uid := unusedUID(t)
	dir, err := os.MkdirTemp("", "cellguard-pipes-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "runc") // comm "runc": what stuck-runc-init looks at
	copyExe(t, self, bin)
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), pipeHolderEnv+"="+strconv.Itoa(pipes))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close() // the helper exits on EOF
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill() // the pid we started
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	held, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "ready ")))
	if err != nil || held < 1000 {
		t.Fatalf("helper holds %q pipes, want at least 1000", line)
	}
	pid := strconv.Itoa(cmd.Process.Pid)

	fs := runThroughValidator(t, testDeps{Root: "/"}, "stuck-runc-init")
	var mine []validator.Finding
	for _, f := range fs {
		if f.Data["pid"] == pid {
			mine = append(mine, f)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("%d findings for the holder pid %s (holding %d pipes), want one", len(mine), pid, held)
	}
	// Its stdin and stdout are pipes too.
	if got, _ := strconv.Atoi(mine[0].Data["pipes"]); got < held || got > held+3 {
		t.Fatalf("holder's finding counts %d pipes, want the %d it made (and its stdio): %+v", got, held, mine[0])
	}
	if !strings.Contains(mine[0].Detail, mine[0].Data["pipes"]+" pipes") {
		t.Errorf("detail %q does not say how many pipes it holds", mine[0].Detail)
	}
	if len(fs) > validator.MaxProblemFindings+2 {
		t.Fatalf("%d findings, want at most the cap %d and a summary and the pass", len(fs), validator.MaxProblemFindings)
	}
}

// runThroughValidator runs the check id of all(d) as validate does
// (validator.Run, which caps what a check lists) and returns its findings.
func runThroughValidator(t *testing.T, d testDeps, id string) []validator.Finding {
	t.Helper()
	for _, c := range all(d) {
		if c.Meta().ID == id {
			rep := validator.Run(context.Background(), []validator.Check{c}, validator.Options{Phase: validator.PreStart})
			if r := rep.Results[0]; r.Error != "" {
				t.Fatalf("%s: %s", id, r.Error)
			}
			return rep.Results[0].Findings
		}
	}
	t.Fatalf("no check %q", id)
	return nil
}

// Many holders and many processes calling themselves runc init: a run
// reports at most validator.MaxProblemFindings of them and one summary that
// counts the rest.
func TestStuckRuncInitCapsFindings(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	const holders, impostors = 70, 70
	h.Batch(func() {
		for i := 0; i < holders; i++ {
			h.Add(fakehost.Proc{PID: 1000 + i, PPID: 1, Comm: "runc", Args: []string{"runc", "x"}, Start: 100,
				FDs: map[int]string{3: "pipe:[1]", 4: "pipe:[2]", 5: "pipe:[3]"}})
		}
		for i := 0; i < impostors; i++ {
			h.Add(fakehost.Proc{PID: 2000 + i, PPID: 1, Comm: "runc:[2:INIT]", Args: []string{"runc", "init"}, Start: 100})
		}
	})
	s := &StuckRuncInit{host: snapshot.Lazy(snapshot.Spec{Root: h.Root}), Now: func() time.Time { return fixtureNow },
		PipeCapacity: func(procfs.FS, int, int) (int, error) { return os.Getpagesize(), nil }}
	rep := validator.Run(context.Background(), []validator.Check{s}, validator.Options{Phase: validator.PreStart})
	problems := failures(rep.Results[0].Findings)
	if len(problems) != validator.MaxProblemFindings+1 {
		t.Fatalf("%d problem findings, want the cap %d and one summary", len(problems), validator.MaxProblemFindings)
	}
	last := problems[len(problems)-1]
	if last.Data["kind"] != "more" || last.Data["not_listed"] != strconv.Itoa(holders+impostors-validator.MaxProblemFindings) {
		t.Fatalf("summary %+v, want kind more counting %d", last, holders+impostors-validator.MaxProblemFindings)
	}
}
