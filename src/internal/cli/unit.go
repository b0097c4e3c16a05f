package cli

import (
	"context"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/cloudfoundry/cellguard/src/internal/app"
	"github.com/cloudfoundry/cellguard/src/internal/config"
)

// unitFlags are the flags of every command that talks to systemd.
type unitFlags struct {
	root, dbusAddress string
	asJSON            bool
	timeout           time.Duration
}

func (f *unitFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.root, "root", "/", "root of the managed system (tests: /proc/<pid>/root of a container)")
	fs.StringVar(&f.dbusAddress, "dbus-address", "", "D-Bus address of systemd (default: the system bus, then /run/systemd/private)")
	fs.BoolVar(&f.asJSON, "json", false, "print the result as JSON")
	fs.DurationVar(&f.timeout, "timeout", 0, "deadline for the whole command (default 90s, or the start/stop wait + 30s if longer)")
}

// within bounds ctx by --timeout, or by app.UnitDeadline's default.
func (f *unitFlags) within(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, app.UnitDeadline(f.timeout, wait))
}

// session is the unit use cases of a command, its config, and ctx bounded
// by the command's deadline; done releases them. m is nil when the config
// or the log could not be set up: the error (and hint) is printed.
func (f *unitFlags) session(ctx context.Context, c *call, source, hint string) (m *app.Units, cfg *config.Config, _ context.Context, done func()) {
	logger, cfg, closer, err := c.setup(source)
	if err != nil {
		c.fail(err)
		if hint != "" {
			c.hintf("%s", hint)
		}
		return nil, nil, nil, nil
	}
	m = app.NewUnits(logger, f.root, f.dbusAddress)
	ctx, cancel := f.within(ctx, 0)
	return m, cfg, ctx, func() { cancel(); m.Close(); closer() }
}

// daemonFlags describe a daemon; they override its entry in the config.
type daemonFlags struct {
	unitFlags
	start, stop, pidfile, typ string
	runtime                   bool
	startTimeout, stopTimeout time.Duration
}

func (f *daemonFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.start, "start", "", "start command: absolute path to the daemon's ctl script and its arguments, e.g. \"/var/vcap/jobs/garden/bin/garden_ctl start\"")
	fs.StringVar(&f.stop, "stop", "", "stop command (empty: SIGTERM the main process)")
	fs.StringVar(&f.pidfile, "pidfile", "", "pidfile the daemon writes (what monit watches)")
	fs.StringVar(&f.typ, "type", "", "exec (the ctl script execs the daemon; default) or forking (it backgrounds the daemon; needs --pidfile)")
	fs.BoolVar(&f.runtime, "runtime", false, "install under /run/systemd/system (gone after reboot) instead of /etc/systemd/system")
	fs.DurationVar(&f.startTimeout, "start-timeout", 0, "how long to wait for the start job and the process (default 30s)")
	fs.DurationVar(&f.stopTimeout, "stop-timeout", 0, "how long to wait for the stop job and the process to be gone (default 30s)")
	f.unitFlags.register(fs)
}

// daemon merges the config's entry for name with the flags.
func (f *daemonFlags) daemon(cfg *config.Config, name string) (app.Daemon, error) {
	return app.DaemonOf(cfg, name, app.DaemonFlags{Start: f.start, Stop: f.stop, PIDFile: f.pidfile, Type: f.typ,
		Runtime: f.runtime, StartTimeout: f.startTimeout, StopTimeout: f.stopTimeout})
}

// unitFailure prints err with a hint derived from its kind and returns the
// exit code: bad input is 2, everything else 1.
func (c *call) unitFailure(err error) int {
	c.fail(err)
	hint, badInput := app.UnitFailure(err)
	if hint != "" {
		c.hintf("%s", hint)
	}
	if badInput {
		return ExitCantRun
	}
	return ExitFailed
}

// unitResult ends a unit use case: its failure, or its result shown.
func (c *call) unitResult(err error, asJSON bool, v any, human func(w io.Writer)) int {
	if err != nil {
		return c.unitFailure(err)
	}
	c.show(asJSON, v, human)
	return ExitOK
}

func unitCommand() *Command {
	return &Command{Name: "unit", Summary: "install and inspect delegated systemd units", Sub: []*Command{
		unitInstallCommand(), unitStatusCommand(), protectSupervisorCommand(), unitDelegateCommand(), unitPruneCommand(),
	}}
}

func unitInstallCommand() *Command {
	var f daemonFlags
	return &Command{Name: "install", Summary: "install a delegated unit for a monit-managed daemon",
		Usage: helpText("unit-install-usage"), Args: oneName, Interspersed: true, Flags: f.register,
		Run: func(ctx context.Context, c *call) int {
			name := c.args[0]
			m, cfg, ctx, done := f.session(ctx, c, "unit-install", "")
			if m == nil {
				return ExitCantRun
			}
			defer done()
			d, err := f.daemon(cfg, name)
			if err != nil {
				return c.unitFailure(err)
			}
			res, err := m.Install(ctx, d)
			return c.unitResult(err, f.asJSON, res, func(w io.Writer) { app.WriteInstalled(w, name, res) })
		}}
}

func unitStatusCommand() *Command {
	var f unitFlags
	return &Command{Name: "status", Summary: "show a unit's state and delegation, read over D-Bus",
		Usage: helpText("unit-status-usage"), Args: oneName, Interspersed: true, Flags: f.register,
		Run: func(ctx context.Context, c *call) int {
			unitName, err := app.UnitNameOf(c.args[0])
			if err != nil {
				return c.unitFailure(err)
			}
			m, _, ctx, done := f.session(ctx, c, "unit-status", "")
			if m == nil {
				return ExitCantRun
			}
			defer done()
			u, err := m.Status(ctx, unitName)
			if u != nil {
				c.show(f.asJSON, u, func(w io.Writer) { app.WriteUnitStatus(w, u) })
			}
			if err != nil {
				return c.unitFailure(err)
			}
			return ExitOK
		}}
}

func protectSupervisorCommand() *Command {
	var f unitFlags
	var pid int
	var process string
	return &Command{Name: "protect-supervisor", Summary: "delegate the unit that holds monit (e.g. runit.service) in place",
		Usage: helpText("unit-protect-supervisor-usage"), Args: noArgs,
		Flags: func(fs *pflag.FlagSet) {
			fs.IntVar(&pid, "pid", 0, "pid of the supervisor (default: the oldest process named --process)")
			fs.StringVar(&process, "process", "monit,monit-actual", "process names of the supervisor, comma separated (jammy stemcells run monit as monit-actual)")
			f.register(fs)
		},
		Run: func(ctx context.Context, c *call) int {
			m, _, ctx, done := f.session(ctx, c, "protect-supervisor", "")
			if m == nil {
				return ExitCantRun
			}
			defer done()
			res, err := m.ProtectSupervisor(ctx, pid, process)
			return c.unitResult(err, f.asJSON, res, func(w io.Writer) { app.WriteProtected(w, res) })
		}}
}
