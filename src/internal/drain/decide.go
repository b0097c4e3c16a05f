package drain

import (
	"fmt"

	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// Outcome is what a drain did.
type Outcome string

const (
	// Pass: nothing blocking was found.
	Pass Outcome = "pass"
	// Blocked: a blocking finding on an update: drain prints no integer
	// and the agent fails the step.
	Blocked Outcome = "blocked"
	// ReleasedOnShutdown: a blocking finding on job_shutdown, reported
	// and let go (cellguard.drain.block_on_shutdown is off).
	ReleasedOnShutdown Outcome = "released_on_shutdown"
	// Lifted: a blocking finding, let go by an operator's lift.
	Lifted Outcome = "lifted"
	// BudgetExpired: the checks did not finish within the budget and none
	// that finished blocks; what finished is reported and the VM is let go.
	BudgetExpired Outcome = "budget_expired"
	// CouldNotRun: cellguard itself could not run (config, /proc, a
	// crash): nothing is known, and a broken guard must not hold a fleet.
	CouldNotRun Outcome = "could_not_run"
)

// Outcomes lists every outcome, for a metric that names each.
var Outcomes = []Outcome{Pass, Blocked, ReleasedOnShutdown, Lifted, BudgetExpired, CouldNotRun}

// Input is what Decide weighs.
type Input struct {
	Call Call
	// Report is the validator's run; nil when it could not run.
	Report *validator.Report
	// CouldNotRun says why there is no report.
	CouldNotRun error
	// BlockOnShutdown makes job_shutdown block like an update.
	BlockOnShutdown bool
	// Lift is an unexpired, trusted lift, or nil.
	Lift *Lift
}

// Decision is Decide's verdict.
type Decision struct {
	Outcome Outcome `json:"outcome"`
	// Block: print no integer, exit 1. Only Blocked blocks.
	Block bool `json:"block"`
	// Reason says why, in a sentence, for the log and the operator.
	Reason string `json:"reason"`
}

// Decide is the contract: a drain blocks only on a blocking finding of a
// check that finished (Report.Blocked never counts an unfinished check), on
// an update (or on a shutdown when asked), without a lift. A blocking
// finding blocks whatever else did not finish: a confirmed escape is not
// undone by a check that ran out of time. Everything else lets the VM go.
func Decide(in Input) Decision {
	switch {
	case in.Report == nil || in.CouldNotRun != nil:
		why := "no report"
		if in.CouldNotRun != nil {
			why = in.CouldNotRun.Error()
		}
		return Decision{Outcome: CouldNotRun, Reason: "cellguard could not validate (" + why + "); a broken guard does not hold the VM, so drain lets it go"}
	case !in.Report.Blocked && in.Report.Incomplete:
		return Decision{Outcome: BudgetExpired, Reason: "the checks did not all finish within the drain's time budget and none that finished blocks; what finished is reported, and drain lets the VM go"}
	case !in.Report.Blocked:
		return Decision{Outcome: Pass, Reason: "no blocking finding"}
	}
	also := ""
	if in.Report.Incomplete {
		also = " (some other checks did not finish within the budget; a finished check's blocking finding counts all the same)"
	}
	switch {
	case in.Call.Event == Shutdown && !in.BlockOnShutdown:
		return Decision{Outcome: ReleasedOnShutdown, Reason: fmt.Sprintf("blocking findings on %s (stop, recreate, delete, scale-in): reported, and the VM is let go (cellguard.drain.block_on_shutdown is false)%s", in.Call.JobChange, also)}
	case in.Lift != nil:
		return Decision{Outcome: Lifted, Reason: fmt.Sprintf("blocking findings, let go by the lift of %s until %s: %s%s", in.Lift.By, in.Lift.Expires.UTC().Format(timeLayout), in.Lift.Reason, also)}
	}
	what := "an update (" + in.Call.JobChange + ")"
	if !in.Call.Recognized {
		what = fmt.Sprintf("a call with JOB_CHANGE %q, judged as an update", in.Call.JobChange)
	}
	if in.Call.Event == Shutdown {
		what = in.Call.JobChange + " (cellguard.drain.block_on_shutdown is true)"
	}
	return Decision{Outcome: Blocked, Block: true, Reason: "blocking findings on " + what + ": drain prints no integer, so the agent fails this step" + also}
}
