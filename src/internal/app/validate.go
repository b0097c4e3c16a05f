package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/config"
	"github.com/cloudfoundry/cellguard/src/internal/drain"
	"github.com/cloudfoundry/cellguard/src/internal/metrics"
	"github.com/cloudfoundry/cellguard/src/internal/report"
	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// Phase is when a validation runs; cli names it without the validator.
type Phase = validator.Phase

// The phases a validation runs in.
const (
	PreStart   = validator.PreStart
	DrainPhase = validator.Drain
)

// Check is one registered check (tests add their own to a Plan).
type Check = validator.Check

// Report is a validation run's results.
type Report = validator.Report

// Verdict is how a use case ended, which cli turns into an exit code.
type Verdict int

const (
	// Passed: nothing blocks (warnings allowed); a drain lets the VM go.
	Passed Verdict = iota
	// Blocked: a blocking check failed; a drain holds the VM.
	Blocked
	// NotRun: cellguard could not run; a drain lets the VM go.
	NotRun
)

// DrainVerdict is the verdict of a drain's decision.
func DrainVerdict(dec drain.Decision) Verdict {
	switch {
	case dec.Block:
		return Blocked
	case dec.Outcome == drain.CouldNotRun:
		return NotRun
	}
	return Passed
}

// nextUpdate is the call validate --phase drain decides for: an update,
// the one event on which a blocking finding blocks by default.
var nextUpdate = drain.Parse([]string{drain.JobChanged})

// Validate is one `cellguard validate`: the checks of Phase within Budget,
// the report (on Stderr in the drain phase: Stdout is BOSH's), the
// textfile, and in the drain phase the decision the next update's drain
// would take (DecideDrain).
type Validate struct {
	Phase Phase
	// Format is the report's: human or json.
	Format string
	// Textfile receives the gauges; "" writes none.
	Textfile string
	Budget   time.Duration
	// LiftFile is the lift the drain phase honours.
	LiftFile       string
	Logger         lager.Logger
	Stdout, Stderr io.Writer
	// Now is the clock a lift is judged by.
	Now func() time.Time
}

// Run validates with plan. ctx's end is an interruption: could not run.
func (u *Validate) Run(ctx context.Context, plan *Plan, root string) Verdict {
	// Every phase runs within its budget, as drain does: what did not
	// finish in time is reported and never blocks; a finished blocking
	// check still does (issue 38: a stuck check held pre-start for good).
	rctx, cancel := context.WithTimeout(ctx, u.Budget)
	defer cancel()
	v, cr := plan.Ready(rctx, u.Phase)
	if cr != nil {
		return u.CouldNotRun(cr)
	}
	u.Logger.Info("starting", lager.Data{"phase": u.Phase, "root": root, "checks": v.IDs(), "ignore": v.Options.Ignore, "fix": v.Fix})
	rep := v.Run(rctx)
	if err := ctx.Err(); err != nil {
		return u.CouldNotRun(&CouldNotRun{Err: fmt.Errorf("interrupted: %w", err)})
	}
	u.budgetExpired(&rep)
	// Drain: stdout is BOSH's, and holds only the integer.
	out := u.Stdout
	if u.Phase == validator.Drain {
		out = u.Stderr
	}
	now := time.Now()
	ShowReport(u.Logger, rep, u.Format, out, now)
	if u.Textfile != "" {
		if err := metrics.WriteValidateTextfile(u.Textfile, rep, now); err != nil {
			u.Logger.Error("write-prometheus-textfile", err)
			PrintErr(u.Stderr, err)
			Hintf(u.Stderr, "the validation itself ran; check that the textfile collector's directory exists")
		}
	}
	u.Logger.Info("finished", lager.Data{"phase": u.Phase, "blocked": rep.Blocked})
	if u.Phase == validator.Drain {
		return u.decideDrain(&rep, nil)
	}
	if rep.Blocked {
		return Blocked
	}
	return Passed
}

// ValidateBudget is the time a validation may take: the flag, else the
// phase's budget in the config (drain.budget, validator.budget), else the
// default.
func ValidateBudget(phase Phase, flag time.Duration, cfg *config.Config) time.Duration {
	switch {
	case phase == validator.Drain:
		return DrainBudget(flag, cfg)
	case flag > 0:
		return flag
	case cfg != nil && cfg.Validator.Budget.Duration > 0:
		return cfg.Validator.Budget.Duration
	}
	return DefaultDrainBudget
}

// ParsePhase is the phase a --phase flag names: pre-start or drain.
func ParsePhase(s string) (Phase, error) {
	if p := Phase(s); p == PreStart || p == DrainPhase {
		return p, nil
	}
	return "", fmt.Errorf("--phase %q: want pre-start or drain", s)
}

