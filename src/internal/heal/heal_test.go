package heal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/checks"
	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// judge runs the checks on h with one snapshot, as validate does, and
// returns the report and that snapshot.
func judge(t *testing.T, h *fakehost.Host) (validator.Report, *snapshot.Source) {
	t.Helper()
	src := snapshot.Lazy(snapshot.Spec{Root: h.Root})
	var cs []validator.Check
	for _, c := range checks.All(facts.New(facts.Spec{Root: h.Root, Snapshot: src}), checks.Policy{}) {
		if c.Meta().ID == "cgroup-integrity" {
			cs = append(cs, c)
		}
	}
	return validator.Run(context.Background(), cs, validator.Options{Phase: validator.Drain}), src
}

// The fixture does not play kernel: writing cgroup.procs changes nothing in
// /proc/<pid>/cgroup. So the Mover must write the pid into the recorded
// cgroup and then, reading it back, refuse to call it moved.
func TestMoverWritesAndVerifies(t *testing.T) {
	h := fakehost.New(t, cgroup.Legacy)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/garden/c1"}, 100, 2, 500)
	h.Move(101, "blkio", "/system.slice")
	procs := filepath.Join(h.Root, "sys/fs/cgroup/blkio/garden/c1/cgroup.procs")
	if err := os.WriteFile(procs, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, src := judge(t, h)
	outs := Report(&rep, src, Mover{})
	if len(outs) != 1 || !outs[0].Written || outs[0].Moved || outs[0].After != "/system.slice" {
		t.Fatalf("outcomes %+v", outs)
	}
	r := rep.Results[0]
	var bad []validator.Finding
	for _, f := range r.Findings {
		if f.Status.IsProblem() {
			bad = append(bad, f)
		}
	}
	if len(bad) != 1 || bad[0].Status != validator.Fail || bad[0].Data["after_fix"] != "/system.slice" || !rep.Blocked {
		t.Fatalf("report %+v", rep)
	}
	if b, err := os.ReadFile(procs); err != nil || string(b) != "101" {
		t.Fatalf("heal wrote %q to the recorded cgroup (%v)", b, err)
	}
}

// moved is a Healer whose moves hold, or are of processes gone.
type moved struct{ gone bool }

func (m moved) Heal(_ *snapshot.Host, es []checks.Escape) []Outcome {
	out := make([]Outcome, len(es))
	for i, e := range es {
		out[i] = Outcome{Escape: e, Written: !m.gone, Moved: !m.gone, Gone: m.gone}
	}
	return out
}

// What the heal did replaces the escape in the report, and the verdict
// follows: an escape moved back is a warning and blocks nothing; one whose
// process is gone is no finding at all.
func TestReportJudgesAgain(t *testing.T) {
	for _, tc := range []struct {
		name   string
		h      Healer
		status validator.Status
		n      int
	}{
		{"moved", moved{}, validator.Warn, 1},
		{"gone", moved{gone: true}, validator.Pass, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fakehost.New(t, cgroup.Unified)
			h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/garden/c1"}, 100, 2, 500)
			h.Move(101, "", "/system.slice")
			rep, src := judge(t, h)
			if !rep.Blocked {
				t.Fatal("the escape did not block before the heal")
			}
			Report(&rep, src, tc.h)
			r := rep.Results[0]
			n := 0
			for _, f := range r.Findings {
				if f.Status.IsProblem() {
					n++
					if f.Data["fixed"] != "true" || f.Status != validator.Warn {
						t.Errorf("finding %+v", f)
					}
				}
			}
			if rep.Blocked || r.Blocking || r.Status != tc.status || n != tc.n {
				t.Fatalf("after the heal: blocked %v, status %s, %d problems: %+v", rep.Blocked, r.Status, n, r)
			}
		})
	}
}

