package cli

import (
	"context"
	"flag"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/app"
	"github.com/cloudfoundry/cellguard/src/internal/config"
)

// daemonFlags are the flags that describe a daemon; they override the
// daemon's entry in the config file.
type daemonFlags struct {
	start, stop, pidfile, typ string
	runtime                   bool
	startTimeout, stopTimeout time.Duration
	root, dbusAddress         string
	jsonOut                   bool
	timeout                   time.Duration
}

// withDeadline bounds ctx by --timeout, or by app.UnitDeadline's default.
func (f *daemonFlags) withDeadline(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, app.UnitDeadline(f.timeout, wait))
}

func (f *daemonFlags) register(fs *flag.FlagSet, describe bool) {
	if describe {
		fs.StringVar(&f.start, "start", "", "start command: absolute path to the daemon's ctl script and its arguments, e.g. \"/var/vcap/jobs/garden/bin/garden_ctl start\"")
		fs.StringVar(&f.stop, "stop", "", "stop command (empty: SIGTERM the main process)")
		fs.StringVar(&f.pidfile, "pidfile", "", "pidfile the daemon writes (what monit watches)")
		fs.StringVar(&f.typ, "type", "", "exec (the ctl script execs the daemon; default) or forking (it backgrounds the daemon; needs --pidfile)")
		fs.BoolVar(&f.runtime, "runtime", false, "install under /run/systemd/system (gone after reboot) instead of /etc/systemd/system")
	}
	fs.DurationVar(&f.startTimeout, "start-timeout", 0, "how long to wait for the start job and the process (default 30s)")
	fs.DurationVar(&f.stopTimeout, "stop-timeout", 0, "how long to wait for the stop job and the process to be gone (default 30s)")
	f.registerConn(fs)
}

func (f *daemonFlags) registerConn(fs *flag.FlagSet) {
	fs.StringVar(&f.root, "root", "/", "root of the managed system (tests: /proc/<pid>/root of a container)")
	fs.StringVar(&f.dbusAddress, "dbus-address", "", "D-Bus address of systemd (default: the system bus, then /run/systemd/private)")
	fs.BoolVar(&f.jsonOut, "json", false, "print the result as JSON")
	fs.DurationVar(&f.timeout, "timeout", 0, "deadline for the whole command (default 90s, or the start/stop wait + 30s if longer)")
}

// daemon merges the config's entry for name with the flags.
func (f *daemonFlags) daemon(cfg *config.Config, name string) (app.Daemon, error) {
	return app.DaemonOf(cfg, name, app.DaemonFlags{Start: f.start, Stop: f.stop, PIDFile: f.pidfile, Type: f.typ,
		Runtime: f.runtime, StartTimeout: f.startTimeout, StopTimeout: f.stopTimeout})
}

func (f *daemonFlags) manager(c *common, env *Env, source string) (*app.Units, *config.Config, func(), error) {
	logger, cfg, done, err := c.setup(env, source)
	if err != nil {
		return nil, nil, nil, err
	}
	m := app.NewUnits(logger, f.root, f.dbusAddress)
	return m, cfg, func() { m.Close(); done() }, nil
}

// session is manager plus the command's deadline, for a command that talks
// to systemd; done releases both.
func (f *daemonFlags) session(ctx context.Context, c *common, env *Env, source string) (*app.Units, *config.Config, context.Context, func(), error) {
	m, cfg, done, err := f.manager(c, env, source)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	ctx, cancel := f.withDeadline(ctx, 0)
	return m, cfg, ctx, func() { cancel(); done() }, nil
}

// oneName takes exactly one positional NAME.
func oneName(env *Env, fs *flag.FlagSet) (string, bool) {
	if fs.NArg() != 1 {
		errorf(env, "want exactly one daemon NAME, got %d arguments", fs.NArg())
		hintf(env, "run 'cellguard %s --help' for its usage", fs.Name())
		return "", false
	}
	return fs.Arg(0), true
}

// failure prints an error with a hint derived from its kind and returns the
// exit code: bad input is 2, everything else 1.
func failure(env *Env, err error) int {
	errorf(env, "%v", err)
	hint, badInput := app.UnitFailure(err)
	if hint != "" {
		hintf(env, "%s", hint)
	}
	if badInput {
		return ExitCantRun
	}
	return ExitFailed
}

