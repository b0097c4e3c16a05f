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
	perMinute := d.HealPerMinute
	if perMinute <= 0 {
		perMinute = heal.DefaultPerMinute
	}
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
