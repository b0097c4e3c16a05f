package daemonctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	"golang.org/x/sys/unix"

	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// TestJudgeIdentity: only the recorded pid with the recorded start time in
// the recorded boot is the daemon; the same pid with another start time
// or another boot is a process that reused the pid (the daemon is gone);
// another pid is unproven.
func TestJudgeIdentity(t *testing.T) {
	rec := startRecord{PID: 4242, StartTicks: 1000, BootID: "b1"}
	for _, tc := range []struct {
		name  string
		pid   int
		start uint64
		boot  string
		want  identity
		why   string
	}{
		{"the recorded process", 4242, 1000, "b1", theDaemon, "same pid, start time and boot"},
		{"pid reused later", 4242, 1500, "b1", notTheDaemon, "pid 4242 started at tick 1500 after boot, the daemon cellguard start recorded at tick 1000"},
		{"pid reused earlier in the tick count", 4242, 999, "b1", notTheDaemon, "the pidfile is stale"},
		{"another boot", 4242, 1000, "b2", notTheDaemon, "from another boot"},
		{"another pid", 4343, 1000, "b1", unproven, "the pidfile names pid 4343 but cellguard start recorded pid 4242"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := judgeIdentity(rec, tc.pid, tc.start, tc.boot)
			if got != tc.want || !strings.Contains(why, tc.why) {
				t.Fatalf("judgeIdentity = %v %q, want %v with %q", got, why, tc.want, tc.why)
			}
		})
	}
}

// TestStopLeavesAStalePidfilesProcessAlone (issue 38, hole 9): without
// systemd, `cellguard stop` signals the pidfile's pid as root. Here the
// daemon cellguard started dies, its pidfile stays, and its very pid goes
// to an unrelated process (made to happen with ns_last_pid, in the pid
// namespace withoutSystemd gives this test, so no timing decides it).
// Stop must leave that process alone and say why. The unrelated process
// blocks SIGTERM, so a signal sent to it stays pending for the test to see.
func TestStopLeavesAStalePidfilesProcessAlone(t *testing.T) {
	if withoutSystemd(t) {
		return
	}
	testkit.RequireRoot(t, "reuse a pid through ns_last_pid")
	testkit.RequireFile(t, "/usr/bin/perl", "apt-get install perl-base (Debian's essential set has it)")
	if os.Getpid() != 1 {
		testkit.Unavailable(t, "needs a pid namespace of its own to set ns_last_pid in (withoutSystemd makes one as root)")
	}
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "daemon.pid")
	ctl := filepath.Join(dir, "ctl")
	testkit.WriteExec(t, ctl, "#!/bin/sh\necho $$ > "+pidfile+"\nexec sleep 300\n")
	logger := lagertest.NewTestLogger("stale")
	m := &Manager{Logger: logger, Root: "/"}
	d := Daemon{Name: "stale", Start: []string{ctl, "start"}, PIDFile: pidfile,
		StartTimeout: 10 * time.Second, StopTimeout: 500 * time.Millisecond}
	st, err := m.Start(context.Background(), d)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	daemon := st.PID
	daemonStart := statOf(t, daemon).StartTime
	// the daemon dies (a process this test started); its pidfile stays
	if err := syscall.Kill(daemon, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitReaped(t, daemon)
	victim := startWithPid(t, daemon, daemonStart)

	_, err = m.Stop(context.Background(), d)
	if termPending(t, daemon) {
		t.Fatalf("stop signalled pid %d, which the stale pidfile names but which is an unrelated process (started at tick %d, the daemon at %d); stop: %v",
			daemon, statOf(t, victim.Process.Pid).StartTime, daemonStart, err)
	}
	logs := fmt.Sprint(logger.Logs())
	if err != nil || !strings.Contains(logs, fmt.Sprintf("left pid %d alone", daemon)) || !strings.Contains(logs, "the pidfile is stale") {
		t.Fatalf("stop = %v, logs %s\nwant no error and the log saying why pid %d was left alone", err, logs, daemon)
	}
	if _, err := os.Stat(pidfile + startRecordSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the start record of a daemon that is gone stays: %v", err)
	}
}

