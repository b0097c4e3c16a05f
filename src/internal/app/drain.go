package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/drain"
	"github.com/cloudfoundry/cellguard/src/internal/heal"
	"github.com/cloudfoundry/cellguard/src/internal/metrics"
	"github.com/cloudfoundry/cellguard/src/internal/report"
	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// DefaultDrainBudget bounds a drain's validation when neither the flag nor
// the config says: far below anything the director or an operator waits
// for (the agent itself waits forever), far above a cell's validation
// (docs/performance.md: milliseconds, plus 1.5s when an escape is
// confirmed).
const DefaultDrainBudget = 60 * time.Second

// Runner is one validation run, ready to go (Plan.Prepare's *Validation):
// drain takes it injected so that it decides without knowing how the
// checks are assembled.
type Runner interface {
	// Run runs the checks until ctx ends and heals what the policy says
	// to heal.
	Run(ctx context.Context) validator.Report
	// LogData says what the run is (checks, ignore list, fix), for the
	// drain's "starting" line.
	LogData() lager.Data
	// Heal moves the escapes among rep's findings back, at most b.Left()
	// processes, and returns one outcome per escape, in rep's order.
	Heal(rep validator.Report, b *heal.Budget) []heal.Outcome
}

// Drain is one run of the job's drain as bosh-agent called it: validate
// within the budget, decide by the agent's arguments, and report the
// decision everywhere it is read (the log, Stderr, the textfile). Its
// crash boundary is not here but in the job's bin/drain (docs/lifecycle.md,
// "One crash boundary"): a crash ends this process before its integer, and
// bin/drain prints 0 and has `drain could-not-run` write the textfile.
type Drain struct {
	Call drain.Call
	// JobState and NextJobState are the agent's BOSH_JOB_STATE and
	// BOSH_JOB_NEXT_STATE, for the log.
	JobState, NextJobState string
	Logger                 lager.Logger
	// Stderr is what people read: the report, the decision, errors.
	Stderr io.Writer
	Now    func() time.Time
	// Budget bounds the validation; 0 means DefaultDrainBudget.
	Budget          time.Duration
	BlockOnShutdown bool
	// Heal moves escaped processes back before deciding
	// (cellguard.drain.heal), at most HealPerMinute of them (0:
	// heal.DefaultPerMinute).
	Heal          bool
	HealPerMinute int
	// HealLedger is the host's heal record, shared with watch (app.HealLedger
	// under the root); "" keeps the record in this run.
	HealLedger string
	// LiftFile is where `cellguard drain lift` records a lift.
	LiftFile string
	// Textfile receives the drain's gauges; "" writes none.
	Textfile string
	// Prepare builds the run within ctx (the budget's: its facts are read
	// within it), or says why nothing can be validated (a *CouldNotRun:
	// the config's policy, /proc unreadable).
	Prepare func(ctx context.Context) (Runner, error)
	// Show logs a run's results and renders its report on Stderr.
	Show func(validator.Report)
}

// Run validates and decides. cantRun, when set, is why cellguard could
// not even start (its config, a flag): the drain then decides could_not_run
// without validating.
func (d *Drain) Run(ctx context.Context, cantRun error) drain.Decision {
	d.logCall()
	if cantRun != nil {
		return d.finish(nil, nil, cantRun)
	}
	budget := d.budget()
	bctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	v, err := d.Prepare(bctx)
	if err != nil {
		return d.finish(nil, nil, err)
	}
	data := lager.Data{"budget": budget.String(), "block_on_shutdown": d.BlockOnShutdown, "heal": d.Heal}
	for k, val := range v.LogData() {
		data[k] = val
	}
	d.Logger.Info("starting", data)
	rep := v.Run(bctx)
	safefile.Crash("drain")
	if rep.Incomplete {
		data := lager.Data{"budget": budget.String(), "unfinished": unfinishedIDs(rep)}
		if ctx.Err() != nil {
			d.Logger.Error("interrupted", ctx.Err(), data)
		} else {
			d.Logger.Error("budget-expired", bctx.Err(), data)
		}
	}
	var healed *drain.Heal
	if d.Heal {
		rep, healed = d.heal(v, rep)
	}
	d.Show(rep)
	return d.finish(&rep, healed, nil)
}

func (d *Drain) budget() time.Duration {
	if d.Budget > 0 {
		return d.Budget
	}
	return DefaultDrainBudget
}

func (d *Drain) logCall() {
	d.Logger.Info("called", lager.Data{"job_change": d.Call.JobChange, "hash_change": d.Call.HashChange,
		"updated_packages": d.Call.Packages, "event": d.Call.Event, "recognized": d.Call.Recognized,
		"BOSH_JOB_STATE": d.JobState, "BOSH_JOB_NEXT_STATE": d.NextJobState})
	if !d.Call.Recognized {
		d.Logger.Info("unrecognized-job-change", lager.Data{"job_change": d.Call.JobChange,
			"judged_as": "update", "reason": "bosh-agent passes job_shutdown, job_changed, job_new or job_check_status; anything else is judged as an update, the stricter"})
	}
}

