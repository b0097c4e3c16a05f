package daemonctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/boundedexec"
	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
)

// Default bounds for waiting on a daemon; monit's own start/stop timeout
// (30s by default in BOSH) should be longer than these plus the job's time.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultStopTimeout  = 30 * time.Second
	pollInterval        = 50 * time.Millisecond
	// pollFirst is the wait between the first pollFast looks; after them
	// the wait doubles up to pollInterval. A daemon usually writes its
	// pidfile (or exits) a few milliseconds after the job's end: a flat
	// 50 ms wait made `cellguard start` slower than `systemctl start`, and
	// a backoff from 2 ms still added up to 4 ms of sleep past the write
	// (docs/performance.md). A look is three syscalls.
	pollFirst = time.Millisecond
	pollFast  = 20
)

// backoff yields pollFirst pollFast times, then doubles up to pollInterval.
type backoff struct {
	n int
	d time.Duration
}

func (b *backoff) next() time.Duration {
	b.n++
	if b.n <= pollFast {
		b.d = pollFirst
	} else {
		b.d = min(2*b.d, pollInterval)
	}
	return b.d
}

// StartResult says what Start did.
type StartResult struct {
	Unit      string `json:"unit"`
	JobResult string `json:"job_result,omitempty"`
	PID       int    `json:"pid"`
	Direct    bool   `json:"direct,omitempty"` // ran the start command without systemd
}

// InstallAndStart is `cellguard start`, monit's start program: the unit
// is made current and read back as delegated (Install), then started
// (Start). Install on an unchanged unit writes nothing and does not
// reload: it costs one read of the unit's properties before the job
// (what that costs against `systemctl start`: docs/performance.md).
func (m *Manager) InstallAndStart(ctx context.Context, d Daemon) (StartResult, error) {
	if !m.HasSystemd() || len(d.Start) == 0 {
		return m.Start(ctx, d)
	}
	if _, err := m.Install(ctx, d); err != nil {
		return StartResult{Unit: d.UnitName()}, err
	}
	return m.Start(ctx, d)
}

// Start starts the daemon's unit and waits until its process runs (the
// pidfile names a live process, or systemd's MainPID lives ExecSettle).
func (m *Manager) Start(ctx context.Context, d Daemon) (StartResult, error) {
	res := StartResult{Unit: d.UnitName()}
	timeout := orDefault(d.StartTimeout, DefaultStartTimeout)
	if !m.HasSystemd() {
		res.Direct = true
		pid, err := m.startDirect(ctx, d, timeout)
		res.PID = pid
		return res, err
	}
	conn, err := m.dial(ctx)
	if err != nil {
		return res, fmt.Errorf("start %s: %w", res.Unit, err)
	}
	jctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	jr, err := conn.Start(jctx, res.Unit)
	res.JobResult = string(jr)
	if err != nil {
		return res, fmt.Errorf("%w; look at `journalctl -u %s` and `cellguard unit status %s`", err, res.Unit, d.Name)
	}
	m.Logger.Info("start-job-finished", lager.Data{"unit": res.Unit, "result": jr.Explain()})
	if err := judgeJob("start", d, jr); err != nil {
		return res, err
	}
	pid, err := m.waitRunning(jctx, conn, d)
	res.PID = pid
	if err != nil {
		return res, fmt.Errorf("start %s: %w; look at `journalctl -u %s`", res.Unit, err, res.Unit)
	}
	m.Logger.Info("started", lager.Data{"unit": res.Unit, "pid": pid})
	return res, nil
}

// judgeJob fails unless systemd's job for verb ended "done", with where to
// look.
func judgeJob(verb string, d Daemon, jr systemd.JobResult) error {
	if jr == "done" {
		return nil
	}
	return fmt.Errorf("%s %s: job %s; look at `journalctl -u %s` and `cellguard unit status %s`",
		verb, d.UnitName(), jr.Explain(), d.UnitName(), d.Name)
}