// TimeLimit is how long the job's scripts let a validation of phase run
// under cfg, in whole seconds: its budget and drain's grace.
func TimeLimit(phase Phase, cfg *config.Config) int {
	return DrainTimeLimit(ValidateBudget(phase, 0, cfg))
}

// DrainBudget is the time a drain's validation may take: the flag, else
// the config's drain.budget, else DefaultDrainBudget.
func DrainBudget(flag time.Duration, cfg *config.Config) time.Duration {
	switch {
	case flag > 0:
		return flag
	case cfg != nil && cfg.Drain.Budget.Duration > 0:
		return cfg.Drain.Budget.Duration
	}
	return DefaultDrainBudget
}

// budgetExpired says, in the log and (but for drain, whose decision says
// it) on stderr, which checks the budget cut off. They never block: a
// guard that cannot finish must not wedge a rollout; a finished blocking
// check blocks all the same.
func (u *Validate) budgetExpired(rep *validator.Report) {
	if !rep.Incomplete {
		return
	}
	unfinished := unfinishedIDs(*rep)
	u.Logger.Error("budget-expired", context.DeadlineExceeded, lager.Data{"phase": u.Phase, "budget": u.Budget.String(), "unfinished": unfinished, "blocked": rep.Blocked})
	if u.Phase != validator.Drain {
		fmt.Fprintf(u.Stderr, "cellguard validate --phase %s: budget_expired: %s did not finish within %v; reported as errors, they do not block (blocked: %v)\n",
			u.Phase, strings.Join(unfinished, ", "), u.Budget, rep.Blocked)
	}
}

// CouldNotRun reports why nothing was validated. In the drain phase that
// is drain's could_not_run, as cellguard drain's.
func (u *Validate) CouldNotRun(cr *CouldNotRun) Verdict {
	u.Logger.Error("cannot-validate", cr.Err)
	PrintErr(u.Stderr, cr.Err)
	if cr.Hint != "" {
		Hintf(u.Stderr, "%s", cr.Hint)
	}
	if u.Phase != validator.Drain {
		return NotRun
	}
	return u.decideDrain(nil, cr)
}

// decideDrain judges a drain-phase run with DecideDrain, as the next
// update's drain would (its lift included), and says so on stderr and in
// the log.
func (u *Validate) decideDrain(rep *validator.Report, cr *CouldNotRun) Verdict {
	in := drain.Input{Call: nextUpdate, Report: rep}
	if cr != nil {
		in.CouldNotRun = cr.Err
	}
	_, dec := DecideDrain(in, u.Logger, u.Stderr, u.LiftFile, u.Now())
	u.Logger.Info("decided", lager.Data{"outcome": dec.Outcome, "block": dec.Block, "reason": dec.Reason})
	if u.Format != "json" {
		// With --format json stderr holds one JSON document, which tools
		// (and the errand's --json form) parse: the decision is in the
		// log, the exit code and stdout.
		fmt.Fprintf(u.Stderr, "cellguard validate --phase drain: %s: %s\n", dec.Outcome, report.Escape(dec.Reason))
	}
	return DrainVerdict(dec)
}

// Ready is Prepare with its failures as a *CouldNotRun that says what to
// do: the registry or the policy is wrong, or /proc cannot be read under
// the root.
func (p *Plan) Ready(ctx context.Context, phase Phase) (*Validation, *CouldNotRun) {
	v, err := p.Prepare(ctx, phase)
	var perr *PolicyError
	switch {
	case errors.As(err, &perr):
		return nil, &CouldNotRun{Err: err, Hint: perr.Hint()}
	case errors.Is(err, ErrHostUnreadable):
		return nil, &CouldNotRun{Err: err, Hint: "run as root on the host, or point --root at a tree holding proc/ and sys/fs/cgroup/"}
	case err != nil:
		return nil, &CouldNotRun{Err: err}
	}
	return v, nil
}

// ShowReport logs every result and writes the report to out. The report
// is rendered while the results are logged (a cell with hundreds of
// findings spends milliseconds on each) and written after, so the two
// never interleave on a shared stderr.
func ShowReport(logger lager.Logger, rep validator.Report, format string, out io.Writer, now time.Time) {
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

func logResults(logger lager.Logger, rep validator.Report) {
	for _, r := range rep.Results {
		data := lager.Data{"check": r.ID, "status": r.Status, "severity": r.Severity, "blocking": r.Blocking,
			"ignored": r.Ignored, "findings": r.Count(), "duration": r.Duration}
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

// ParseCall reads bosh-agent's drain arguments.
func ParseCall(args []string) drain.Call { return drain.Parse(args) }
