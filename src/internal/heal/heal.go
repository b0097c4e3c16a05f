package heal

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/evidence"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// Outcome is what healing one escape did.
type Outcome struct {
	Escape evidence.Escape
	// Moved: the process is in its recorded cgroup now, read back from
	// /proc after the write.
	Moved bool
	// Gone: it exited before or during the move, or the pid names another
	// process; nothing is left to heal.
	Gone bool
	// Deferred: not tried, the heal budget was spent (ReportWithin); a
	// later scan heals it.
	Deferred bool
	// Written: the write to cgroup.procs succeeded.
	Written bool
	// Err is why the write, or reading the process back, failed.
	Err error
	// After is where the process still is after a write that did not
	// hold; "" when it could not be read.
	After string
}

// Failed says the heal was tried and the process is still outside.
func (o Outcome) Failed() bool { return !o.Moved && !o.Gone && !o.Deferred }

// Result names what the heal did, for a log line: moved, gone, deferred,
// failed (the write failed) or still-outside (it did not hold).
func (o Outcome) Result() string {
	switch {
	case o.Moved:
		return "moved"
	case o.Gone:
		return "gone"
	case o.Deferred:
		return "deferred"
	case !o.Written:
		return "failed"
	}
	return "still-outside"
}

// Why says what became of the process, in the words its finding uses.
func (o Outcome) Why() string {
	switch o.Result() {
	case "moved":
		return "moved back to " + o.Escape.Want.Rel
	case "gone":
		return "gone: it exited, or its pid names another process now; nothing was moved"
	case "deferred":
		return "moving it back is deferred: the heal budget is spent"
	case "failed":
		return fmt.Sprintf("moving it back failed: %v", o.Err)
	}
	why := "moved it back but it is still in " + o.After
	if o.After == "" {
		why = "moved it back but could not read where it is"
	}
	if o.Err != nil {
		why += fmt.Sprintf(": %v", o.Err)
	}
	return why
}

// Healer heals escapes; Mover is the real one.
type Healer interface {
	// Heal returns one Outcome per escape, in their order.
	Heal(v *snapshot.Host, escapes []evidence.Escape) []Outcome
}

// Mover writes each escaped pid into its recorded cgroup.procs, in the
// snapshot's cgroup layout, and reads /proc/<pid>/cgroup back; it moves
// only the process the escape names (move).
type Mover struct{}

var _ Healer = Mover{}

func (Mover) Heal(v *snapshot.Host, escapes []evidence.Escape) []Outcome {
	r := v.ProcFS().NewReader()
	defer r.Close()
	var m cgroup.Membership
	out := make([]Outcome, len(escapes))
	for i, e := range escapes {
		out[i] = move(v.Layout(), v.ProcFS(), r, &m, e)
	}
	return out
}

// errOther means the pid names another process than the escape's, or one
// that exited: the escape's process is gone.
var errOther = errors.New("not the process confirmed")

// errUnconfirmed means the escape carries no identity to confirm its
// process by: nothing is moved, and the escape is kept (a failure).
var errUnconfirmed = errors.New("its identity could not be confirmed")

