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
	// LeftAlone says why, without systemd, the process the pidfile names
	// was neither signalled nor waited for (it is not the daemon).
	LeftAlone string `json:"left_alone,omitempty"`
}

// Stop stops the daemon's unit and waits until its process is gone.
func (m *Manager) Stop(ctx context.Context, d Daemon) (StopResult, error) {
	res := StopResult{Unit: d.UnitName()}
	timeout := orDefault(d.StopTimeout, DefaultStopTimeout)
	jctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !m.HasSystemd() {
		res.Direct = true
		err := m.stopDirect(jctx, d, &res)
		if err == nil {
			m.Logger.Info("stopped", lager.Data{"unit": res.Unit, "pid": res.PID, "direct": true, "left_alone": res.LeftAlone})
		}
		return res, err
	}
	if d.PIDFile != "" {
		if pid, err := m.readPID(d.PIDFile); err == nil && m.alive(pid) {
			res.PID = pid
		}
	}
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

// startDirect runs the start command without systemd, through the file
// safefile.OpenTrusted checked (it runs as root). An exec-type ctl script
// stays in the foreground as the daemon, so it is detached into its own
// session; a forking one is waited for. The process its pidfile then
// names, started after the command, is recorded beside the pidfile, the
// proof `cellguard stop` needs before it signals (startRecord).
func (m *Manager) startDirect(ctx context.Context, d Daemon, timeout time.Duration) (int, error) {
	if !hostroot.IsLive(m.Root) {
		return 0, fmt.Errorf("start %s without systemd: only possible on the live root", d.Name)
	}
	m.Logger.Info("starting-directly-without-systemd", lager.Data{"daemon": d.Name, "command": d.Start,
		"reason": "systemd is not init here, so no delegated unit can hold the daemon; running its start command as monit would"})
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	since, err := bootTicks()
	if err != nil {
		return 0, fmt.Errorf("start %s directly: %w", d.Name, err)
	}
	cmd, ctl, err := m.ctlCommand(d.Start)
	if err != nil {
		return 0, fmt.Errorf("start %s directly: %w", d.Name, err)
	}
	defer ctl.Close()
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
	p, err := m.waitStarted(ctx, d, since)
	if err != nil {
		return 0, fmt.Errorf("start %s directly: %w", d.Name, err)
	}
	defer p.close()
	rec := startRecord{PID: p.pid, StartTicks: p.start}
	if rec.BootID, err = bootID(); err == nil {
		err = m.writeStartRecord(d, rec)
	}
	if err != nil {
		// the daemon runs; only a later stop's proof is missing, and it says so
		m.Logger.Error("start-record-not-written", err, lager.Data{"daemon": d.Name, "pid": p.pid})
	}
	return p.pid, nil
}

// ctlCommand opens words[0] through safefile.OpenTrusted and returns the
// command that runs that open file with the other words; the caller
// closes the file once the command has started.
func (m *Manager) ctlCommand(words []string) (*exec.Cmd, *os.File, error) {
	ctl, err := safefile.OpenTrusted(m.path(words[0]))
	if err != nil {
		return nil, nil, fmt.Errorf("not running %s: %w", words[0], err)
	}
	return boundedexec.Command(ctl, words[1:]...), ctl, nil
}

// waitStarted waits for the pidfile, read through safefile.OpenTrusted, to
// name a live process that started at or after since (when the start
// command was run): a stale pidfile naming an older process is not taken
// for the new daemon. The process comes back held by a pidfd.
func (m *Manager) waitStarted(ctx context.Context, d Daemon, since uint64) (*proc, error) {
	var wait backoff
	for {
		pid, err := m.readPIDTrusted(d.PIDFile)
		if errors.Is(err, safefile.ErrUntrusted) {
			return nil, fmt.Errorf("pidfile %s: %w", d.PIDFile, err)
		}
		if err == nil {
			if p, err := openProc(pid); err == nil && p.start >= since {
				return p, nil
			} else if err == nil {
				p.close()
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pidfile %s names no process started by the start command (%w)", d.PIDFile, ctx.Err())
		case <-time.After(wait.next()):
		}
	}
}

// stopDirect runs the stop command, or signals the daemon. Either way it
// signals or waits for the pidfile's process only once it is proven to be
// the daemon cellguard start recorded (provenDaemon), and then through a
// pidfd.
func (m *Manager) stopDirect(ctx context.Context, d Daemon, res *StopResult) error {
	if !hostroot.IsLive(m.Root) {
		return fmt.Errorf("stop %s without systemd: only possible on the live root", d.Name)
	}
	p, why, err := m.provenDaemon(d)
	var unproven *unprovenError
	if errors.As(err, &unproven) && len(d.Stop) > 0 {
		// the stop command still runs and decides; cellguard signals
		// nothing then, and only waits for a proven daemon
		why, err = "not waiting for "+unproven.what+": "+unproven.err.Error(), nil
	}
	if err != nil {
		return fmt.Errorf("stop %s directly: %w", d.Name, err)
	}
	defer p.close()
	if p != nil {
		res.PID = p.pid
	}
	res.LeftAlone = why
	m.Logger.Info("stopping-directly-without-systemd", lager.Data{"daemon": d.Name, "command": d.Stop, "pid": res.PID, "left_alone": why})
	if len(d.Stop) > 0 {
		cmd, ctl, err := m.ctlCommand(d.Stop)
		if err != nil {
			return fmt.Errorf("stop %s directly: %w", d.Name, err)
		}
		defer ctl.Close()
		if out, err := boundedexec.Run(ctx, cmd); err != nil {
			return fmt.Errorf("stop %s directly: %s: %w: %s", d.Name, strings.Join(d.Stop, " "), err, out)
		}
	} else if p != nil {
		if err := p.signal(syscall.SIGTERM); err != nil && !errors.Is(err, errGone) {
			return fmt.Errorf("stop %s directly: %w", d.Name, err)
		}
	}
	if p != nil {
		if err := p.wait(ctx); err != nil {
			return fmt.Errorf("stop %s: %w; with KillMode=none only the stop command ends the daemon: check it", res.Unit, err)
		}
	}
	if unproven == nil && d.PIDFile != "" {
		// the recorded daemon is gone: stopped, or its pid another's
		if err := m.removeStartRecord(d); err != nil {
			m.Logger.Error("start-record-not-removed", err, lager.Data{"daemon": d.Name})
		}
	}
	return nil
}

// provenDaemon returns the pidfile's process, held by a pidfd, when it is
// the one cellguard start recorded. Otherwise no process: why says what
// the pidfile named when that is known to be not the daemon (it is
// gone), and the error says why nothing proves it is (stop then signals
// nothing). A missing pidfile, or one naming no live process, is nothing
// to stop. The pidfile and the record are read through
// safefile.OpenTrusted: whoever could write them would choose what root
// signals.
func (m *Manager) provenDaemon(d Daemon) (p *proc, why string, err error) {
	if d.PIDFile == "" {
		return nil, "", nil
	}
	b, err := readTrusted(m.path(d.PIDFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", &unprovenError{"what pidfile " + d.PIDFile + " names", err}
	}
	pid, err := parsePID(d.PIDFile, b)
	if err != nil {
		return nil, "", nil // names no process: nothing to stop
	}
	if p, err = openProc(pid); errors.Is(err, errGone) {
		return nil, "", nil
	} else if err != nil {
		return nil, "", &unprovenError{"pid " + strconv.Itoa(pid), err}
	}
	boot, err := bootID()
	var rec startRecord
	if err == nil {
		rec, err = m.readStartRecord(d)
	}
	if err != nil {
		p.close()
		return nil, "", &unprovenError{"pid " + strconv.Itoa(pid), err}
	}
	switch id, reason := judgeIdentity(rec, pid, p.start, boot); id {
	case theDaemon:
		return p, "", nil
	case notTheDaemon:
		p.close()
		return nil, "left pid " + strconv.Itoa(pid) + " alone: " + reason, nil
	default:
		p.close()
		return nil, "", &unprovenError{"pid " + strconv.Itoa(pid), errors.New(reason)}
	}
}

// unprovenError says why nothing proves that what the pidfile names is
// the daemon cellguard start recorded.
type unprovenError struct {
	what string // "pid 7", or what a pidfile names
	err  error
}

func (e *unprovenError) Error() string { return "not signalling " + e.what + ": " + e.err.Error() }

func (e *unprovenError) Unwrap() error { return e.err }

func (m *Manager) readPID(pidfile string) (int, error) {
	b, err := os.ReadFile(m.path(pidfile))
	if err != nil {
		return 0, err
	}
	return parsePID(pidfile, b)
}

// readPIDTrusted reads the pidfile through safefile.OpenTrusted.
func (m *Manager) readPIDTrusted(pidfile string) (int, error) {
	b, err := readTrusted(m.path(pidfile))
	if err != nil {
		return 0, err
	}
	return parsePID(pidfile, b)
}

func parsePID(pidfile string, b []byte) (int, error) {
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
