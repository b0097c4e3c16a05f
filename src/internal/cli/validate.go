package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/cloudfoundry/cellguard/src/internal/app"
	"github.com/cloudfoundry/cellguard/src/internal/config"
)

func validateCommand() *Command {
	var phase, root, format, promFile, liftFile string
	var ignore, runtimeRoots []string
	var fix bool
	var budget time.Duration
	return &Command{Name: "validate", Summary: "check container cgroups and runtimes; block unsafe rollouts",
		Usage: "validate --phase pre-start|drain [flags]", Help: helpText("validate"),
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&phase, "phase", "", "pre-start or drain (required); drain decides as the next update's drain and prints only its integer on stdout")
			fs.StringVar(&root, "root", "/", "root prefix for /proc, /sys/fs/cgroup and runtime roots (tests: a fixture tree)")
			fs.StringVar(&format, "format", "human", "report format: human or json")
			fs.StringVar(&promFile, "prometheus-textfile", "", "also write Prometheus gauges to this file, atomically")
			fs.StringArrayVar(&ignore, "ignore", nil, "check `ids` to report but never block on, comma separated or repeated; \"all\" ignores every check")
			runtimeRootFlag(fs, &runtimeRoots, ", else "+strings.Join(app.DefaultRuntimeRoots(), ", "))
			fs.BoolVar(&fix, "fix", false, "move escaped container processes back into their recorded cgroups (never kills)")
			fs.DurationVar(&budget, "budget", 0, fmt.Sprintf("time the validation may take; default the config's validator.budget (pre-start) or drain.budget (drain), else %v", app.DefaultDrainBudget))
			fs.StringVar(&liftFile, "lift-file", defaultLiftFile, "--phase drain: the lift 'cellguard drain lift' writes")
		},
		// A flag cellguard cannot read, in the drain phase: could not run,
		// and drain's contract still holds, as cellguard drain's.
		BadFlag: func(c *call, args []string) {
			if asksDrain(args) {
				fmt.Fprintln(c.Stdout, 0)
			}
		},
		Run: func(ctx context.Context, c *call) int {
			p, err := app.ParsePhase(phase)
			switch {
			case err != nil:
				c.fail(err)
				return ExitCantRun
			case p != app.DrainPhase && c.fs.Changed("lift-file"):
				c.errorf("--lift-file: only with --phase drain")
				return ExitCantRun
			}
			u := &app.Validate{Phase: p, Format: format, LiftFile: liftFile, Stdout: c.Stdout, Stderr: c.Stderr, Now: c.now}
			logger, cfg, closer, err := c.setup("validate")
			if err != nil {
				logger, closer = c.flagLogger("validate")
				defer closer()
				u.Logger = logger
				return validateExit(c, p, u.CouldNotRun(&app.CouldNotRun{Err: err, Hint: "fix the cellguard job's validator properties or --config"}))
			}
			defer closer()
			u.Logger = logger
			switch {
			case len(c.args) > 0:
				return validateExit(c, p, u.CouldNotRun(&app.CouldNotRun{Err: fmt.Errorf("unexpected arguments: %s", strings.Join(c.args, " "))}))
			case format != "human" && format != "json":
				return validateExit(c, p, u.CouldNotRun(&app.CouldNotRun{Err: fmt.Errorf("--format %q: want human or json", format)}))
			}
			u.Budget, u.Textfile = app.ValidateBudget(p, budget, cfg), promFile
			if u.Textfile == "" {
				u.Textfile = cfg.Validator.PrometheusFile
			}
			plan := newPlan(cfg, app.Overrides{Root: root, RuntimeRoots: app.SplitList(runtimeRoots), Ignore: app.SplitList(ignore), Fix: fix})
			return validateExit(c, p, u.Run(ctx, plan, root))
		},
		Sub: []*Command{timeoutCommand("validate timeout [--phase pre-start|drain] [--config PATH]", "", true)},
	}
}

// runtimeRootFlag is --runtime-root, which validate, drain and watch take.
func runtimeRootFlag(fs *pflag.FlagSet, roots *[]string, defaults string) {
	fs.StringArrayVar(roots, "runtime-root", nil, "runc state root `DIR` to scan (repeatable); default the config's"+defaults)
}

// validateExit is the exit code of a verdict; in the drain phase stdout
// keeps drain's contract as well (drainVerdict).
func validateExit(c *call, phase app.Phase, v app.Verdict) int {
	if phase == app.DrainPhase {
		return drainVerdict(c.Stdout, v)
	}
	return exitCode(v)
}

// asksDrain reports whether args ask for --phase drain, read apart from
// the flag set, which stopped at a flag it could not read.
func asksDrain(args []string) bool {
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	phase := fs.String("phase", "", "")
	_ = fs.Parse(args)
	return *phase == string(app.DrainPhase)
}

// timeoutCommand prints the bound the job's scripts put on validate (the
// phase's budget and drain's grace, in whole seconds): validate timeout
// for --phase, drain timeout for drain.
func timeoutCommand(synopsis, help string, phaseFlag bool) *Command {
	phase := string(app.DrainPhase)
	return &Command{Name: "timeout", Usage: synopsis, Help: help, Args: noArgs,
		Flags: func(fs *pflag.FlagSet) {
			if phaseFlag {
				fs.StringVar(&phase, "phase", string(app.PreStart), "the phase whose budget bounds validate")
			}
		},
		Run: func(_ context.Context, c *call) int {
			p, err := app.ParsePhase(phase)
			var cfg *config.Config
			if err == nil {
				cfg, err = app.LoadConfig(c.configPath)
			}
			if err != nil {
				c.fail(err)
				return ExitCantRun
			}
			fmt.Fprintln(c.Stdout, app.TimeLimit(p, cfg))
			return ExitOK
		}}
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
