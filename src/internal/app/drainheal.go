package app

import (
	"fmt"
	"strconv"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/drain"
	"github.com/cloudfoundry/cellguard/src/internal/heal"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// heal is drain's heal (cellguard.drain.heal): it moves back what the
// checks confirmed escaped, within the heal budget and with heal's
// identity checks, logs each process's outcome, and returns the report
// judged again (heal.Compose: a move that held is a warning, the rest
// still fail) with what it did, for the decision. A run with nothing
// escaped comes back as it was, with no heal.
func (d *Drain) heal(v Runner, rep validator.Report) (validator.Report, *drain.Heal) {
	perMinute := healPerMinute(d.HealPerMinute)
	outs := v.Heal(rep, heal.NewSharedBudget(perMinute, d.HealLedger, nil))
	if len(outs) == 0 {
		return rep, nil
	}
	for _, o := range outs {
		e := o.Escape
		d.Logger.Info("heal", lager.Data{"container": e.Container, "pid": e.PID, "comm": e.Comm, "hierarchy": e.Want.Hierarchy.Name,
			"expected": e.Want.Rel, "actual": e.Actual, "result": o.Result(), "why": o.Why()})
	}
	return heal.Compose(rep, outs), summarize(outs, perMinute)
}

// predictHeal is drain's heal as validate --phase drain predicts it
// (heal.Predictor: nothing moved), judged as drain judges its heal, so
// that the two decide alike: a process whose recorded cgroup is there
// would be moved, one whose cgroup is gone or whose identity is unknown
// would block, naming why.
func (u *Validate) predictHeal(v *Validation, rep validator.Report) (validator.Report, *drain.Heal) {
	perMinute := healPerMinute(u.HealPerMinute)
	outs := v.PredictHeal(rep, perMinute)
	if len(outs) == 0 {
		return rep, nil
	}
	for _, o := range outs {
		e := o.Escape
		u.Logger.Info("heal-predicted", lager.Data{"container": e.Container, "pid": e.PID, "comm": e.Comm, "hierarchy": e.Want.Hierarchy.Name,
			"expected": e.Want.Rel, "actual": e.Actual, "why": o.Why()})
	}
	h := summarize(outs, perMinute)
	h.Predicted = true
	return heal.Compose(rep, outs), h
}

// healPerMinute is the heal budget's cap: n, else heal.DefaultPerMinute.
func healPerMinute(n int) int {
	if n <= 0 {
		return heal.DefaultPerMinute
	}
	return n
}

// summarize counts the processes moved and gone and names each escape
// left outside (a process is moved when every hierarchy it was out in
// moved), with why, for the decision's reason.
func summarize(outs []heal.Outcome, perMinute int) *drain.Heal {
	type process struct{ moved, gone, left bool }
	var order []string
	procs := map[string]*process{}
	h := &drain.Heal{}
	for _, o := range outs {
		k := o.Escape.Container + "/" + strconv.Itoa(o.Escape.PID)
		p, ok := procs[k]
		if !ok {
			p = &process{}
			procs[k] = p
			order = append(order, k)
		}
		switch {
		case o.Moved:
			p.moved = true
		case o.Gone:
			p.gone = true
		default:
			p.left = true
			why := o.Why()
			if o.Deferred {
				why += fmt.Sprintf(" (cellguard.watch.heal_per_minute %d)", perMinute)
			}
			h.Unhealed = append(h.Unhealed, fmt.Sprintf("pid %d (%s) of %s in %s: %s",
				o.Escape.PID, o.Escape.Comm, o.Escape.Container, o.Escape.Want.Hierarchy.Name, why))
		}
	}
	for _, k := range order {
		switch p := procs[k]; {
		case p.left:
		case p.gone:
			h.Gone++
		case p.moved:
			h.Moved++
		}
	}
	return h
}