// move moves e's process back, and only it (issue 38, hole 1). It holds
// /proc/<pid> open (a pidfd: files read through it are that process's,
// and fail once it is reaped, even if the pid names another process by
// then) from before the identity check to after the read back:
//
//   - Right before the write, the pinned process must be the escape's
//     (start time and pid namespace as confirmed) and not have exited.
//   - After the write, the identity checked again and the cgroup read
//     back are the pinned process's. It was not reaped then, so it was
//     not reaped at the write either, and the pid written named it: the
//     write moved it, and "moved" is said of it alone.
//
// Any doubt (another start time or namespace, an identity not recorded,
// a zombie, a process reaped at any step) is "gone": nothing is written,
// or what was written is not called moved. What is left: the kernel moves
// by pid number only (there is no cgroup.procs write by pidfd), so between
// the last check and the write (a few microseconds) the process could
// exit, be reaped by its parent and the pid counter wrap to the same
// number for a new process; that process would be moved and the outcome
// would still be "gone", never "moved". A tenant cannot pick a pid in the
// host's namespace, only make the counter go round (pid_max forks). The
// identity itself cannot tell apart two processes of one pid namespace
// that held the pid within one clock tick (10 ms): that too needs the
// counter to go round. Holding the pid through the write would take
// ptrace (a traced process is not reaped until its tracer waits), too
// much to do to a tenant's process for this.
func move(l *cgroup.Layout, fs procfs.FS, r *procfs.Reader, m *cgroup.Membership, e evidence.Escape) Outcome {
	o := Outcome{Escape: e}
	p, err := fs.Pin(e.PID)
	if err != nil {
		o.Gone, o.Err = gone(err)
		return o
	}
	defer p.Close()
	err = l.MoveChecked(e.Want.Hierarchy, e.Want.Rel, e.PID, func() error { return confirmed(r, p, e) })
	if err != nil {
		o.Gone, o.Err = gone(err)
		return o
	}
	o.Written = true
	// Verify from the kernel's side, not from our write's success: still
	// the escape's process (it may have exited since), and its cgroup.
	// The read back is last: m points into the reader's buffer.
	err = confirmed(r, p, e)
	var b []byte
	if err == nil {
		b, err = r.PinnedCgroup(p)
	}
	if err == nil {
		err = cgroup.ParseProcCgroup(b, m)
	}
	if err != nil {
		o.Gone, o.Err = gone(err)
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

// gone sorts an error of move: the process is gone (nil error), or
// moving it failed.
func gone(err error) (bool, error) {
	if procfs.IsGone(err) || errors.Is(err, errOther) {
		return true, nil
	}
	return false, err
}

// confirmed reads the pinned process and says whether it is still e's:
// errUnconfirmed when the scan recorded no identity to check (nothing is
// moved, and the escape stays: the process may live), errOther when its
// identity differs, or it exited
// (a zombie's pid is not reused, but there is nothing left to move);
// procfs.ErrGone once it was reaped.
func confirmed(r *procfs.Reader, p *procfs.Pinned, e evidence.Escape) error {
	st, err := r.PinnedStat(p)
	if err != nil {
		return err
	}
	if st.State == 'Z' || st.State == 'X' || st.State == 'x' {
		return fmt.Errorf("pid %d exited: %w", e.PID, errOther)
	}
	if e.StartTime == 0 || e.PidNS == 0 {
		return fmt.Errorf("pid %d: the scan recorded no start time or pid namespace to confirm it by: %w", e.PID, errUnconfirmed)
	}
	if st.StartTime != e.StartTime {
		return fmt.Errorf("pid %d started at tick %d, the escape's at %d: %w", e.PID, st.StartTime, e.StartTime, errOther)
	}
	ns, err := r.PinnedPidNS(p)
	if err != nil {
		return err
	}
	if ns != e.PidNS {
		return fmt.Errorf("pid %d is in pid namespace %d, the escape's in %d: %w", e.PID, ns, e.PidNS, errOther)
	}
	return nil
}

// outcomeMeasured are the data of a heal that change from one try to the
// next while the escape stays the same.
var outcomeMeasured = []string{"actual", "fix_error", "after_fix", "fix_deferred"}

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
	case o.Deferred:
		f.Detail += "; moving it back is deferred: the heal budget is spent"
		f.Data["fix_deferred"] = "true"
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
// outcome's finding in place of its escape's (Compose): what validate
// --fix does. It returns the outcomes.
func Report(rep *validator.Report, src *snapshot.Source, h Healer) []Outcome {
	return ReportWithin(rep, src, h, nil)
}

// ReportWithin is Report healing within b (Heal), what watch does.
func ReportWithin(rep *validator.Report, src *snapshot.Source, h Healer, b *Budget) []Outcome {
	outs := Heal(*rep, src, h, b)
	*rep = Compose(*rep, outs)
	return outs
}

// Heal heals the escapes among rep's findings with h, at most b.Left()
// processes (nil b: no cap), and returns one Outcome per escape, in the
// report's order; rep itself is not changed (Compose is the judged
// report). The escapes of processes past the budget are Deferred, and the
// processes healed are spent from b; a process is counted once, whichever
// hierarchies it is out in. The snapshot the checks judged is asked for
// only when there is an escape: one was confirmed on it, so it is read by
// then (a drain whose budget ran out while the read went on has no escape
// and does not wait for it).
func Heal(rep validator.Report, src *snapshot.Source, h Healer, b *Budget) []Outcome {
	var all []Outcome
	admit := admission{left: -1, in: map[string]bool{}}
	if b != nil {
		release, err := b.hold()
		if err != nil {
			admit.left = 0 // the record cannot be read: move nothing, defer all
		} else {
			defer release() //nolint:errcheck // a lost write undercounts at most this heal's moves
			admit.left = b.Left()
		}
	}
	for _, r := range rep.Results {
		escapes := evidence.Escapes(r.Findings)
		if len(escapes) == 0 {
			continue
		}
		tried, n := admit.split(escapes)
		var moved []Outcome
		if len(tried) > 0 {
			v, err := src.Get()
			if err != nil {
				return all // unreachable: the escapes were judged on it
			}
			moved = h.Heal(v, tried)
			if b != nil {
				b.Spend(n) // after the moves: counted for a Window from then
			}
		}
		for _, e := range escapes {
			o := Outcome{Escape: e, Deferred: true}
			if admit.in[processOf(e)] && len(moved) > 0 {
				o, moved = moved[0], moved[1:]
			}
			all = append(all, o)
		}
	}
	return all
}

// Compose is rep with each outcome's finding in place of its escape's,
// every result judged again as Run judges (validator.Report.WithFindings):
// the one step from a run and its heal to the report, pure. outs are
// Heal's for rep, in its order; a result whose escapes have no outcome
// (Heal stopped short) stays as it was.
func Compose(rep validator.Report, outs []Outcome) validator.Report {
	for i, r := range rep.Results {
		n := len(evidence.Escapes(r.Findings))
		if n == 0 || n > len(outs) {
			continue
		}
		rep = rep.WithFindings(i, amend(r.Findings, outs[:n]))
		outs = outs[n:]
	}
	return rep
}

// admission decides which processes a ReportWithin heals: the first left
// (-1: all), in the findings' order.
type admission struct {
	left int
	in   map[string]bool
}

// split returns the escapes to heal, in order, and how many processes they
// add to those admitted.
func (a *admission) split(escapes []evidence.Escape) ([]evidence.Escape, int) {
	var tried []evidence.Escape
	n := 0
	for _, e := range escapes {
		p := processOf(e)
		if !a.in[p] && a.left != 0 {
			a.in[p] = true
			a.left--
			n++
		}
		if a.in[p] {
			tried = append(tried, e)
		}
	}
	return tried, n
}

// processOf names an escape's process across hierarchies: its container
// and pid.
func processOf(e evidence.Escape) string { return e.Container + "/" + strconv.Itoa(e.PID) }

// amend puts each outcome's finding in place of its escape's, in order.
func amend(fs []validator.Finding, outs []Outcome) []validator.Finding {
	amended := make([]validator.Finding, 0, len(fs))
	next := 0
	for _, f := range fs {
		if _, ok := f.Evidence.(evidence.Escape); !ok { // the one place heal reads Evidence
			amended = append(amended, f)
			continue
		}
		if hf, ok := outs[next].Finding(); ok {
			amended = append(amended, hf)
		}
		next++
	}
	return amended
}
