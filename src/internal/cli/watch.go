package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/app"
	"github.com/cloudfoundry/cellguard/src/internal/config"
)

func watchCommand() *Command {
	return &Command{Name: "watch", Summary: "live guard: re-check after every systemd event; metrics; optional healing", Run: runWatch}
}

var watchHelp = helpText("watch")

type watchFlags struct {
	common
	root, listen, textfile, systemdAddress string
	tlsCert, tlsKey, tlsCA                 string
	runtimeRoots                           stringList
	heal, once                             bool
	period                                 time.Duration
	healPerMinute                          int
}

func runWatch(ctx context.Context, env *Env, args []string) int {
	if len(args) > 0 && args[0] == "status" {
		return runWatchStatus(ctx, env, args[1:])
	}
	f := &watchFlags{}
	fs := newFlagSet(env, "watch", "watch [--listen ADDR] [--heal] [--period D] [flags]", &f.common)
	fs.StringVar(&f.root, "root", "/", "root prefix for /proc, /sys/fs/cgroup and runtime roots (tests: a fixture tree)")
	fs.StringVar(&f.listen, "listen", "", "serve /metrics on this address, e.g. 127.0.0.1:9323 (default: the config's watch.listen; empty: none)")
	fs.BoolVar(&f.heal, "heal", false, "move escaped container processes back into their recorded cgroups (never kills)")
	fs.DurationVar(&f.period, "period", app.DefaultWatchPeriod, "full scan period")
	fs.IntVar(&f.healPerMinute, "heal-per-minute", app.DefaultHealPerMinute, "at most this many processes healed a minute")
	fs.StringVar(&f.textfile, "textfile", "", "write the metrics to this node_exporter textfile (*.prom), atomically")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "serve /metrics over TLS with this certificate (PEM)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "and this key (PEM)")
	fs.StringVar(&f.tlsCA, "tls-ca", "", "and require client certificates signed by this CA (PEM)")
	fs.StringVar(&f.systemdAddress, "systemd-address", "", "D-Bus address of systemd (default: the system bus, then systemd's private socket, when systemd is init under --root)")
	fs.Var(&f.runtimeRoots, "runtime-root", "runc state root to scan (repeatable); default the config's, else "+strings.Join(defaultRuntimeRoots(), ", "))
	fs.BoolVar(&f.once, "once", false, "one full scan, metrics to stdout, then exit")
	base := fs.Usage
	fs.Usage = func() {
		base()
		fmt.Fprintf(env.Stdout, watchHelp, strings.Join(app.OnEvent, ", "))
	}
	if ok, code := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		errorf(env, "unexpected arguments: %s", strings.Join(fs.Args(), " "))
		return ExitCantRun
	}
	logger, cfg, closer, err := f.setup(env, "watch")
	if err != nil {
		errorf(env, "%v", err)
		hintf(env, "fix the cellguard job's watch or validator properties or --config")
		return ExitCantRun
	}
	defer closer()
	wc, err := f.watchSection(fs, cfg.Watch)
	var w *app.Watch
	if err == nil {
		plan := newPlan(cfg, app.Overrides{Root: f.root, RuntimeRoots: f.runtimeRoots})
		w, err = app.NewWatch(plan, wc, app.WatchSettings{Root: f.root, SystemdAddress: f.systemdAddress, Once: f.once, Logger: logger})
	}
	if err != nil {
		logger.Error("bad-config", err)
		errorf(env, "%v", err)
		return ExitCantRun
	}
	b, err := w.Run(ctx)
	if err != nil {
		errorf(env, "%v", err)
		return ExitCantRun
	}
	if b != nil {
		env.Stdout.Write(b) //nolint:errcheck // stdout closed: nothing to tell
	}
	return ExitOK
}

// watchSection is the config's watch section with the flags given on the
// command line over it, judged.
func (f *watchFlags) watchSection(fs *flag.FlagSet, wc config.Watch) (config.Watch, error) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	return app.WatchSection(wc, app.WatchFlags{Set: set, Listen: f.listen, Textfile: f.textfile, Heal: f.heal, Period: f.period,
		HealPerMinute: f.healPerMinute, TLSCert: f.tlsCert, TLSKey: f.tlsKey, TLSCA: f.tlsCA})
}
