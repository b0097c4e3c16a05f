package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/app"
	"github.com/cloudfoundry/cellguard/src/internal/config"
	"github.com/cloudfoundry/cellguard/src/internal/drain"
	"github.com/cloudfoundry/cellguard/src/internal/metrics"
	"github.com/cloudfoundry/cellguard/src/internal/report"
	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

func validateCommand() *Command {
	return &Command{Name: "validate", Summary: "check container cgroups and runtimes; block unsafe rollouts", Run: runValidate}
}

const validateHelp = `
Runs every registered check against the host under --root and prints a
report: a table of checks, then for each one that did not pass its evidence
and the fix. Checks: %s.

Phases. A check is blocking or a warning per phase (see each check's
severity in --format json); the config's validator.blocking.<phase> list, when
present, names exactly the checks that block in that phase. --ignore (and
validator.ignore) downgrades a check: still run and reported, never blocking.

--phase drain says what the next update's drain would decide, through the
same decision as "cellguard drain job_changed" (cellguard drain --help):
the checks run within the drain's budget (--budget, else drain.budget,
else 60s), and a lift (--lift-file) lets blocking findings go. Stdout keeps
drain's contract, which bosh-agent reads whatever the exit status: the
integer 0 when the VM may go (passed, lifted, budget expired, or cellguard
could not run), and nothing at all when it blocks, so a script that forgets
the exit code still fails. The report and the decision go to stderr (with
--format json, the report alone: the decision is in the log). The
job's bin/drain runs "cellguard drain", which also reads the agent's
arguments and writes drain's metrics; this command writes only validate's.

Budget. Every phase runs within a budget: --budget, else the config's
validator.budget (pre-start) or drain.budget (drain), else 60s. When it runs
out, validate returns with the checks that finished; the others are
reported as unfinished (error) and never block, and stderr and the log say
budget_expired. A blocking finding of a check that finished still blocks.
"cellguard validate timeout [--phase P] [--config PATH]" prints, in whole
seconds, the bound the job's scripts put on validate: the budget and a
grace (a quarter of it, 2s to 15s), as "cellguard drain timeout" does.

--fix (or validator.fix) moves escaped container processes back into the
cgroups their runtime recorded, in every hierarchy, re-reads /proc to verify,
and reports each move. It never signals or kills a process.

--prometheus-textfile (or validator.prometheus_textfile) writes gauges for
node_exporter's textfile collector, atomically: cellguard_check_status
{check,phase} (0 pass, 1 warn, 2 fail, 3 error), cellguard_check_findings,
cellguard_check_blocking, cellguard_check_duration_seconds,
cellguard_validate_blocked and cellguard_validate_timestamp_seconds. A failed
write is reported but does not change the exit code.

Exit codes:
  0  passed: no blocking check failed (warnings allowed); drain: the VM
     may go (stdout: 0)
  1  a blocking check failed or could not check (not ignored); drain:
     blocked (stdout: nothing)
  2  the validator could not run: bad flags or config, unknown check id,
     /proc unreadable under --root; drain: stdout 0 (a broken guard does
     not hold the VM)
`

type validateFlags struct {
	common
	phase, root, format, promFile string
	ignore, runtimeRoots          stringList
	fix                           bool
	// drain's: the budget and the lift that decide with the report.
	budget   time.Duration
	liftFile string
}

// nextUpdate is the call validate --phase drain decides for: an update,
// the one event on which a blocking finding blocks by default.
var nextUpdate = drain.Parse([]string{drain.JobChanged})

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
	phase := validator.Phase(f.phase)
	if phase != validator.PreStart && phase != validator.Drain {
		errorf(env, "--phase %q: want pre-start or drain", f.phase)
		return ExitCantRun
	}
	if phase != validator.Drain {
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
	logger, cfg, closer, err := f.setup(env, "validate")
	if err != nil {
		logger, closer = f.flagLogger(env, "validate")
		defer closer()
		return f.couldNotRun(env, logger, phase, &cantRun{err: err, hint: "fix the cellguard job's validator properties or --config"})
	}
	defer closer()
	switch {
	case fs.NArg() > 0:
		return f.couldNotRun(env, logger, phase, &cantRun{err: fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))})
	case f.format != "human" && f.format != "json":
		return f.couldNotRun(env, logger, phase, &cantRun{err: fmt.Errorf("--format %q: want human or json", f.format)})
	}
	return f.run(ctx, env, logger, cfg, phase)
}

