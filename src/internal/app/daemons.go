package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/config"
	"github.com/cloudfoundry/cellguard/src/internal/daemonctl"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
)

// Daemon is one monit-managed daemon cellguard runs in a delegated unit.
type Daemon = daemonctl.Daemon

// DaemonFlags are the command line's say over a daemon's config entry.
type DaemonFlags struct {
	Start, Stop, PIDFile, Type string
	Runtime                    bool
	StartTimeout, StopTimeout  time.Duration
}

// DaemonOf merges the config's entry for name with the flags.
func DaemonOf(cfg *config.Config, name string, f DaemonFlags) (Daemon, error) {
	d := Daemon{Name: name}
	if c, ok := cfg.Daemon(name); ok {
		d.PIDFile, d.Type, d.Runtime = c.PIDFile, c.Type, c.Runtime
		d.StartTimeout, d.StopTimeout = c.StartTimeout.Duration, c.StopTimeout.Duration
		var err error
		if d.Start, err = splitOptional(c.Start); err != nil {
			return d, fmt.Errorf("config daemon %q start: %w", name, err)
		}
		if d.Stop, err = splitOptional(c.Stop); err != nil {
			return d, fmt.Errorf("config daemon %q stop: %w", name, err)
		}
	}
	var err error
	if f.Start != "" {
		if d.Start, err = unitfile.SplitCommand(f.Start); err != nil {
			return d, fmt.Errorf("--start: %w", err)
		}
	}
	if f.Stop != "" {
		if d.Stop, err = unitfile.SplitCommand(f.Stop); err != nil {
			return d, fmt.Errorf("--stop: %w", err)
		}
	}
	if f.PIDFile != "" {
		d.PIDFile = f.PIDFile
	}
	if f.Type != "" {
		d.Type = f.Type
	}
	d.Runtime = d.Runtime || f.Runtime
	if f.StartTimeout > 0 {
		d.StartTimeout = f.StartTimeout
	}
	if f.StopTimeout > 0 {
		d.StopTimeout = f.StopTimeout
	}
	return d, nil
}

func splitOptional(cmd string) ([]string, error) {
	if strings.TrimSpace(cmd) == "" {
		return nil, nil
	}
	return unitfile.SplitCommand(cmd)
}

// UnitNameOf is the unit a name means: a full unit name (runit.service)
// as it is, else a daemon's cellguard-NAME.service.
func UnitNameOf(name string) (string, error) {
	if unitfile.ValidateUnitName(name) == nil {
		return name, nil
	}
	if err := unitfile.ValidateName(name); err != nil {
		return "", err
	}
	return unitfile.UnitName(name), nil
}

// Units are the unit, start and stop use cases: cellguard's delegated
// units and the drop-ins it writes, over systemd's D-Bus (or, without
// systemd, the daemons' own commands).
type Units struct{ m *daemonctl.Manager }

// NewUnits reaches systemd under root at dbusAddress ("" the defaults)
// lazily; Close releases the connection.
func NewUnits(logger lager.Logger, root, dbusAddress string) *Units {
	return &Units{m: &daemonctl.Manager{Logger: logger, Root: root, DBus: systemd.Options{Address: dbusAddress}}}
}

// Close releases the connection to systemd.
func (u *Units) Close() { u.m.Close() }

// HasSystemd says whether systemd is init under the root.
func (u *Units) HasSystemd() bool { return u.m.HasSystemd() }

// Install writes d's unit and reloads systemd when it changed.
func (u *Units) Install(ctx context.Context, d Daemon) (daemonctl.InstallResult, error) {
	if len(d.Start) == 0 {
		return daemonctl.InstallResult{}, &CouldNotRun{Err: fmt.Errorf("no start command for %q: pass --start or add it to the config's daemons", d.Name)}
	}
	return u.m.Install(ctx, d)
}

// Status reads a unit's state and delegation.
func (u *Units) Status(ctx context.Context, unitName string) (*systemd.Unit, error) {
	return u.m.Status(ctx, unitName)
}

// ProtectSupervisor delegates the unit holding monit in place.
func (u *Units) ProtectSupervisor(ctx context.Context, pid int, processName string) (daemonctl.ProtectResult, error) {
	return u.m.ProtectSupervisor(ctx, pid, processName)
}

