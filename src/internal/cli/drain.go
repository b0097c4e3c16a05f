package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/cloudfoundry/cellguard/src/internal/app"
)

// defaultLiftFile is where `cellguard drain lift` records a lift: the
// ephemeral disk, so a reboot keeps it (it expires anyway) and a recreate,
// which brings a new disk, drops it. Its directory is its own, 0700, beside
// the job's and not in it: the agent makes /var/vcap/data/cellguard 0770
// root:vcap (measured in the local cell's jammy VM), so anything running as vcap
// could swap a lift in there, and OpenTrusted rightly refuses it.
const defaultLiftFile = "/var/vcap/data/cellguard-lift/drain-lift.json"

// drainCommand is flags -> app.Drain -> the integer and the exit code. It
// runs in the process bin/drain started: bin/drain is drain's one crash
// boundary (docs/lifecycle.md, "One crash boundary").
func drainCommand() *Command {
	var root, format, promFile, liftFile string
	var budget time.Duration
	var blockOnShutdown bool
	var runtimeRoots []string
	return &Command{Name: "drain", Summary: "the job's drain: validate, judge by BOSH's arguments, print the integer; drain lift",
		Usage: helpText("drain-usage"), Help: helpText("drain"),
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&root, "root", "/", "root prefix for /proc, /sys/fs/cgroup and runtime roots (tests: a fixture tree)")
			fs.StringVar(&format, "format", "human", "report format on stderr: human or json")
			fs.StringVar(&promFile, "prometheus-textfile", "", "write the checks' and the drain's gauges to this file; default the config's validator.prometheus_textfile")
			fs.StringVar(&liftFile, "lift-file", defaultLiftFile, "the lift 'cellguard drain lift' writes")
			fs.DurationVar(&budget, "budget", 0, fmt.Sprintf("time the validation may take; default the config's drain.budget, else %v", app.DefaultDrainBudget))
			fs.BoolVar(&blockOnShutdown, "block-on-shutdown", false, "block job_shutdown too (or the config's drain.block_on_shutdown)")
			runtimeRootFlag(fs, &runtimeRoots, "")
		},
		BadFlag: func(c *call, _ []string) { fmt.Fprintln(c.Stdout, 0) }, // could not run
		Run: func(ctx context.Context, c *call) int {
			logger, cfg, closer, err := c.setup("drain")
			if err != nil {
				logger, closer = c.flagLogger("drain")
				cfg, err = nil, &app.CouldNotRun{Err: err, Hint: "fix the cellguard job's properties; this drain let the VM go"}
			} else if format != "human" && format != "json" {
				err = &app.CouldNotRun{Err: fmt.Errorf("--format %q: want human or json", format)}
			}
			defer closer()
			d := &app.Drain{Call: app.ParseCall(c.args), JobState: c.Getenv("BOSH_JOB_STATE"), NextJobState: c.Getenv("BOSH_JOB_NEXT_STATE"),
				Logger: logger, Stderr: c.Stderr, Now: c.now, Budget: app.DrainBudget(budget, cfg),
				BlockOnShutdown: blockOnShutdown || cfg != nil && cfg.Drain.BlockOnShutdown, LiftFile: liftFile, Textfile: promFile,
				Show: func(rep app.Report) { app.ShowReport(logger, rep, format, c.Stderr, c.now()) },
				// The validation, from the one plan builder, its facts read within ctx (the budget's).
				Prepare: func(ctx context.Context) (app.Runner, error) {
					plan := newPlan(cfg, app.Overrides{Root: root, RuntimeRoots: app.SplitList(runtimeRoots)})
					if cfg != nil && cfg.Drain.Heal {
						plan.Fix = false // drain heals itself, within the host's heal budget (app.Drain)
					}
					v, cr := plan.Ready(ctx, app.DrainPhase)
					if cr != nil {
						return nil, cr
					}
					return v, nil
				}}
			if cfg != nil {
				if d.Textfile == "" {
					d.Textfile = cfg.Validator.PrometheusFile
				}
				d.Heal, d.HealLedger = cfg.Drain.Heal, filepath.Join(root, app.HealLedger)
				if n := cfg.Watch.HealPerMinute; n != nil {
					d.HealPerMinute = *n
				}
			}
			return drainVerdict(c.Stdout, app.DrainVerdict(d.Run(ctx, err)))
		},
		Sub: []*Command{liftCommand(), couldNotRunCommand(), timeoutCommand("drain timeout [--config PATH]", helpText("drain-timeout"), false)},
	}
}

// drainVerdict keeps BOSH's drain contract on stdout for a decision and
// returns the exit code: nothing and 1 when it blocks, else 0 on stdout
// (exit 2 when cellguard could not run). cellguard drain and validate
// --phase drain both end here.
func drainVerdict(stdout io.Writer, v app.Verdict) int {
	// Blocked prints no integer: the agent fails the step.
	if v != app.Blocked {
		fmt.Fprintln(stdout, 0)
	}
	return exitCode(v)
}

// exitCode is a verdict's exit code.
func exitCode(v app.Verdict) int {
	switch v {
	case app.Blocked:
		return ExitFailed
	case app.NotRun:
		return ExitCantRun
	}
	return ExitOK
}