func (f *validateFlags) run(ctx context.Context, env *Env, logger lager.Logger, cfg *config.Config, phase validator.Phase) int {
	// Every phase runs within its budget, as drain does: what did not
	// finish in time is reported and never blocks; a finished blocking
	// check still does (issue 38: a stuck check held pre-start for good).
	budget := validateBudget(phase, f.budget, cfg)
	rctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	v, cr := newValidation(rctx, cfg, phase, f.root, splitList(f.runtimeRoots), splitList(f.ignore), f.fix)
	if cr != nil {
		return f.couldNotRun(env, logger, phase, cr)
	}
	logger.Info("starting", lager.Data{"phase": phase, "root": f.root, "checks": v.IDs(), "ignore": v.Options.Ignore, "fix": v.Fix})
	rep := v.Run(rctx)
	if err := ctx.Err(); err != nil {
		return f.couldNotRun(env, logger, phase, &cantRun{err: fmt.Errorf("interrupted: %w", err)})
	}
	f.budgetExpired(env, logger, phase, budget, &rep)
	// Drain: stdout is BOSH's, and holds only the integer.
	out := env.Stdout
	if phase == validator.Drain {
		out = env.Stderr
	}
	now := time.Now()
	emitReport(logger, rep, f.format, out, now)
	promFile := f.promFile
	if promFile == "" {
		promFile = cfg.Validator.PrometheusFile
	}
	if promFile != "" {
		if err := metrics.WriteValidateTextfile(promFile, rep, now); err != nil {
			logger.Error("write-prometheus-textfile", err)
			errorf(env, "%v", err)
			hintf(env, "the validation itself ran; check that the textfile collector's directory exists")
		}
	}
	logger.Info("finished", lager.Data{"phase": phase, "blocked": rep.Blocked})
	if phase == validator.Drain {
		return f.decideDrain(env, logger, &rep, nil)
	}
	if rep.Blocked {
		return ExitFailed
	}
	return ExitOK
}

// asksDrain reports whether args ask for --phase drain, read without the
// flag set (which stopped at a flag it could not read).
func asksDrain(args []string) bool {
	for i, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "phase" {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		return value == string(validator.Drain)
	}
	return false
}

// validateBudget is the time a validation may take: the flag, else the
// phase's budget in the config (drain.budget, validator.budget), else the
// default.
func validateBudget(phase validator.Phase, flag time.Duration, cfg *config.Config) time.Duration {
	switch {
	case phase == validator.Drain:
		return drainBudget(flag, cfg)
	case flag > 0:
		return flag
	case cfg != nil && cfg.Validator.Budget.Duration > 0:
		return cfg.Validator.Budget.Duration
	}
	return defaultDrainBudget
}

// budgetExpired says, in the log and (but for drain, whose decision says
// it) on stderr, which checks the budget cut off. They never block: a
// guard that cannot finish must not wedge a rollout; a finished blocking
// check blocks all the same.
func (f *validateFlags) budgetExpired(env *Env, logger lager.Logger, phase validator.Phase, budget time.Duration, rep *validator.Report) {
	if !rep.Incomplete {
		return
	}
	var unfinished []string
	for _, r := range rep.Results {
		if r.Unfinished {
			unfinished = append(unfinished, r.ID)
		}
	}
	logger.Error("budget-expired", context.DeadlineExceeded, lager.Data{"phase": phase, "budget": budget.String(), "unfinished": unfinished, "blocked": rep.Blocked})
	if phase != validator.Drain {
		fmt.Fprintf(env.Stderr, "cellguard validate --phase %s: budget_expired: %s did not finish within %v; reported as errors, they do not block (blocked: %v)\n",
			phase, strings.Join(unfinished, ", "), budget, rep.Blocked)
	}
}

// runValidateTimeout prints the bound on validate the job's scripts use:
// the phase's budget and drain's grace, in whole seconds.
func runValidateTimeout(env *Env, args []string) int {
	var c common
	var phase string
	fs := newFlagSet(env, "validate timeout", "validate timeout [--phase pre-start|drain] [--config PATH]", &c)
	fs.StringVar(&phase, "phase", string(validator.PreStart), "the phase whose budget bounds validate")
	if ok, code := parseNoArgs(env, fs, args); !ok {
		return code
	}
	if p := validator.Phase(phase); p != validator.PreStart && p != validator.Drain {
		errorf(env, "--phase %q: want pre-start or drain", phase)
		return ExitCantRun
	}
	cfg, err := loadConfig(c.configPath)
	if err != nil {
		errorf(env, "%v", err)
		return ExitCantRun
	}
	fmt.Fprintln(env.Stdout, drainTimeLimit(validateBudget(validator.Phase(phase), 0, cfg)))
	return ExitOK
}

// couldNotRun reports why nothing was validated. In the drain phase that
// is drain's could_not_run: the integer 0 and exit 2, as cellguard drain.
func (f *validateFlags) couldNotRun(env *Env, logger lager.Logger, phase validator.Phase, cr *cantRun) int {
	logger.Error("cannot-validate", cr.err)
	cr.print(env)
	if phase != validator.Drain {
		return ExitCantRun
	}
	return f.decideDrain(env, logger, nil, cr)
}

