package heal

import (
	"errors"
	"fmt"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/checks"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// Outcome is what healing one escape did.
type Outcome struct {
	Escape checks.Escape
	// Moved: the process is in its recorded cgroup now, read back from
	// /proc after the write.
	Moved bool
	// Gone: it exited before or during the move; nothing is left to heal.
	Gone bool
	// Written: the write to cgroup.procs succeeded.
	Written bool
	// Err is why the write, or reading the process back, failed.
	Err error
	// After is where the process still is after a write that did not
	// hold; "" when it could not be read.
	After string
}

// Failed says the heal was tried and the process is still outside.
func (o Outcome) Failed() bool { return !o.Moved && !o.Gone }

// Healer heals escapes; Mover is the real one.
type Healer interface {
	// Heal returns one Outcome per escape, in their order.
	Heal(v *snapshot.Host, escapes []checks.Escape) []Outcome
}

// Mover writes each escaped pid into its recorded cgroup.procs, in the
// snapshot's cgroup layout, and reads /proc/<pid>/cgroup back.
type Mover struct{}

var _ Healer = Mover{}

func (Mover) Heal(v *snapshot.Host, escapes []checks.Escape) []Outcome {
	r := v.ProcFS().NewReader()
	defer r.Close()
	var m cgroup.Membership
	out := make([]Outcome, len(escapes))
	for i, e := range escapes {
		out[i] = move(v.Layout(), r, &m, e)
	}
	return out
}

func move(l *cgroup.Layout, r *procfs.Reader, m *cgroup.Membership, e checks.Escape) Outcome {
	o := Outcome{Escape: e}
	err := l.Move(e.Want.Hierarchy, e.Want.Rel, e.PID)
	if errors.Is(err, procfs.ErrGone) {
		o.Gone = true
		return o
	}
	if err != nil {
		o.Err = err
		return o
	}
	o.Written = true
	// Verify from the kernel's side, not from our write's success.
	b, err := r.Cgroup(e.PID)
	if procfs.IsGone(err) {
		o.Gone = true
		return o
	}
	if err == nil {
		err = cgroup.ParseProcCgroup(b, m)
	}
	if err != nil {
		o.Err = err
		return o
	}
	now, _ := m.Lookup(e.Want.Key)
	o.After = string(now)
	o.Moved = cgroup.Under(o.After, e.Want.Rel)
	if o.Moved {
		o.After = ""
	}
	return o
}

// outcomeMeasured are the data of a heal that change from one try to the
// next while the escape stays the same.
var outcomeMeasured = []string{"actual", "fix_error", "after_fix"}

// Finding renders the outcome in place of the escape's finding: a heal
// that held is a warning (it had escaped; the unit that moved it can do
// so again), one that did not is still a failure. A process gone has none.
func (o Outcome) Finding() (validator.Finding, bool) {
	if o.Gone {
		return validator.Finding{}, false
	}
	e := o.Escape
	f := e.Finding()
	switch {
	case o.Moved:
		f.Status = validator.Warn
		f.Detail = fmt.Sprintf("pid %d (%s) had escaped in %s to %s; moved back to %s",
			e.PID, e.Comm, e.Want.Hierarchy.Name, e.Actual, e.Want.Rel)
		f.Data["fixed"] = "true"
	case !o.Written:
		f.Detail += "; moving it back failed"
		f.Data["fix_error"] = o.Err.Error()
	default:
		f.Detail += "; moved it back but it is still outside"
		if o.Err != nil {
			f.Data["fix_error"] = o.Err.Error()
		}
		f.Data["after_fix"] = o.After
	}
	f.Measured = outcomeMeasured
	f.Evidence = o
	return f, true
}

// Report heals the escapes among rep's findings with h and puts each
// outcome's finding in place of its escape's, judging the results again:
// what validate --fix and watch's heals both do. The snapshot the checks
// judged is asked for only when there is an escape: one was confirmed on
// it, so it is read by then (a drain whose budget ran out while the read
// went on has no escape and does not wait for it). It returns the
// outcomes.
func Report(rep *validator.Report, src *snapshot.Source, h Healer) []Outcome {
	var all []Outcome
	for i := range rep.Results {
		fs := rep.Results[i].Findings
		escapes := checks.Escapes(fs)
		if len(escapes) == 0 {
			continue
		}
		v, err := src.Get()
		if err != nil {
			return all // unreachable: the escapes were judged on it
		}
		outs := h.Heal(v, escapes)
		all = append(all, outs...)
		amended := make([]validator.Finding, 0, len(fs))
		next := 0
		for _, f := range fs {
			if _, ok := f.Evidence.(checks.Escape); !ok {
				amended = append(amended, f)
				continue
			}
			if hf, ok := outs[next].Finding(); ok {
				amended = append(amended, hf)
			}
			next++
		}
		rep.SetFindings(i, amended)
	}
	return all
}
