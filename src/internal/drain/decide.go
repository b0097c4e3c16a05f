package drain

import (
	"fmt"
	"strings"

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
	// Healed: drain moved escaped processes back (cellguard.drain.heal)
	// and nothing blocks in the report judged again.
	Healed Outcome = "healed"
	// BudgetExpired: the checks did not finish within the budget and none
	// that finished blocks; what finished is reported and the VM is let go.
	BudgetExpired Outcome = "budget_expired"
	// CouldNotRun: cellguard itself could not run (config, /proc, a
	// crash): nothing is known, and a broken guard must not hold a fleet.
	CouldNotRun Outcome = "could_not_run"
)

// Outcomes lists every outcome, for a metric that names each.
var Outcomes = []Outcome{Pass, Blocked, ReleasedOnShutdown, Lifted, Healed, BudgetExpired, CouldNotRun}

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
	// Heal is what drain's heal did before Report was judged again; nil
	// when it did not heal (cellguard.drain.heal off, or nothing escaped).
	Heal *Heal
}

// Heal is what drain's heal did, for the decision's reason.
type Heal struct {
	// Moved counts the processes moved back and verified from /proc;
	// Gone those that had exited (or whose pid names another process).
	Moved, Gone int
	// Unhealed says, per process still outside, which and why.
	Unhealed []string
}

// maxUnhealedNamed bounds the processes a reason names; drain.log has
// every one.
const maxUnhealedNamed = 5

// what says what the heal did, as a clause of a reason; "" without a heal.
func (h *Heal) what() string {
	if h == nil {
		return ""
	}
	var parts []string
	if h.Moved > 0 {
		parts = append(parts, fmt.Sprintf("drain moved %s back into the cgroups their runtime recorded",
			plural(h.Moved, "escaped process", "escaped processes")))
	}
	if h.Gone > 0 {
		parts = append(parts, fmt.Sprintf("%s gone before drain could move it", plural(h.Gone, "escaped process was", "escaped processes were")))
	}
	if len(h.Unhealed) > 0 {
		named := h.Unhealed[:min(len(h.Unhealed), maxUnhealedNamed)]
		s := fmt.Sprintf("drain could not heal %d (cellguard.drain.heal): %s", len(h.Unhealed), strings.Join(named, "; "))
		if more := len(h.Unhealed) - len(named); more > 0 {
			s += fmt.Sprintf("; and %d more (drain.log)", more)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
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
		return Decision{Outcome: BudgetExpired, Reason: "the checks did not all finish within the drain's time budget and none that finished blocks; what finished is reported, and drain lets the VM go" + in.Heal.what()}
	case !in.Report.Blocked && in.Heal != nil && in.Heal.Moved > 0:
		return Decision{Outcome: Healed, Reason: "no blocking finding left" + in.Heal.what() +
			", verified from /proc (reported as warnings: what moved them can do so again)"}
	case !in.Report.Blocked:
		return Decision{Outcome: Pass, Reason: "no blocking finding" + in.Heal.what()}
	}
	also := in.Heal.what()
	if in.Report.Incomplete {
		also += " (some other checks did not finish within the budget; a finished check's blocking finding counts all the same)"
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