// decideDrain judges a drain-phase run with drain.Decide, as the next
// update's drain would (its lift included), says so on stderr and in the
// log, and keeps drain's stdout contract (drainVerdict).
func (f *validateFlags) decideDrain(env *Env, logger lager.Logger, rep *validator.Report, cr *cantRun) int {
	in := drain.Input{Call: nextUpdate, Report: rep}
	if cr != nil {
		in.CouldNotRun = cr.err
	}
	if rep != nil && rep.Blocked {
		in.Lift = activeLift(env, logger, f.liftFile, env.now())
	}
	dec := drain.Decide(in)
	logger.Info("decided", lager.Data{"outcome": dec.Outcome, "block": dec.Block, "reason": dec.Reason})
	if f.format != "json" {
		// With --format json stderr holds one JSON document, which tools
		// (and the errand's --json form) parse: the decision is in the
		// log, the exit code and stdout.
		fmt.Fprintf(env.Stderr, "cellguard validate --phase drain: %s: %s\n", dec.Outcome, report.Escape(dec.Reason))
	}
	return drainVerdict(env, dec)
}

// extraChecks run besides the registry in every validation; tests add
// one that never returns.
var extraChecks []validator.Check

// cantRun is why cellguard could not run, with a hint for humans.
type cantRun struct {
	err  error
	hint string
}

func (c *cantRun) print(env *Env) {
	errorf(env, "%v", c.err)
	if c.hint != "" {
		hintf(env, "%s", c.hint)
	}
}

// newPlan is the plan of every validation this process runs: the config
// with the flags over it (app.Plan, the one place a run is built).
func newPlan(cfg *config.Config, o app.Overrides) *app.Plan {
	p := app.NewPlan(cfg, o)
	p.Extra = extraChecks
	return p
}

// newValidation builds a run of phase under root, its facts read within
// ctx. extraIgnore and runtimeRoots come from flags and add to (roots:
// replace) the config's. It fails when the registry or the policy is
// wrong, or /proc cannot be read under root: nothing could be validated.
func newValidation(ctx context.Context, cfg *config.Config, phase validator.Phase, root string, runtimeRoots, extraIgnore []string, fix bool) (*app.Validation, *cantRun) {
	v, err := newPlan(cfg, app.Overrides{Root: root, RuntimeRoots: runtimeRoots, Ignore: extraIgnore, Fix: fix}).Prepare(ctx, phase)
	var perr *app.PolicyError
	switch {
	case errors.As(err, &perr):
		return nil, &cantRun{err: err, hint: perr.Hint()}
	case errors.Is(err, app.ErrHostUnreadable):
		return nil, &cantRun{err: err, hint: "run as root on the host, or point --root at a tree holding proc/ and sys/fs/cgroup/"}
	case err != nil:
		return nil, &cantRun{err: err}
	}
	return v, nil
}

// emitReport logs every result and writes the report to out. The report
// is rendered while the results are logged (a cell with hundreds of
// findings spends milliseconds on each) and written after, so the two
// never interleave on a shared stderr.
func emitReport(logger lager.Logger, rep validator.Report, format string, out io.Writer, now time.Time) {
	var rendered bytes.Buffer
	renderErr := make(chan error, 1)
	go func() {
		if format == "json" {
			renderErr <- report.JSON(&rendered, rep, now)
		} else {
			renderErr <- report.Human(&rendered, rep)
		}
	}()
	logResults(logger, rep)
	werr := <-renderErr
	if werr == nil {
		_, werr = out.Write(rendered.Bytes())
	}
	if werr != nil {
		logger.Error("write-report", werr)
	}
}

// defaultRuntimeRoots are scanned when neither --runtime-root nor the
// config names any.
func defaultRuntimeRoots() []string { return app.DefaultRuntimeRoots() }

func logResults(logger lager.Logger, rep validator.Report) {
	for _, r := range rep.Results {
		data := lager.Data{"check": r.ID, "status": r.Status, "severity": r.Severity, "blocking": r.Blocking,
			"ignored": r.Ignored, "findings": report.Count(r), "duration": r.Duration}
		if r.Error != "" {
			data["error"] = r.Error
		}
		logger.Info("check", data)
		for _, fd := range r.Findings {
			if rt, ok := fd.Evidence.(runcstate.Runtime); ok {
				// What was looked at, by name and root: the log says it
				// even when every check passed.
				logger.Info("runtime-found", lager.Data{"runtime": rt.Name, "root": rt.Root, "containers": strconv.Itoa(rt.Containers)})
				continue
			}
			if fd.Status.IsProblem() {
				logger.Info("finding", lager.Data{"check": r.ID, "subject": fd.Subject, "status": fd.Status, "detail": fd.Detail, "data": fd.Data})
			}
		}
	}
}

// splitList flattens "a,b" entries and drops blanks.
func splitList(in []string) []string { return app.SplitList(in) }