// TestDirectStartAndStopRunOnlyTrustedFiles (issue 38, hole 7): without
// systemd, start and stop run the daemon's ctl script as root and stop
// signals what the pidfile names; a ctl script or pidfile reached through
// a symlink another user owns (in a sticky directory, where they may
// replace it) is refused, naming the link, and nothing runs or is
// signalled.
func TestDirectStartAndStopRunOnlyTrustedFiles(t *testing.T) {
	if withoutSystemd(t) {
		return
	}
	testkit.RequireFile(t, "/usr/bin/perl", "apt-get install perl-base (Debian's essential set has it)")
	dir := t.TempDir()
	ctl, mark := markingCtl(t, dir)
	link := testkit.ForeignLink(t, ctl)
	m := &Manager{Logger: lagertest.NewTestLogger("links"), Root: "/"}
	refused := func(what string, err error, path string) {
		t.Helper()
		if !errors.Is(err, safefile.ErrUntrusted) || !strings.Contains(err.Error(), "symlink "+path+" ") {
			t.Errorf("%s through a link uid %d owns = %v, want a refusal naming the link", what, testkit.ForeignUID, err)
		}
		if _, ran := os.Stat(mark); ran == nil {
			t.Errorf("%s ran the ctl script behind another user's link", what)
			_ = os.Remove(mark)
		}
	}
	_, err := m.Start(context.Background(), Daemon{Name: "links", Start: []string{link, "start"}, Type: "forking", StartTimeout: 2 * time.Second})
	refused("start", err, link)
	_, err = m.Stop(context.Background(), Daemon{Name: "links", Start: []string{ctl}, Stop: []string{link, "stop"}, StopTimeout: 2 * time.Second})
	refused("stop", err, link)

	pid := startVictim(t).Process.Pid
	pidfile := filepath.Join(dir, "daemon.pid")
	if err := os.WriteFile(pidfile, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pidLink := testkit.ForeignLink(t, pidfile)
	_, err = m.Stop(context.Background(), Daemon{Name: "links", Start: []string{ctl}, PIDFile: pidLink, StopTimeout: 500 * time.Millisecond})
	if termPending(t, pid) {
		t.Errorf("stop signalled pid %d, named by a pidfile behind another user's link: %v", pid, err)
	}
	refused("stop by a pidfile", err, pidLink)
}

func statOf(t *testing.T, pid int) procfs.Stat {
	t.Helper()
	r := procfs.New("/").NewReader()
	defer r.Close()
	st, err := r.Stat(pid)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// waitReaped waits until pid is gone from /proc (bounded).
func waitReaped(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); errors.Is(err, os.ErrNotExist) {
			return
		}
	}
	t.Fatalf("pid %d not reaped within 10 s", pid)
}

// startWithPid starts startVictim's process with pid (ns_last_pid, in this
// test's own pid namespace), once CLOCK_BOOTTIME has passed the tick after
// after, so its start time differs from a process that started at after.
// Threads the Go runtime makes take pids too: a miss is retried.
func startWithPid(t *testing.T, pid int, after uint64) *exec.Cmd {
	t.Helper()
	for {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
			t.Fatal(err)
		}
		if uint64(ts.Nano())/1e7 > after {
			break
		}
		time.Sleep(time.Millisecond)
	}
	return testkit.StartWithPid(t, pid, func() *exec.Cmd { return startVictim(t) })
}

// recordStart writes the start record cellguard start would have written
// for pid.
func recordStart(t *testing.T, m *Manager, d Daemon, pid int) {
	t.Helper()
	p, err := openProc(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	boot, err := bootID()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.writeStartRecord(d, startRecord{PID: pid, StartTicks: p.start, BootID: boot}); err != nil {
		t.Fatal(err)
	}
}

// TestStopCommandRunsWithoutAStartRecord: a daemon cellguard start did not
// record (started otherwise) is not proven, so with a stop command the
// command still runs (it decides what to stop) and stop says it did not
// wait for the pidfile's pid; without one, stop refuses to signal.
func TestStopCommandRunsWithoutAStartRecord(t *testing.T) {
	if withoutSystemd(t) {
		return
	}
	testkit.RequireFile(t, "/usr/bin/perl", "apt-get install perl-base (Debian's essential set has it)")
	dir := t.TempDir()
	ctl, mark := markingCtl(t, dir)
	pid := startVictim(t).Process.Pid
	pidfile := filepath.Join(dir, "daemon.pid")
	if err := os.WriteFile(pidfile, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &Manager{Logger: lagertest.NewTestLogger("norecord"), Root: "/"}
	d := Daemon{Name: "norecord", Start: []string{ctl}, Stop: []string{ctl, "stop"}, PIDFile: pidfile, StopTimeout: 2 * time.Second}
	res, err := m.Stop(context.Background(), d)
	if _, ran := os.Stat(mark); err != nil || ran != nil || res.PID != 0 ||
		!strings.Contains(res.LeftAlone, fmt.Sprintf("not waiting for pid %d: no start record", pid)) {
		t.Fatalf("stop with a stop command and no record = %+v, %v (stop command ran: %v)", res, err, ran == nil)
	}
	d.Stop = nil
	_, err = m.Stop(context.Background(), d)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("not signalling pid %d: no start record", pid)) || termPending(t, pid) {
		t.Fatalf("stop without a stop command and no record = %v (signalled: %v)", err, termPending(t, pid))
	}
	t.Logf("refused: %v", err)
}

// markingCtl writes a ctl script into dir that only creates mark when run.
func markingCtl(t *testing.T, dir string) (ctl, mark string) {
	t.Helper()
	ctl, mark = filepath.Join(dir, "ctl"), filepath.Join(dir, "ran")
	testkit.WriteExec(t, ctl, "#!/bin/sh\ntouch "+mark+"\n")
	return ctl, mark
}