// Heal acts and leaves the run's report as the checks judged it; Compose
// is the judged report, and composing the same outcomes again gives the
// same report: acting and judging are apart.
func TestHealActsComposeJudges(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/garden/c1"}, 100, 2, 500)
	h.Move(101, "", "/system.slice")
	rep, src := judge(t, h)
	outs := Heal(rep, src, moved{}, nil)
	if len(outs) != 1 || !outs[0].Moved {
		t.Fatalf("outcomes %+v", outs)
	}
	if !rep.Blocked || rep.Results[0].Status != validator.Fail {
		t.Fatalf("Heal changed the checks' report: %+v", rep)
	}
	healed := Compose(rep, outs)
	if healed.Blocked || healed.Results[0].Status != validator.Warn {
		t.Fatalf("composed: %+v", healed)
	}
	if !rep.Blocked || rep.Results[0].Findings[0].Status != validator.Fail {
		t.Fatalf("Compose changed the report it was given: %+v", rep)
	}
	if again := Compose(rep, outs); !reflect.DeepEqual(again, healed) {
		t.Fatalf("Compose is not a function of its input:\n%+v\n%+v", again, healed)
	}
}

// A report without escapes never asks for the snapshot.
func TestReportWithoutEscapesReadsNothing(t *testing.T) {
	src := snapshot.From(func() (*snapshot.Host, error) { return nil, errors.New("read") })
	rep := validator.Report{Results: []validator.Result{{ID: "x", Findings: []validator.Finding{{Status: validator.Fail}}}}}
	if outs := Report(&rep, src, Mover{}); len(outs) != 0 {
		t.Fatalf("outcomes %+v", outs)
	}
}

// Each outcome renders as validate --fix always reported it: the detail's
// ending, the status and the data keys (JSON's contract), and which keys
// are measurements.
func TestOutcomeFinding(t *testing.T) {
	e := checks.Escape{Container: "c1", PID: 101, Comm: "app", Actual: "/system.slice",
		Want: snapshot.Expectation{Hierarchy: &cgroup.Hierarchy{Name: "blkio"}, Key: "blkio", Rel: "/garden/c1"}}
	for _, tc := range []struct {
		name   string
		o      Outcome
		status validator.Status
		detail string
		data   map[string]string
	}{
		{"moved", Outcome{Escape: e, Written: true, Moved: true}, validator.Warn,
			"pid 101 (app) had escaped in blkio to /system.slice; moved back to /garden/c1", map[string]string{"fixed": "true"}},
		{"write failed", Outcome{Escape: e, Err: errors.New("EACCES")}, validator.Fail,
			"pid 101 (app) escaped in blkio: in /system.slice, state says /garden/c1; moving it back failed", map[string]string{"fix_error": "EACCES"}},
		{"still outside", Outcome{Escape: e, Written: true, After: "/system.slice"}, validator.Fail,
			"pid 101 (app) escaped in blkio: in /system.slice, state says /garden/c1; moved it back but it is still outside", map[string]string{"after_fix": "/system.slice"}},
		{"read back failed", Outcome{Escape: e, Written: true, Err: errors.New("parse")}, validator.Fail,
			"pid 101 (app) escaped in blkio: in /system.slice, state says /garden/c1; moved it back but it is still outside", map[string]string{"fix_error": "parse", "after_fix": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := tc.o.Finding()
			if !ok || f.Status != tc.status || f.Detail != tc.detail || f.Subject != "c1" {
				t.Fatalf("finding %+v", f)
			}
			for k, v := range tc.data {
				if got, ok := f.Data[k]; !ok || got != v {
					t.Errorf("data[%s] = %q, want %q", k, got, v)
				}
			}
			if f.Data["pid"] != "101" || f.Data["hierarchy"] != "blkio" {
				t.Errorf("escape's data lost: %v", f.Data)
			}
			if o, ok := f.Evidence.(Outcome); !ok || o.Escape.PID != 101 {
				t.Errorf("evidence %#v", f.Evidence)
			}
		})
	}
	if _, ok := (Outcome{Escape: e, Gone: true}).Finding(); ok {
		t.Error("a process gone has a finding")
	}
}

