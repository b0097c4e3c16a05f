package cli

import (
	"context"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

func startCommand() *Command {
	return &Command{Name: "start", Summary: "start a daemon's delegated unit and wait for its process (monit's start program)", Run: runStart}
}

func stopCommand() *Command {
	return &Command{Name: "stop", Summary: "stop a daemon's delegated unit and wait for its process to go (monit's stop program)", Run: runStop}
}

func runStart(ctx context.Context, env *Env, args []string) int {
	return startStop(ctx, env, args, true)
}

func runStop(ctx context.Context, env *Env, args []string) int {
	return startStop(ctx, env, args, false)
}

func startStop(ctx context.Context, env *Env, args []string, start bool) int {
	verb := map[bool]string{true: "start", false: "stop"}[start]
	var c common
	var f daemonFlags
	fs := newFlagSet(env, verb, verb+" NAME [--config F] [flags]\n\n"+
		"What monit's "+verb+" program calls. With systemd: "+verb+"s cellguard-NAME.service over D-Bus,\n"+
		"reports the job result, then waits (bounded) for the pidfile's process to "+map[bool]string{true: "run", false: "be gone"}[start]+".\n"+
		map[bool]string{true: "First the unit is made current and read back as delegated, as `unit install` does.\n"}[start]+
		"Without systemd (bosh-lite, warden containers) it runs the daemon's "+verb+" command directly.\n"+
		"The daemon comes from the config's daemons entry NAME; flags override it.\n"+
		"Exit: 0 ok, 1 the job or the wait failed, 2 bad usage.", &c)
	f.register(fs, true)
	if ok, code := parseInterspersed(fs, args); !ok {
		return code
	}
	name, ok := oneName(env, fs)
	if !ok {
		return ExitCantRun
	}
	m, cfg, done, err := f.manager(&c, env, verb)
	if err != nil {
		errorf(env, "%v", err)
		return ExitCantRun
	}
	defer done()
	d, err := f.daemon(cfg, name)
	if err != nil {
		return failure(env, err)
	}
	if !m.HasSystemd() && len(d.Start) == 0 {
		errorf(env, "systemd is not init here and no start command is known for %q", name)
		hintf(env, "pass --config with a daemons entry for %q, or --start/--stop", name)
		return ExitCantRun
	}
	wait := d.StopTimeout
	if start {
		wait = d.StartTimeout
	}
	if wait <= 0 {
		wait = 30 * time.Second
	}
	ctx, cancel := f.withDeadline(ctx, wait)
	defer cancel()
	if start {
		// The unit is (re)installed from the same description first, so a
		// start after a reboot or a config change runs what monit means.
		res, err := m.Start(ctx, d)
		if err != nil {
			return failure(env, err)
		}
		if f.jsonOut {
			printJSON(env, res)
		} else {
			app.WriteStarted(env.Stdout, name, res)
		}
		return ExitOK
	}
	res, err := m.Stop(ctx, d)
	if err != nil {
		return failure(env, err)
	}
	if f.jsonOut {
		printJSON(env, res)
	} else {
		app.WriteStopped(env.Stdout, name, res)
	}
	return ExitOK
}