// ExecSettle is how long a daemon without a pidfile (Type=exec) must keep
// its MainPID after the start job to count as started: systemd's job is
// done once the exec succeeded, so a start program that exits at once
// (a ctl that fails) still has a live MainPID for a moment, longer on a
// loaded machine. supervisord's startsecs (default 1 s) is the same rule.
const ExecSettle = time.Second

// waitRunning waits for the pidfile (when there is one) to name a live
// process, else for the unit's MainPID to stay for ExecSettle.
func (m *Manager) waitRunning(ctx context.Context, conn systemdAPI, d Daemon) (int, error) {
	var wait backoff
	for {
		if d.PIDFile != "" {
			if pid, err := m.readPID(d.PIDFile); err == nil && m.alive(pid) {
				return pid, nil
			}
		} else if conn != nil {
			if u, err := conn.Unit(ctx, d.UnitName()); err == nil && u.MainPID != 0 && m.alive(int(u.MainPID)) {
				return m.settleExec(ctx, conn, d, int(u.MainPID))
			}
		}
		select {
		case <-ctx.Done():
			if d.PIDFile != "" {
				return 0, fmt.Errorf("pidfile %s names no running process after the start job finished (%w)", d.PIDFile, ctx.Err())
			}
			return 0, fmt.Errorf("no main process after the start job finished (%w)", ctx.Err())
		case <-time.After(wait.next()):
		}
	}
}

// settleExec returns pid once the unit still has it as a live MainPID
// ExecSettle later, and an error naming the exit when it does not.
func (m *Manager) settleExec(ctx context.Context, conn systemdAPI, d Daemon, pid int) (int, error) {
	select {
	case <-ctx.Done():
		return pid, fmt.Errorf("main process %d: no verdict within the start timeout (%w)", pid, ctx.Err())
	case <-time.After(ExecSettle):
	}
	u, err := conn.Unit(ctx, d.UnitName())
	if err != nil {
		return pid, fmt.Errorf("read %s back after the start: %w", d.UnitName(), err)
	}
	if int(u.MainPID) != pid || !m.alive(pid) {
		return pid, fmt.Errorf("main process %d exited within %s of starting (unit %s/%s, MainPID now %d)",
			pid, ExecSettle, u.ActiveState, u.SubState, u.MainPID)
	}
	return pid, nil
}

// StopResult says what Stop did.
type StopResult struct {
	Unit      string `json:"unit"`
	JobResult string `json:"job_result,omitempty"`
	PID       int    `json:"pid"` // the process waited for, 0 if none was known
	Direct    bool   `json:"direct,omitempty"`
}

// Stop stops the daemon's unit and waits until its process is gone.
func (m *Manager) Stop(ctx context.Context, d Daemon) (StopResult, error) {
	res := StopResult{Unit: d.UnitName()}
	timeout := orDefault(d.StopTimeout, DefaultStopTimeout)
	jctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if d.PIDFile != "" {
		if pid, err := m.readPID(d.PIDFile); err == nil && m.alive(pid) {
			res.PID = pid
		}
	}
	if !m.HasSystemd() {
		res.Direct = true
		if err := m.stopDirect(jctx, d, res.PID); err != nil {
			return res, err
		}
	} else {
		conn, err := m.dial(ctx)
		if err != nil {
			return res, fmt.Errorf("stop %s: %w", res.Unit, err)
		}
		if res.PID == 0 {
			if u, err := conn.Unit(ctx, res.Unit); err == nil && u.MainPID != 0 {
				res.PID = int(u.MainPID)
			}
		}
		jr, err := conn.Stop(jctx, res.Unit)
		res.JobResult = string(jr)
		if err != nil {
			return res, fmt.Errorf("%w; look at `journalctl -u %s`", err, res.Unit)
		}
		m.Logger.Info("stop-job-finished", lager.Data{"unit": res.Unit, "result": jr.Explain()})
		if err := judgeJob("stop", d, jr); err != nil {
			return res, err
		}
	}
	if res.PID != 0 {
		if err := m.waitGone(jctx, res.PID); err != nil {
			return res, fmt.Errorf("stop %s: %w; with KillMode=none only the stop command ends the daemon: check it", res.Unit, err)
		}
	}
	m.Logger.Info("stopped", lager.Data{"unit": res.Unit, "pid": res.PID, "direct": res.Direct})
	return res, nil
}

