package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/app"
	"github.com/cloudfoundry/cellguard/src/internal/cmdflag"
	"github.com/cloudfoundry/cellguard/src/internal/config"
)

func validateCommand() *Command {
	return &Command{Name: "validate", Summary: "check container cgroups and runtimes; block unsafe rollouts", Run: runValidate}
}

var validateHelp = helpText("validate")

type validateFlags struct {
	common
	phase, root, format, promFile string
	ignore, runtimeRoots          stringList
	fix                           bool
	// drain's: the budget and the lift that decide with the report.
	budget   time.Duration
	liftFile string
}

func runValidate(ctx context.Context, env *Env, args []string) int {
	if len(args) > 0 && args[0] == "timeout" {
		return runValidateTimeout(env, args[1:])
	}
	f := &validateFlags{}
	fs := newFlagSet(env, "validate", "validate --phase pre-start|drain [flags]", &f.common)
	fs.StringVar(&f.phase, "phase", "", "pre-start or drain (required); drain decides as the next update's drain and prints only its integer on stdout")
	fs.StringVar(&f.root, "root", "/", "root prefix for /proc, /sys/fs/cgroup and runtime roots (tests: a fixture tree)")
	fs.StringVar(&f.format, "format", "human", "report format: human or json")
	fs.StringVar(&f.promFile, "prometheus-textfile", "", "also write Prometheus gauges to this file, atomically")
	fs.Var(&f.ignore, "ignore", "check ids to report but never block on, comma separated or repeated; \"all\" ignores every check")
	fs.Var(&f.runtimeRoots, "runtime-root", "runc state root to scan (repeatable); default the config's, else "+strings.Join(defaultRuntimeRoots(), ", "))
	fs.BoolVar(&f.fix, "fix", false, "move escaped container processes back into their recorded cgroups (never kills)")
	fs.DurationVar(&f.budget, "budget", 0, fmt.Sprintf("time the validation may take; default the config's validator.budget (pre-start) or drain.budget (drain), else %v", defaultDrainBudget))
	fs.StringVar(&f.liftFile, "lift-file", defaultLiftFile, "--phase drain: the lift `cellguard drain lift` writes")
	base := fs.Usage
	fs.Usage = func() {
		base()
		fmt.Fprintf(env.Stdout, validateHelp, strings.Join(app.CheckIDs(), ", "))
	}
	if ok, code := parse(fs, args); !ok {
		if code != ExitOK && asksDrain(args) {
			// A flag cellguard cannot read, in the drain phase: could not
			// run, and drain's contract still holds, as cellguard drain's.
			fmt.Fprintln(env.Stdout, 0)
		}
		return code
	}
	phase := app.Phase(f.phase)
	if phase != app.PreStart && phase != app.DrainPhase {
		errorf(env, "--phase %q: want pre-start or drain", f.phase)
		return ExitCantRun
	}
	if phase != app.DrainPhase {
		var drainOnly []string
		fs.Visit(func(fl *flag.Flag) {
			if fl.Name == "lift-file" {
				drainOnly = append(drainOnly, "--"+fl.Name)
			}
		})
		if len(drainOnly) > 0 {
			errorf(env, "%s: only with --phase drain", strings.Join(drainOnly, ", "))
			return ExitCantRun
		}
	}
	u := &app.Validate{Phase: phase, Format: f.format, LiftFile: f.liftFile, Stdout: env.Stdout, Stderr: env.Stderr, Now: env.now}
	logger, cfg, closer, err := f.setup(env, "validate")
	if err != nil {
		logger, closer = f.flagLogger(env, "validate")
		defer closer()
		u.Logger = logger
		return validateExit(env, phase, u.CouldNotRun(&app.CouldNotRun{Err: err, Hint: "fix the cellguard job's validator properties or --config"}))
	}
	defer closer()
	u.Logger = logger
	switch {
	case fs.NArg() > 0:
		return validateExit(env, phase, u.CouldNotRun(&app.CouldNotRun{Err: fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))}))
	case f.format != "human" && f.format != "json":
		return validateExit(env, phase, u.CouldNotRun(&app.CouldNotRun{Err: fmt.Errorf("--format %q: want human or json", f.format)}))
	}
	u.Budget = app.ValidateBudget(phase, f.budget, cfg)
	u.Textfile = f.promFile
	if u.Textfile == "" {
		u.Textfile = cfg.Validator.PrometheusFile
	}
	plan := newPlan(cfg, app.Overrides{Root: f.root, RuntimeRoots: splitList(f.runtimeRoots), Ignore: splitList(f.ignore), Fix: f.fix})
	return validateExit(env, phase, u.Run(ctx, plan, f.root))
}

// validateExit is the exit code of a verdict; in the drain phase stdout
// keeps drain's contract as well (drainVerdict).
func validateExit(env *Env, phase app.Phase, v app.Verdict) int {
	if phase == app.DrainPhase {
		return drainVerdict(env, v)
	}
	return exitCode(v)
}

// asksDrain reports whether args ask for --phase drain, read without the
// flag set (which stopped at a flag it could not read).
func asksDrain(args []string) bool {
	v, _ := cmdflag.Value(args, "phase")
	return v == string(app.DrainPhase)
}

// runValidateTimeout prints the bound on validate the job's scripts use:
// the phase's budget and drain's grace, in whole seconds.
func runValidateTimeout(env *Env, args []string) int {
	var c common
	var phase string
	fs := newFlagSet(env, "validate timeout", "validate timeout [--phase pre-start|drain] [--config PATH]", &c)
	fs.StringVar(&phase, "phase", string(app.PreStart), "the phase whose budget bounds validate")
	if ok, code := parseNoArgs(env, fs, args); !ok {
		return code
	}
	if p := app.Phase(phase); p != app.PreStart && p != app.DrainPhase {
		errorf(env, "--phase %q: want pre-start or drain", phase)
		return ExitCantRun
	}
	cfg, err := loadConfig(c.configPath)
	if err != nil {
		errorf(env, "%v", err)
		return ExitCantRun
	}
	fmt.Fprintln(env.Stdout, drainTimeLimit(app.ValidateBudget(app.Phase(phase), 0, cfg)))
	return ExitOK
}

// extraChecks run besides the registry in every validation; tests add
// one that never returns.
var extraChecks []app.Check

// newPlan is the plan of every validation this process runs: the config
// with the flags over it (app.Plan, the one place a run is built).
func newPlan(cfg *config.Config, o app.Overrides) *app.Plan {
	p := app.NewPlan(cfg, o)
	p.Extra = extraChecks
	return p
}

// defaultRuntimeRoots are scanned when neither --runtime-root nor the
// config names any.
func defaultRuntimeRoots() []string { return app.DefaultRuntimeRoots() }

// splitList flattens "a,b" entries and drops blanks.
func splitList(in []string) []string { return app.SplitList(in) }
