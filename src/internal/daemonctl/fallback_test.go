package daemonctl

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	"golang.org/x/sys/unix"

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// noSystemdEnv marks the child that runs one test in a mount and pid
// namespace of its own (withoutSystemd).
const noSystemdEnv = "CELLGUARD_DAEMONCTL_NO_SYSTEMD_CHILD"

// withoutSystemd makes the test body run where systemd is not init, as on
// bosh-lite and in warden containers, whatever this host is. As root the
// test re-runs itself as pid 1 of a new pid namespace, in a mount
// namespace whose /proc is that namespace's and whose /run/systemd is an
// empty tmpfs (systemd.Booted looks there, as sd_booted(3) does), and
// reports the child's result; it returns true in the parent, which then
// has nothing left to do. In the child, and where systemd is not init and
// we are not root, it returns false and the body runs here. Everything the
// child starts dies with it: the kernel kills a pid namespace's processes
// when its pid 1 exits.
func withoutSystemd(t *testing.T) (done bool) {
	t.Helper()
	if os.Getenv(noSystemdEnv) == t.Name() {
		testkit.PidNSChild(t)
		if _, err := os.Stat("/run/systemd"); err == nil {
			if err := unix.Mount("tmpfs", "/run/systemd", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
				t.Fatalf("hide /run/systemd: %v", err)
			}
		}
		if systemd.Booted("/") || os.Getpid() != 1 {
			t.Fatalf("child: systemd still looks booted (%v) or pid %d is not 1", systemd.Booted("/"), os.Getpid())
		}
		return false
	}
	if os.Geteuid() != 0 || os.Getenv(testkit.SkipEnv) == "1" {
		if systemd.Booted("/") {
			testkit.RequireRoot(t, "a mount and pid namespace where systemd is not init")
		}
		return false
	}
	testkit.RunInPidNS(t, noSystemdEnv, t.Name())
	return true
}

// TestFallbackWithoutSystemd: where systemd is not init (bosh-lite, warden
// containers), start and stop run the ctl commands directly, say so in the
// log, and still wait for the pidfile's process.
func TestFallbackWithoutSystemd(t *testing.T) {
	if withoutSystemd(t) {
		return
	}
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "daemon.pid")
	ctl := filepath.Join(dir, "ctl")
	script := "#!/bin/sh\ncase $1 in\n" +
		"start) echo $$ > " + pidfile + "; exec sleep 300 ;;\n" +
		"stop) kill $(cat " + pidfile + ") ;;\nesac\n"
	testkit.WriteExec(t, ctl, script)
	logger := lagertest.NewTestLogger("fallback")
	m := &Manager{Logger: logger, Root: "/"}
	if m.HasSystemd() {
		t.Fatal("the manager sees systemd: this test would not exercise the fallback")
	}
	d := Daemon{Name: "fallback", Start: []string{ctl, "start"}, Stop: []string{ctl, "stop"}, PIDFile: pidfile,
		StartTimeout: 10 * time.Second, StopTimeout: 10 * time.Second}
	ctx := context.Background()

	inst, err := m.Install(ctx, d)
	if err != nil || !inst.NoSystemd || inst.Written {
		t.Fatalf("install without systemd: %+v %v, want nothing installed", inst, err)
	}
	st, err := m.Start(ctx, d)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Kill(st.PID, syscall.SIGKILL) }) // only the pid we started
	if !st.Direct || st.PID == 0 || !m.alive(st.PID) {
		t.Fatalf("start result %+v: want a direct start with a live pid", st)
	}
	if _, err := os.Stat(pidfile + startRecordSuffix); err != nil {
		t.Fatalf("no start record after a direct start: %v", err)
	}
	sp, err := m.Stop(ctx, d)
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, err := os.Stat(pidfile + startRecordSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the start record stays after the daemon stopped: %v", err)
	}
	if !sp.Direct || sp.PID != st.PID || m.alive(st.PID) {
		t.Fatalf("stop result %+v: pid %d alive=%v", sp, st.PID, m.alive(st.PID))
	}
	if len(logger.LogMessages()) == 0 || !slices.Contains(logger.LogMessages(), "fallback.starting-directly-without-systemd") {
		t.Fatalf("the direct start was not logged: %v", logger.LogMessages())
	}
}

