package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

func watchCommand() *Command {
	var root, listen, textfile, systemdAddress, tlsCert, tlsKey, tlsCA string
	var runtimeRoots []string
	var heal, once bool
	var period time.Duration
	var healPerMinute int
	return &Command{Name: "watch", Summary: "live guard: re-check after every systemd event; metrics; optional healing",
		Usage: "watch [--listen ADDR] [--heal] [--period D] [flags]", Help: helpText("watch"), Args: noArgs,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&root, "root", "/", "root prefix for /proc, /sys/fs/cgroup and runtime roots (tests: a fixture tree)")
			fs.StringVar(&listen, "listen", "", "serve /metrics on this address, e.g. 127.0.0.1:9323 (default: the config's watch.listen; empty: none)")
			fs.BoolVar(&heal, "heal", false, "move escaped container processes back into their recorded cgroups (never kills)")
			fs.DurationVar(&period, "period", app.DefaultWatchPeriod, "full scan period")
			fs.IntVar(&healPerMinute, "heal-per-minute", app.DefaultHealPerMinute, "at most this many processes healed a minute")
			fs.StringVar(&textfile, "textfile", "", "write the metrics to this node_exporter textfile (*.prom), atomically")
			fs.StringVar(&tlsCert, "tls-cert", "", "serve /metrics over TLS with this certificate (PEM)")
			fs.StringVar(&tlsKey, "tls-key", "", "and this key (PEM)")
			fs.StringVar(&tlsCA, "tls-ca", "", "and require client certificates signed by this CA (PEM)")
			fs.StringVar(&systemdAddress, "systemd-address", "", "D-Bus address of systemd (default: the system bus, then systemd's private socket, when systemd is init under --root)")
			runtimeRootFlag(fs, &runtimeRoots, ", else "+strings.Join(app.DefaultRuntimeRoots(), ", "))
			fs.BoolVar(&once, "once", false, "one full scan, metrics to stdout, then exit")
		},
		Run: func(ctx context.Context, c *call) int {
			logger, cfg, closer, err := c.setup("watch")
			if err != nil {
				c.fail(err)
				c.hintf("fix the cellguard job's watch or validator properties or --config")
				return ExitCantRun
			}
			defer closer()
			// The config's watch section with the flags given on the command line over it, judged.
			set := map[string]bool{}
			c.fs.Visit(func(fl *pflag.Flag) { set[fl.Name] = true })
			wc, err := app.WatchSection(cfg.Watch, app.WatchFlags{Set: set, Listen: listen, Textfile: textfile, Heal: heal, Period: period,
				HealPerMinute: healPerMinute, TLSCert: tlsCert, TLSKey: tlsKey, TLSCA: tlsCA})
			var w *app.Watch
			if err == nil {
				plan := newPlan(cfg, app.Overrides{Root: root, RuntimeRoots: runtimeRoots})
				w, err = app.NewWatch(plan, wc, app.WatchSettings{Root: root, SystemdAddress: systemdAddress, Once: once, Logger: logger})
			}
			if err != nil {
				logger.Error("bad-config", err)
				c.fail(err)
				return ExitCantRun
			}
			b, err := w.Run(ctx)
			if err != nil {
				c.fail(err)
				return ExitCantRun
			}
			if b != nil { // --once's metrics
				c.Stdout.Write(b) //nolint:errcheck // stdout closed: nothing to tell
			}
			return ExitOK
		},
		Sub: []*Command{watchStatusCommand()},
	}
}