// finish decides and reports the decision everywhere it is read: the log,
// Stderr and the textfile. rep is nil when nothing was validated; cantRun
// says why. healed is what drain's heal did before rep was judged again.
func (d *Drain) finish(rep *validator.Report, healed *drain.Heal, cantRun error) drain.Decision {
	logger, now := d.Logger, d.Now()
	in := drain.Input{Call: d.Call, Report: rep, BlockOnShutdown: d.BlockOnShutdown, Heal: healed}
	if rep == nil && cantRun == nil {
		cantRun = errors.New("no validator report")
	}
	if cantRun != nil {
		cr := asCouldNotRun(cantRun)
		in.CouldNotRun = cr.Err
		logger.Error("could-not-run", cr.Err, lager.Data{"hint": cr.Hint})
		cr.Print(d.Stderr)
	}
	in, dec := DecideDrain(in, logger, d.Stderr, d.LiftFile, now)
	data := lager.Data{"event": d.Call.Event, "job_change": d.Call.JobChange, "outcome": dec.Outcome, "block": dec.Block, "reason": dec.Reason}
	if rep != nil {
		data["blocking_checks"] = blockingIDs(*rep)
	}
	switch dec.Outcome {
	case drain.CouldNotRun:
		logger.Error("decided", in.CouldNotRun, data)
	case drain.Lifted:
		logger.Info("drain-block-lifted", lager.Data{"by": in.Lift.By, "sudo_user": in.Lift.SudoUser, "uid": in.Lift.UID,
			"reason": in.Lift.Reason, "created": in.Lift.Created, "expires": in.Lift.Expires, "file": d.LiftFile})
		logger.Info("decided", data)
	default:
		logger.Info("decided", data)
	}
	fmt.Fprintf(d.Stderr, "cellguard drain %s: %s: %s\n", strings.TrimSpace(d.Call.JobChange+" "+d.Call.HashChange), dec.Outcome, report.Escape(dec.Reason))
	if d.Textfile != "" {
		if err := metrics.WriteDrainTextfile(d.Textfile, rep, d.Call, dec, now); err != nil {
			logger.Error("write-prometheus-textfile", err)
			Errorf(d.Stderr, "%v", err)
		}
	}
	return dec
}

// asCouldNotRun is err as a *CouldNotRun, without a hint when it is not one.
func asCouldNotRun(err error) *CouldNotRun {
	var cr *CouldNotRun
	if errors.As(err, &cr) {
		return cr
	}
	return &CouldNotRun{Err: err}
}

// DecideDrain is the drain's decision for in, the lift at liftFile read
// only when the report blocks: what cellguard drain decides, and what
// validate --phase drain decides for the next update. It returns in with
// the lift it used.
func DecideDrain(in drain.Input, logger lager.Logger, stderr io.Writer, liftFile string, now time.Time) (drain.Input, drain.Decision) {
	if in.Report != nil && in.Report.Blocked {
		in.Lift = ActiveLift(logger, stderr, liftFile, now)
	}
	return in, drain.Decide(in)
}

// ActiveLift returns the lift at path when it holds now. A lift that is
// there but expired, invalid or untrusted is logged (and, untrusted, said
// on stderr) and not used.
func ActiveLift(logger lager.Logger, stderr io.Writer, path string, now time.Time) *drain.Lift {
	l, err := drain.ReadLift(path)
	switch {
	case errors.Is(err, drain.ErrNoLift):
		return nil
	case err != nil:
		logger.Error("lift-ignored", err, lager.Data{"file": path, "reason": "an untrusted or unreadable lift lifts nothing"})
		Errorf(stderr, "lift ignored: %v", err)
		return nil
	}
	state := l.State(now)
	if state != "active" {
		logger.Info("lift-not-used", lager.Data{"file": path, "state": state, "by": l.By, "reason": l.Reason, "expires": l.Expires})
		return nil
	}
	return &l
}

// idsWhere are the ids of rep's results that is holds for, in order.
func idsWhere(rep validator.Report, is func(validator.Result) bool) []string {
	var ids []string
	for _, r := range rep.Results {
		if is(r) {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

func blockingIDs(rep validator.Report) []string {
	return idsWhere(rep, func(r validator.Result) bool { return r.Blocking })
}

func unfinishedIDs(rep validator.Report) []string {
	return idsWhere(rep, func(r validator.Result) bool { return r.Unfinished })
}

// DrainTimeLimit is bin/drain's bound on cellguard drain, in whole seconds
// rounded up: the budget, then a quarter of it, 2s to 15s, for drain to
// report what finished and write its files once the budget is spent.
func DrainTimeLimit(budget time.Duration) int {
	grace := min(max(budget/4, 2*time.Second), 15*time.Second)
	return int(math.Ceil((budget + grace).Seconds()))
}

// DrainCouldNotRun records, for bin/drain, that cellguard drain gave no
// verdict (it crashed, was killed at the time limit): the drain textfile
// at path says could_not_run for the event of the agent's args, written by
// cellguard's one atomic write, never through a name another user
// planted. A path that is not plain (the rule of the config's
// validator.prometheus_textfile) is a *CouldNotRun, and nothing is
// written. It returns the why it recorded.
func DrainCouldNotRun(logger lager.Logger, path string, args []string, why string, now time.Time) (string, error) {
	if err := unitfile.ValidatePath(path); err != nil {
		return why, &CouldNotRun{Err: err}
	}
	if why == "" {
		why = "cellguard drain gave no verdict"
	}
	call := drain.Parse(args)
	dec := drain.Decide(drain.Input{Call: call, CouldNotRun: errors.New(why)})
	if err := metrics.WriteDrainTextfile(path, nil, call, dec, now); err != nil {
		logger.Error("write-prometheus-textfile", err)
		return why, err
	}
	logger.Info("could-not-run-recorded", lager.Data{"file": path, "event": call.Event, "why": why})
	return why, nil
}