func (m *Manager) waitGone(ctx context.Context, pid int) error {
	var wait backoff
	for m.alive(pid) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("process %d still running (%w)", pid, ctx.Err())
		case <-time.After(wait.next()):
		}
	}
	return nil
}

// startDirect runs the start command without systemd. An exec-type ctl
// script stays in the foreground as the daemon, so it is detached into its
// own session; a forking one is waited for.
func (m *Manager) startDirect(ctx context.Context, d Daemon, timeout time.Duration) (int, error) {
	if !hostroot.IsLive(m.Root) {
		return 0, fmt.Errorf("start %s without systemd: only possible on the live root", d.Name)
	}
	m.Logger.Info("starting-directly-without-systemd", lager.Data{"daemon": d.Name, "command": d.Start,
		"reason": "systemd is not init here, so no delegated unit can hold the daemon; running its start command as monit would"})
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command(d.Start[0], d.Start[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if d.Type == "forking" {
		if out, err := boundedexec.Run(ctx, cmd); err != nil {
			return 0, fmt.Errorf("start %s directly: %s: %w: %s", d.Name, strings.Join(d.Start, " "), err, out)
		}
	} else {
		if err := cmd.Start(); err != nil {
			return 0, fmt.Errorf("start %s directly: %w", d.Name, err)
		}
		pid := cmd.Process.Pid
		go func() { _ = cmd.Wait() }() // reap it if it dies while we wait
		if d.PIDFile == "" {
			return pid, nil
		}
	}
	pid, err := m.waitRunning(ctx, nil, d)
	if err != nil {
		return 0, fmt.Errorf("start %s directly: %w", d.Name, err)
	}
	return pid, nil
}

// stopDirect runs the stop command, or signals the known pid.
func (m *Manager) stopDirect(ctx context.Context, d Daemon, pid int) error {
	m.Logger.Info("stopping-directly-without-systemd", lager.Data{"daemon": d.Name, "command": d.Stop, "pid": pid})
	if len(d.Stop) > 0 {
		cmd := exec.Command(d.Stop[0], d.Stop[1:]...)
		if out, err := boundedexec.Run(ctx, cmd); err != nil {
			return fmt.Errorf("stop %s directly: %s: %w: %s", d.Name, strings.Join(d.Stop, " "), err, out)
		}
		return nil
	}
	if pid == 0 {
		return nil
	}
	// Root signals whatever the pidfile names: whoever could write or
	// replace it would choose what root kills.
	// (the next change reads the pid through the file checked, and proves
	// the process is the daemon started)
	f, err := safefile.OpenTrusted(m.path(d.PIDFile))
	if err != nil {
		return fmt.Errorf("stop %s directly: not signalling pid %d: pidfile %s: %w", d.Name, pid, d.PIDFile, err)
	}
	f.Close()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s directly: signal %d: %w", d.Name, pid, err)
	}
	return nil
}

func (m *Manager) readPID(pidfile string) (int, error) {
	b, err := os.ReadFile(m.path(pidfile))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pidfile %s: %q is not a pid", pidfile, strings.TrimSpace(string(b)))
	}
	return pid, nil
}

// alive reports whether pid exists and is not a zombie, in Root's /proc.
func (m *Manager) alive(pid int) bool {
	r := procfs.New(m.rootDir()).NewReader()
	defer r.Close()
	st, err := r.Stat(pid)
	return err == nil && st.State != 'Z' && st.State != 'X'
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