// TestMoverMovesOnlyTheConfirmedProcess: the pid is written only while
// /proc/<pid> is the process the escape recorded, by start time and pid
// namespace, and alive; otherwise the escape's process is gone and nothing
// is written. A fake /proc: each case changes what it says after the
// escape was confirmed (TestHealMovesOnlyTheConfirmedProcess does it with
// real processes).
func TestMoverMovesOnlyTheConfirmedProcess(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  func(h *fakehost.Host, e *checks.Escape)
		written bool
		kept    bool // not written, and not gone either: the finding stays
	}{
		{"the same process", func(*fakehost.Host, *checks.Escape) {}, true, false},
		{"another start time", func(h *fakehost.Host, _ *checks.Escape) {
			p := h.Get(101)
			p.Start++
			h.Update(p)
		}, false, false},
		{"another pid namespace", func(h *fakehost.Host, _ *checks.Escape) {
			p := h.Get(101)
			p.NS++
			h.Update(p)
		}, false, false},
		{"a zombie", func(h *fakehost.Host, _ *checks.Escape) {
			p := h.Get(101)
			p.State = 'Z'
			h.Update(p)
		}, false, false},
		{"exited", func(h *fakehost.Host, _ *checks.Escape) { h.RemoveProcDir(101) }, false, false},
		// An identity the scan could not record proves nothing either way:
		// the process may well live, so it is neither moved nor dropped
		// (a drain would otherwise let the VM go with it still out).
		{"no pid namespace recorded", func(_ *fakehost.Host, e *checks.Escape) { e.PidNS = 0 }, false, true},
		{"no start time recorded", func(_ *fakehost.Host, e *checks.Escape) { e.StartTime = 0 }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fakehost.New(t, cgroup.Legacy)
			h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/garden/c1"}, 100, 2, 500)
			h.Move(101, "blkio", "/system.slice")
			rep, src := judge(t, h)
			es := checks.Escapes(rep.Results[0].Findings)
			if len(es) != 1 || es[0].StartTime != 500 || es[0].PidNS == 0 || es[0].PidNS != h.Get(101).NS {
				t.Fatalf("escapes %+v: want pid 101's start time and pid namespace", es)
			}
			v, err := src.Get()
			if err != nil {
				t.Fatal(err)
			}
			tc.change(h, &es[0])
			// The fixture does not play kernel: what the file holds after
			// the heal is what the heal wrote.
			procs := filepath.Join(h.Root, "sys/fs/cgroup/blkio/garden/c1/cgroup.procs")
			if err := os.WriteFile(procs, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			o := Mover{}.Heal(v, es)[0]
			b, err := os.ReadFile(procs)
			if err != nil {
				t.Fatal(err)
			}
			if tc.written {
				if string(b) != "101" || !o.Written || o.Gone {
					t.Fatalf("outcome %+v, wrote %q: want 101 written", o, b)
				}
				return
			}
			if tc.kept {
				if f, ok := o.Finding(); len(b) != 0 || o.Written || o.Moved || o.Gone || !ok || f.Status != validator.Fail {
					t.Fatalf("outcome %+v (finding %+v), wrote %q: want nothing written and the escape kept as a failure", o, f, b)
				}
				return
			}
			if len(b) != 0 || o.Written || o.Moved || !o.Gone {
				t.Fatalf("outcome %+v, wrote %q: want gone and nothing written", o, b)
			}
		})
	}
}

// recorder is a Healer whose moves hold; it records the processes it was
// handed, per call.
type recorder struct{ calls [][]int }

func (r *recorder) Heal(v *snapshot.Host, es []checks.Escape) []Outcome {
	var pids []int
	for _, e := range es {
		if len(pids) == 0 || pids[len(pids)-1] != e.PID {
			pids = append(pids, e.PID)
		}
	}
	r.calls = append(r.calls, pids)
	return moved{}.Heal(v, es)
}