// Delegate delegates another release's unit in place.
func (u *Units) Delegate(ctx context.Context, name string) (daemonctl.DelegateResult, error) {
	return u.m.DelegateUnit(ctx, name)
}

// Prune removes the units and drop-ins cfg no longer asks for, when
// nothing uses them.
func (u *Units) Prune(ctx context.Context, cfg *config.Config, now time.Time) (daemonctl.PruneResult, error) {
	keep := make([]string, len(cfg.Daemons))
	for i, d := range cfg.Daemons {
		keep[i] = d.Name
	}
	return u.m.Prune(ctx, daemonctl.PruneOptions{Keep: keep, KeepSupervisor: cfg.Supervisor.Protect, KeepDelegated: cfg.DelegateUnits, Now: now})
}

// Start installs d's unit from the same description (so a start after a
// reboot or a config change runs what monit means), starts it and waits
// for its process.
func (u *Units) Start(ctx context.Context, d Daemon) (daemonctl.StartResult, error) {
	if err := u.canRun(d); err != nil {
		return daemonctl.StartResult{}, err
	}
	return u.m.InstallAndStart(ctx, d)
}

// Stop stops d's unit and waits for its process to go.
func (u *Units) Stop(ctx context.Context, d Daemon) (daemonctl.StopResult, error) {
	if err := u.canRun(d); err != nil {
		return daemonctl.StopResult{}, err
	}
	return u.m.Stop(ctx, d)
}

// canRun refuses a start or stop without systemd of a daemon whose
// commands nobody gave.
func (u *Units) canRun(d Daemon) error {
	if u.HasSystemd() || len(d.Start) > 0 {
		return nil
	}
	return &CouldNotRun{Err: fmt.Errorf("systemd is not init here and no start command is known for %q", d.Name),
		Hint: fmt.Sprintf("pass --config with a daemons entry for %q, or --start/--stop", d.Name)}
}

// Wait is how long a start (or stop) of d waits for its process: its
// start_timeout (stop_timeout), else 30s.
func Wait(d Daemon, start bool) time.Duration {
	wait := d.StopTimeout
	if start {
		wait = d.StartTimeout
	}
	if wait <= 0 {
		wait = 30 * time.Second
	}
	return wait
}

// UnitFailure says what to do about a unit use case's err: bad input
// (nothing was written; a *CouldNotRun's own hint), or a hint about
// systemd ("" for none).
func UnitFailure(err error) (hint string, badInput bool) {
	var cr *CouldNotRun
	switch {
	case errors.As(err, &cr):
		return cr.Hint, true
	case errors.Is(err, unitfile.ErrBadName), errors.Is(err, unitfile.ErrBadCommand), errors.Is(err, unitfile.ErrBadPath):
		return "nothing was written; fix the input and run again", true
	case errors.Is(err, daemonctl.ErrRefused):
		return "the file stays as cellguard wrote it; do what the error says, then run cellguard again", false
	case errors.Is(err, systemd.ErrNoSystemd):
		return "systemd is not init on this system; start and stop fall back to running the commands directly", false
	case strings.Contains(err.Error(), "connect to systemd"):
		return "is systemd PID 1 and is its D-Bus socket (/run/dbus/system_bus_socket or /run/systemd/private) reachable?", false
	}
	return "", false
}

// WriteUnitStatus writes a unit's state for people, a line a property.
func WriteUnitStatus(w io.Writer, u *systemd.Unit) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, kv := range [][2]string{
		{"Unit", u.Name}, {"LoadState", u.LoadState}, {"ActiveState", u.ActiveState}, {"SubState", u.SubState},
		{"MainPID", fmt.Sprint(u.MainPID)}, {"ControlGroup", u.ControlGroup},
		{"Delegate", fmt.Sprint(u.Delegate)}, {"DelegateControllers", strings.Join(u.DelegateControllers, " ")},
		{"KillMode", u.KillMode}, {"FragmentPath", u.FragmentPath}, {"DropInPaths", strings.Join(u.DropInPaths, " ")},
	} {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], kv[1])
	}
	tw.Flush()
}

