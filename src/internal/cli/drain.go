package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/app"
	"github.com/cloudfoundry/cellguard/src/internal/config"
)

func drainCommand() *Command {
	return &Command{Name: "drain", Summary: "the job's drain: validate, judge by BOSH's arguments, print the integer; drain lift", Run: runDrain}
}

// defaultDrainBudget bounds a drain's validation when neither --budget nor
// the config's drain.budget says.
const defaultDrainBudget = app.DefaultDrainBudget

// defaultLiftFile is where `cellguard drain lift` records a lift: the
// ephemeral disk, so a reboot keeps it (it expires anyway) and a recreate,
// which brings a new disk, drops it. Its directory is its own, 0700, beside
// the job's and not in it: the agent makes /var/vcap/data/cellguard 0770
// root:vcap (measured in the local cell's jammy VM), so anything running as vcap
// could swap a lift in there, and OpenTrusted rightly refuses it.
const defaultLiftFile = "/var/vcap/data/cellguard-lift/drain-lift.json"

var drainHelp = helpText("drain")

type drainFlags struct {
	common
	root, format, promFile, liftFile string
	budget                           time.Duration
	blockOnShutdown                  bool
	runtimeRoots                     stringList
}

// runDrain is flags -> app.Drain -> the integer and the exit code. It
// runs in the process bin/drain started: bin/drain is drain's one crash
// boundary (docs/lifecycle.md, "One crash boundary").
func runDrain(ctx context.Context, env *Env, args []string) int {
	if len(args) > 0 && args[0] == "lift" {
		return runDrainLift(ctx, env, args[1:])
	}
	if len(args) > 0 && args[0] == "could-not-run" {
		return runDrainCouldNotRun(ctx, env, args[1:])
	}
	if len(args) > 0 && args[0] == "timeout" {
		return runDrainTimeout(ctx, env, args[1:])
	}
	f := &drainFlags{}
	fs := newFlagSet(env, "drain", "drain [flags] [--] JOB_CHANGE HASH_CHANGE [UPDATED_PACKAGES...]\n       cellguard drain lift --reason TEXT [--for DURATION] [--by NAME] | --show | --cancel\n       cellguard drain could-not-run --prometheus-textfile PATH [--why TEXT] [--] JOB_CHANGE ...\n       cellguard drain timeout [--config PATH]", &f.common)
	fs.StringVar(&f.root, "root", "/", "root prefix for /proc, /sys/fs/cgroup and runtime roots (tests: a fixture tree)")
	fs.StringVar(&f.format, "format", "human", "report format on stderr: human or json")
	fs.StringVar(&f.promFile, "prometheus-textfile", "", "write the checks' and the drain's gauges to this file; default the config's validator.prometheus_textfile")
	fs.StringVar(&f.liftFile, "lift-file", defaultLiftFile, "the lift `cellguard drain lift` writes")
	fs.DurationVar(&f.budget, "budget", 0, fmt.Sprintf("time the validation may take; default the config's drain.budget, else %v", defaultDrainBudget))
	fs.BoolVar(&f.blockOnShutdown, "block-on-shutdown", false, "block job_shutdown too (or the config's drain.block_on_shutdown)")
	fs.Var(&f.runtimeRoots, "runtime-root", "runc state root to scan (repeatable); default the config's")
	withHelp(env, fs, drainHelp)
	if ok, code := parse(fs, args); !ok {
		if code != ExitOK {
			fmt.Fprintln(env.Stdout, 0) // a flag cellguard cannot read: could not run
		}
		return code
	}
	logger, cfg, closer, err := f.setup(env, "drain")
	if err != nil {
		logger, closer = f.flagLogger(env, "drain")
		cfg, err = nil, &app.CouldNotRun{Err: err, Hint: "fix the cellguard job's properties; this drain let the VM go"}
	} else if f.format != "human" && f.format != "json" {
		err = &app.CouldNotRun{Err: fmt.Errorf("--format %q: want human or json", f.format)}
	}
	defer closer()
	d := &app.Drain{Call: app.ParseCall(fs.Args()), JobState: env.Getenv("BOSH_JOB_STATE"), NextJobState: env.Getenv("BOSH_JOB_NEXT_STATE"),
		Logger: logger, Stderr: env.Stderr, Now: env.now, Budget: app.DrainBudget(f.budget, cfg),
		BlockOnShutdown: f.blockOnShutdown || cfg != nil && cfg.Drain.BlockOnShutdown, LiftFile: f.liftFile,
		Textfile: f.promFile, Prepare: func(ctx context.Context) (app.Runner, error) { return drainValidation(ctx, cfg, f) },
		Show: func(rep app.Report) { app.ShowReport(logger, rep, f.format, env.Stderr, env.now()) }}
	if cfg != nil {
		if d.Textfile == "" {
			d.Textfile = cfg.Validator.PrometheusFile
		}
		d.Heal = cfg.Drain.Heal
		if n := cfg.Watch.HealPerMinute; n != nil {
			d.HealPerMinute = *n
		}
	}
	return drainVerdict(env, app.DrainVerdict(d.Run(ctx, err)))
}

// drainValidation is the validation a drain runs, from the one plan
// builder, its facts read within ctx (the budget's).
func drainValidation(ctx context.Context, cfg *config.Config, f *drainFlags) (app.Runner, error) {
	plan := newPlan(cfg, app.Overrides{Root: f.root, RuntimeRoots: splitList(f.runtimeRoots)})
	if cfg != nil && cfg.Drain.Heal {
		plan.Fix = false // drain heals itself, within the heal budget (app.Drain)
	}
	v, cr := plan.Ready(ctx, app.DrainPhase)
	if cr != nil {
		return nil, cr
	}
	return v, nil
}

// drainVerdict keeps BOSH's drain contract on stdout for a decision and
// returns the exit code: nothing and 1 when it blocks, else 0 on stdout
// (exit 2 when cellguard could not run). cellguard drain and validate
// --phase drain both end here.
func drainVerdict(env *Env, v app.Verdict) int {
	// Blocked prints no integer: the agent fails the step.
	if v != app.Blocked {
		fmt.Fprintln(env.Stdout, 0)
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