// TestStopSignalsOnlyWhatATrustedPidfileNames: without systemd and without
// a stop command, `cellguard stop` SIGTERMs the pidfile's pid as root, so
// whoever can write the pidfile, or replace it, chooses what root kills. A
// pidfile someone other than root could change is refused, naming the
// path at fault, and no signal reaches the process it names; a trusted one
// naming the process cellguard start recorded is signalled (the record
// itself: TestStopLeavesAStalePidfilesProcessAlone). The victim is a
// process this test starts, with SIGTERM blocked (startVictim).
func TestStopSignalsOnlyWhatATrustedPidfileNames(t *testing.T) {
	if withoutSystemd(t) {
		return
	}
	testkit.RequireFile(t, "/usr/bin/perl", "apt-get install perl-base (Debian's essential set has it)")
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, dir, pidfile string)
		fault string // "" means signalled; "dir" or "file" is the path refused
		root  bool   // chown needs root
	}{
		{name: "root's pidfile in root's 0755 dir"},
		{name: "world-writable pidfile", fault: "file", plant: func(t *testing.T, dir, pidfile string) { chmod(t, pidfile, 0o666) }},
		{name: "group-writable run directory", fault: "dir", plant: func(t *testing.T, dir, pidfile string) { chmod(t, dir, 0o775) }},
		{name: "pidfile owned by another user", fault: "file", root: true, plant: func(t *testing.T, dir, pidfile string) { chown(t, pidfile) }},
		{name: "run directory owned by another user", fault: "dir", root: true, plant: func(t *testing.T, dir, pidfile string) { chown(t, dir) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root {
				testkit.RequireRoot(t, "chown a pidfile to another user")
			}
			pid := startVictim(t).Process.Pid

			dir := filepath.Join(t.TempDir(), "run")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			pidfile := filepath.Join(dir, "daemon.pid")
			if err := os.WriteFile(pidfile, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.plant != nil {
				tc.plant(t, dir, pidfile)
			}
			m := &Manager{Logger: lagertest.NewTestLogger("stop"), Root: "/"}
			// The victim outlives any SIGTERM, so a stop that signals it
			// ends when this runs out.
			d := Daemon{Name: "victim", PIDFile: pidfile, StopTimeout: 500 * time.Millisecond}
			if tc.fault == "" {
				recordStart(t, m, d, pid)
			}
			_, err := m.Stop(context.Background(), d)
			if tc.fault == "" {
				if err == nil || !strings.Contains(err.Error(), "still running") {
					t.Fatalf("stop with a trusted pidfile: %v, want it to signal and wait", err)
				}
				if !termPending(t, pid) {
					t.Fatal("a trusted pidfile's pid got no SIGTERM")
				}
				return
			}
			fault := map[string]string{"dir": dir, "file": pidfile}[tc.fault]
			if !errors.Is(err, safefile.ErrUntrusted) || !strings.Contains(err.Error(), fault+" ") || !strings.Contains(err.Error(), "not signalling") {
				t.Fatalf("stop = %v\nwant a refusal naming %s", err, fault)
			}
			if termPending(t, pid) {
				t.Fatal("the pid an untrusted pidfile named got a SIGTERM")
			}
			t.Logf("refused: %v", err)
		})
	}
}

// startVictim starts a process that blocks SIGTERM, so a SIGTERM sent to
// it stays pending in /proc/<pid>/status (termPending) for the test to
// see, with no race against its exit. It is killed when t ends.
func startVictim(t *testing.T) *exec.Cmd {
	t.Helper()
	victim := exec.Command("/usr/bin/perl", "-MPOSIX", "-e",
		`sigprocmask(SIG_BLOCK, POSIX::SigSet->new(SIGTERM)) or die "sigprocmask: $!"; $| = 1; print "blocked\n"; sleep 300`)
	stdout, err := victim.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = victim.Process.Kill(); _ = victim.Wait() })
	if _, err := stdout.Read(make([]byte, 8)); err != nil {
		t.Fatalf("victim did not block SIGTERM: %v", err)
	}
	return victim
}

// termPending reads whether SIGTERM is pending for pid (ShdPnd: signals
// sent to the process, bit 15-1).
func termPending(t *testing.T, pid int) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "ShdPnd:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return mask&(1<<(uint(syscall.SIGTERM)-1)) != 0
		}
	}
	t.Fatalf("no ShdPnd in /proc/%d/status", pid)
	return false
}

func chmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func chown(t *testing.T, p string) {
	t.Helper()
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
}