// WriteItems writes one line per removed or kept item and its reason
// below it (unit prune, uninstall).
func WriteItems(w io.Writer, items []daemonctl.PruneItem) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, it := range items {
		action := it.Action
		if action == daemonctl.Kept {
			action = "KEPT"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", action, it.Kind, it.Path)
		fmt.Fprintf(tw, "\t\t  %s\n", it.Why)
	}
	_ = tw.Flush()
}

// WriteInstalled writes what unit install did for name.
func WriteInstalled(w io.Writer, name string, res daemonctl.InstallResult) {
	switch {
	case res.NoSystemd:
		fmt.Fprintf(w, "systemd is not init here: nothing to install for %s; `cellguard start %s` runs its start command directly\n", name, name)
	case res.Written:
		fmt.Fprintf(w, "installed %s (Delegate=%s, KillMode=%s); systemd reloaded\n", res.Path, res.Delegate, res.KillMode)
	case res.Reloaded:
		fmt.Fprintf(w, "%s unchanged; systemd reloaded because it had not read it yet\n", res.Path)
	default:
		fmt.Fprintf(w, "%s unchanged; no reload\n", res.Path)
	}
}

// WriteProtected writes what unit protect-supervisor did.
func WriteProtected(w io.Writer, res daemonctl.ProtectResult) {
	if res.NoSystemd {
		fmt.Fprintf(w, "systemd is not init here: the supervisor (pid %d) needs no protection\n", res.PID)
		return
	}
	fmt.Fprintf(w, "the supervisor (pid %d) runs in %s: %s %s; DelegateControllers=%s\n", res.PID, res.Unit,
		res.DropIn, map[bool]string{true: "written and reloaded", false: "unchanged"}[res.Written],
		strings.Join(res.DelegateControllers, " "))
}

// WriteDelegated writes what unit delegate did for the unit name.
func WriteDelegated(w io.Writer, name string, res daemonctl.DelegateResult) {
	switch {
	case res.NoSystemd:
		fmt.Fprintf(w, "systemd is not init here: %s needs no delegation\n", name)
	case !res.Loaded:
		fmt.Fprintf(w, "%s: %s %s; systemd does not know the unit yet, the drop-in applies when it loads\n",
			name, res.DropIn, map[bool]string{true: "written", false: "unchanged"}[res.Written])
	default:
		fmt.Fprintf(w, "%s: %s %s; DelegateControllers=%s\n", name, res.DropIn,
			map[bool]string{true: "written and reloaded", false: "unchanged"}[res.Written], strings.Join(res.DelegateControllers, " "))
	}
}

// WriteStarted writes how the daemon name started.
func WriteStarted(w io.Writer, name string, res daemonctl.StartResult) {
	if res.Direct {
		fmt.Fprintf(w, "started %s directly (no systemd), pid %d\n", name, res.PID)
		return
	}
	fmt.Fprintf(w, "started %s: job %s, pid %d\n", res.Unit, res.JobResult, res.PID)
}

// WriteStopped writes how the daemon name stopped.
func WriteStopped(w io.Writer, name string, res daemonctl.StopResult) {
	switch {
	case res.Direct && res.LeftAlone != "":
		fmt.Fprintf(w, "stopped %s directly (no systemd); %s\n", name, res.LeftAlone)
	case res.Direct:
		fmt.Fprintf(w, "stopped %s directly (no systemd)\n", name)
	default:
		fmt.Fprintf(w, "stopped %s: job %s\n", res.Unit, res.JobResult)
	}
}

// defaultUnitDeadline bounds a whole unit command: after connecting, a
// D-Bus call on systemd's private socket has no timeout of its own, and
// monit's start program must not hang forever.
const defaultUnitDeadline = 90 * time.Second

// UnitDeadline is how long a unit command may take: timeout (--timeout)
// when set, else the default, or the start/stop wait plus room for
// connecting and installing when that is longer.
func UnitDeadline(timeout, wait time.Duration) time.Duration {
	if timeout > 0 {
		return timeout
	}
	if wait > 0 && wait+30*time.Second > defaultUnitDeadline {
		return wait + 30*time.Second
	}
	return defaultUnitDeadline
}