// ReportWithin heals at most what the budget leaves, counting a process
// once whatever hierarchies it is out in, and reports the others as
// escapes still, deferred by the budget; they are healed in later
// windows, never more than the cap in one.
func TestReportWithinDefersPastTheBudget(t *testing.T) {
	h := fakehost.New(t, cgroup.Legacy)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/garden/c1"}, 100, 6, 500)
	for pid := 101; pid <= 105; pid++ {
		h.Move(pid, "blkio", "/system.slice")
		h.Move(pid, "cpu,cpuacct", "/system.slice")
	}
	c := newFakeClock()
	b := NewBudget(2, c.Now)
	r := &recorder{}
	heals := func() (validator.Report, []Outcome) {
		rep, src := judge(t, h)
		c.advance(time.Second) // the moves take time
		return rep, ReportWithin(&rep, src, r, b)
	}

	rep, outs := heals()
	if len(r.calls) != 1 || fmt.Sprint(r.calls[0]) != "[101 102]" {
		t.Fatalf("healer handed %v, want pids 101 and 102 in one call", r.calls)
	}
	deferred := 0
	for _, o := range outs {
		if o.Deferred {
			deferred++
			if o.Failed() || o.Moved || o.Written {
				t.Errorf("deferred outcome %+v", o)
			}
		}
	}
	if deferred != 6 { // 103-105, two hierarchies each
		t.Errorf("%d deferred escapes, want 6", deferred)
	}
	n := 0
	for _, f := range rep.Results[0].Findings {
		if f.Data["fix_deferred"] == "true" {
			n++
			if f.Status != validator.Fail || !strings.HasSuffix(f.Detail, "; moving it back is deferred: the heal budget is spent") {
				t.Errorf("deferred finding %+v", f)
			}
		}
	}
	if n != 6 || !rep.Blocked {
		t.Fatalf("%d deferred findings, blocked %v: the escapes left must stay failures", n, rep.Blocked)
	}

	c.advance(50 * time.Second)
	if heals(); len(r.calls) != 1 {
		t.Fatalf("healed again within the minute: %v", r.calls)
	}
	c.advance(10 * time.Second)
	if heals(); len(r.calls) != 2 || len(r.calls[1]) != 2 {
		t.Fatalf("a minute after the first moves: %v, want two more processes", r.calls)
	}
}

// Heal never moves a process into, nor makes, a cgroup the runtime's record
// names but nothing made (guardian's CPU throttler rewrites a privileged
// container's record to /garden/good/<h>; runc put it at /system.slice/<h>),
// while it still moves back a real escape beside it: the recorded cgroup
// exists, the process is elsewhere.
func TestMoverLeavesFalseRecordsHealsEscapes(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.Cgroup("/garden/good")
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/containerd/runc", Namespace: "garden", ID: "p2",
		Cgroup: "/system.slice/p2", Recorded: "/garden/good/p2"}, 1445, 1, 900)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/containerd/runc", Namespace: "garden", ID: "u2",
		Cgroup: "/garden/good/u2/init"}, 1255, 2, 800)
	h.Move(1256, "", "/system.slice/p2")
	procs := filepath.Join(h.Root, "sys/fs/cgroup/garden/good/u2/init/cgroup.procs")
	if err := os.WriteFile(procs, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, src := judge(t, h)
	outs := Report(&rep, src, Mover{})
	if len(outs) != 1 || outs[0].Escape.PID != 1256 || outs[0].Escape.Want.Rel != "/garden/good/u2/init" || !outs[0].Written {
		t.Fatalf("outcomes %+v", outs)
	}
	if b, err := os.ReadFile(procs); err != nil || string(b) != "1256" {
		t.Fatalf("heal wrote %q to the recorded cgroup (%v)", b, err)
	}
	if _, err := os.Stat(filepath.Join(h.Root, "sys/fs/cgroup/garden/good/p2")); !os.IsNotExist(err) {
		t.Fatalf("heal made the false record's cgroup: %v", err)
	}
}