func unitCommand() *Command {
	return &Command{Name: "unit", Summary: "install and inspect delegated systemd units", Sub: []*Command{
		{Name: "install", Summary: "install a delegated unit for a monit-managed daemon", Run: runUnitInstall},
		{Name: "status", Summary: "show a unit's state and delegation, read over D-Bus", Run: runUnitStatus},
		{Name: "protect-supervisor", Summary: "delegate the unit that holds monit (e.g. runit.service) in place", Run: runProtectSupervisor},
		{Name: "delegate", Summary: "delegate other releases' units (e.g. concourse.service) in place", Run: runUnitDelegate},
		{Name: "prune", Summary: "remove units and drop-ins the config no longer asks for, when nothing uses them", Run: runUnitPrune},
	}}
}

func runUnitInstall(ctx context.Context, env *Env, args []string) int {
	var c common
	var f daemonFlags
	fs := newFlagSet(env, "unit install", helpText("unit-install-usage"), &c)
	f.register(fs, true)
	if ok, code := parseInterspersed(fs, args); !ok {
		return code
	}
	name, ok := oneName(env, fs)
	if !ok {
		return ExitCantRun
	}
	m, cfg, done, err := f.manager(&c, env, "unit-install")
	if err != nil {
		errorf(env, "%v", err)
		return ExitCantRun
	}
	defer done()
	d, err := f.daemon(cfg, name)
	if err != nil {
		return failure(env, err)
	}
	if len(d.Start) == 0 {
		errorf(env, "no start command for %q: pass --start or add it to the config's daemons", name)
		return ExitCantRun
	}
	ctx, cancel := f.withDeadline(ctx, 0)
	defer cancel()
	res, err := m.Install(ctx, d)
	if err != nil {
		return failure(env, err)
	}
	if f.jsonOut {
		printJSON(env, res)
		return ExitOK
	}
	app.WriteInstalled(env.Stdout, name, res)
	return ExitOK
}

func runUnitStatus(ctx context.Context, env *Env, args []string) int {
	var c common
	var f daemonFlags
	fs := newFlagSet(env, "unit status", helpText("unit-status-usage"), &c)
	f.registerConn(fs)
	if ok, code := parseInterspersed(fs, args); !ok {
		return code
	}
	name, ok := oneName(env, fs)
	if !ok {
		return ExitCantRun
	}
	unitName, err := app.UnitNameOf(name)
	if err != nil {
		return failure(env, err)
	}
	m, _, done, err := f.manager(&c, env, "unit-status")
	if err != nil {
		errorf(env, "%v", err)
		return ExitCantRun
	}
	defer done()
	ctx, cancel := f.withDeadline(ctx, 0)
	defer cancel()
	u, err := m.Status(ctx, unitName)
	if u != nil && f.jsonOut {
		printJSON(env, u)
	} else if u != nil {
		app.WriteUnitStatus(env.Stdout, u)
	}
	if err != nil {
		return failure(env, err)
	}
	return ExitOK
}

func runProtectSupervisor(ctx context.Context, env *Env, args []string) int {
	var c common
	var f daemonFlags
	var pid int
	var process string
	fs := newFlagSet(env, "unit protect-supervisor", helpText("unit-protect-supervisor-usage"), &c)
	fs.IntVar(&pid, "pid", 0, "pid of the supervisor (default: the oldest process named --process)")
	fs.StringVar(&process, "process", "monit,monit-actual", "process names of the supervisor, comma separated (jammy stemcells run monit as monit-actual)")
	f.registerConn(fs)
	if ok, code := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		errorf(env, "unexpected arguments: %v", fs.Args())
		return ExitCantRun
	}
	m, _, done, err := f.manager(&c, env, "protect-supervisor")
	if err != nil {
		errorf(env, "%v", err)
		return ExitCantRun
	}
	defer done()
	ctx, cancel := f.withDeadline(ctx, 0)
	defer cancel()
	res, err := m.ProtectSupervisor(ctx, pid, process)
	if err != nil {
		return failure(env, err)
	}
	if f.jsonOut {
		printJSON(env, res)
		return ExitOK
	}
	app.WriteProtected(env.Stdout, res)
	return ExitOK
}
