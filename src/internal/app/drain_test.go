package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"code.cloudfoundry.org/lager/v3/lagertest"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/drain"
	"github.com/cloudfoundry/cellguard/src/internal/evidence"
	"github.com/cloudfoundry/cellguard/src/internal/heal"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// newDrain is a drain of args whose validation is run: the use case
// decides from whatever validation it is given.
func newDrain(t *testing.T, args []string, run func(ctx context.Context) validator.Report) (*Drain, *bytes.Buffer) {
	t.Helper()
	var stderr bytes.Buffer
	dir := t.TempDir()
	return &Drain{Call: drain.Parse(args), Logger: lagertest.NewTestLogger("drain"), Stderr: &stderr,
		Now: func() time.Time { return time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC) }, Budget: time.Second,
		LiftFile: filepath.Join(dir, "lift.json"), Textfile: filepath.Join(dir, "drain.prom"),
		Prepare: func(context.Context) (Runner, error) { return runFunc(run), nil },
		Show:    func(validator.Report) {}}, &stderr
}

// runFunc is a Runner that is only its run: it has nothing to heal.
type runFunc func(ctx context.Context) validator.Report

func (f runFunc) Run(ctx context.Context) validator.Report { return f(ctx) }
func (runFunc) LogData() lager.Data                        { return nil }
func (runFunc) Heal(validator.Report, *heal.Budget) []heal.Outcome {
	panic("a drain healed with cellguard.drain.heal off")
}

// healRunner runs to a report with escapes and heals them as told: the
// moves themselves are heal's (src/internal/heal, and the box test
// TestDrainOnARealEscape), what drain makes of them is judged here.
type healRunner struct {
	rep    validator.Report
	outs   func([]evidence.Escape) []heal.Outcome
	budget *heal.Budget // as drain handed it over
}

func (r *healRunner) Run(context.Context) validator.Report { return r.rep }
func (*healRunner) LogData() lager.Data                    { return nil }
func (r *healRunner) Heal(rep validator.Report, b *heal.Budget) []heal.Outcome {
	r.budget = b
	var escapes []evidence.Escape
	for _, res := range rep.Results {
		escapes = append(escapes, evidence.Escapes(res.Findings)...)
	}
	return r.outs(escapes)
}

// escapedReport is a drain run's report of cgroup-integrity confirming
// pids escaped from c1 in blkio, judged as Run judges.
func escapedReport(pids ...int) validator.Report {
	blkio := &cgroup.Hierarchy{Name: "blkio"}
	var fs []validator.Finding
	for _, pid := range pids {
		fs = append(fs, evidence.Escape{Container: "c1", PID: pid, Comm: "sleep", StartTime: 5, PidNS: 7,
			Want: snapshot.Expectation{Hierarchy: blkio, Key: "blkio", Rel: "/garden/c1"}, Actual: "/"}.Finding())
	}
	rep := validator.Report{Phase: validator.Drain, Results: []validator.Result{{ID: "cgroup-integrity", Severity: validator.Blocking}}}
	return rep.WithFindings(0, fs)
}

func blocked(context.Context) validator.Report {
	return validator.Report{Phase: validator.Drain, Blocked: true,
		Results: []validator.Result{{ID: "cgroup-integrity", Status: validator.Fail, Blocking: true}}}
}

func TestDrainDecidesFromTheInjectedValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		run     func(context.Context) validator.Report
		outcome drain.Outcome
	}{
		{"clean update", []string{"job_changed", "hash_changed"}, func(context.Context) validator.Report { return validator.Report{} }, drain.Pass},
		{"blocking update", []string{"job_changed", "hash_changed"}, blocked, drain.Blocked},
		{"blocking shutdown", []string{"job_shutdown", "hash_unchanged"}, blocked, drain.ReleasedOnShutdown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, stderr := newDrain(t, tc.args, tc.run)
			dec := d.Run(context.Background(), nil)
			if dec.Outcome != tc.outcome {
				t.Fatalf("outcome %s, want %s\n%s", dec.Outcome, tc.outcome, stderr)
			}
			b, err := os.ReadFile(d.Textfile)
			if err != nil || !strings.Contains(string(b), `outcome="`+string(tc.outcome)+`"} 1`) {
				t.Fatalf("textfile (%v):\n%s", err, b)
			}
		})
	}
}

// A drain that could not start, or whose validation cannot be built,
// decides could_not_run without validating, and says why.
func TestDrainCouldNotRunValidatesNothing(t *testing.T) {
	ran := false
	run := func(context.Context) validator.Report { ran = true; return validator.Report{} }
	d, stderr := newDrain(t, []string{"job_changed"}, run)
	dec := d.Run(context.Background(), &CouldNotRun{Err: errors.New("config: bad"), Hint: "fix it"})
	if dec.Outcome != drain.CouldNotRun || ran || !strings.Contains(stderr.String(), "cellguard: hint: fix it") {
		t.Fatalf("outcome %s, validated %v\n%s", dec.Outcome, ran, stderr)
	}
	d, stderr = newDrain(t, []string{"job_changed"}, run)
	d.Prepare = func(context.Context) (Runner, error) { return nil, errors.New("open proc: gone") }
	if dec := d.Run(context.Background(), nil); dec.Outcome != drain.CouldNotRun || ran || !strings.Contains(stderr.String(), "open proc: gone") {
		t.Fatalf("outcome %s, validated %v\n%s", dec.Outcome, ran, stderr)
	}
}

// The budget reaches the validation as its context's deadline.
func TestDrainBoundsTheValidationByItsBudget(t *testing.T) {
	var left time.Duration
	d, _ := newDrain(t, []string{"job_changed"}, func(ctx context.Context) validator.Report {
		dl, ok := ctx.Deadline()
		if ok {
			left = time.Until(dl)
		}
		return validator.Report{}
	})
	d.Budget = 300 * time.Millisecond
	d.Run(context.Background(), nil)
	if left <= 0 || left > 300*time.Millisecond {
		t.Fatalf("the validation had %v left, want at most the 300ms budget", left)
	}
}

// With cellguard.drain.heal, drain heals what the checks confirmed escaped
// within heal_per_minute, judges the report again, and decides on that:
// healed lets the VM go; what it could not heal blocks an update, each
// process named with why, in the decision, the report and the log.
func TestDrainHealsThenBlocksOnlyOnWhatItCouldNotHeal(t *testing.T) {
	moved := func(es []evidence.Escape) []heal.Outcome {
		var outs []heal.Outcome
		for _, e := range es {
			outs = append(outs, heal.Outcome{Escape: e, Written: true, Moved: true})
		}
		return outs
	}
	cgroupGone := errors.New("move pid 12: open /sys/fs/cgroup/blkio/garden/c1/cgroup.procs: no such cgroup")
	someLeft := func(es []evidence.Escape) []heal.Outcome {
		outs := moved(es)
		outs[1] = heal.Outcome{Escape: es[1], Err: cgroupGone}
		outs[2] = heal.Outcome{Escape: es[2], Deferred: true}
		outs[3] = heal.Outcome{Escape: es[3], Gone: true}
		return outs
	}
	for _, tc := range []struct {
		name    string
		args    []string
		outs    func([]evidence.Escape) []heal.Outcome
		outcome drain.Outcome
		says    []string
	}{
		{"every escape healed: an update goes", []string{"job_changed", "hash_changed"}, moved, drain.Healed,
			[]string{"moved 4 escaped processes back", "pid 11 (sleep) had escaped in blkio to /; moved back to /garden/c1"}},
		{"what could not be healed blocks an update", []string{"job_changed", "hash_changed"}, someLeft, drain.Blocked,
			[]string{"moved 1 escaped process back", "could not heal 2",
				"pid 12 (sleep) of c1 in blkio: moving it back failed: " + cgroupGone.Error(),
				"pid 13 (sleep) of c1 in blkio: moving it back is deferred: the heal budget is spent (cellguard.watch.heal_per_minute 3)"}},
		{"what could not be healed is released on shutdown", []string{"job_shutdown", "hash_unchanged"}, someLeft, drain.ReleasedOnShutdown,
			[]string{"could not heal 2", "pid 12 (sleep) of c1 in blkio: moving it back failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &healRunner{rep: escapedReport(11, 12, 13, 14), outs: tc.outs}
			d, stderr := newDrain(t, tc.args, nil)
			logs := d.Logger.(*lagertest.TestLogger)
			d.Prepare = func(context.Context) (Runner, error) { return r, nil }
			d.Heal, d.HealPerMinute = true, 3
			d.HealLedger = filepath.Join(t.TempDir(), "heal-ledger")
			var shown validator.Report
			d.Show = func(rep validator.Report) { shown = rep }
			dec := d.Run(context.Background(), nil)
			if dec.Outcome != tc.outcome {
				t.Fatalf("outcome %s, want %s: %s\n%s", dec.Outcome, tc.outcome, dec.Reason, stderr)
			}
			if r.budget == nil || r.budget.PerMinute() != 3 || r.budget.Ledger() != d.HealLedger {
				t.Fatalf("drain healed with budget %+v, want heal_per_minute's 3 on the host's record %s (shared with watch)", r.budget, d.HealLedger)
			}
			all := dec.Reason + "\n" + stderr.String() + "\n" + string(logs.Buffer().Contents())
			for _, f := range shown.Results[0].Findings {
				all += "\n" + f.Detail
			}
			for _, want := range tc.says {
				if !strings.Contains(all, want) {
					t.Errorf("neither the decision, the report nor the log says %q:\n%s", want, all)
				}
			}
			if n := strings.Count(string(logs.Buffer().Contents()), `"message":"drain.heal"`); n != 4 {
				t.Errorf("%d heal log lines, want one per process (4)", n)
			}
			b, err := os.ReadFile(d.Textfile)
			if err != nil || !strings.Contains(string(b), `outcome="`+string(tc.outcome)+`"} 1`) {
				t.Fatalf("textfile (%v):\n%s", err, b)
			}
		})
	}
}

// Off (and with nothing escaped) drain heals nothing: today's drain.
func TestDrainHealOffIsTodaysDrain(t *testing.T) {
	d, stderr := newDrain(t, []string{"job_changed", "hash_changed"}, func(context.Context) validator.Report { return escapedReport(11) })
	if dec := d.Run(context.Background(), nil); dec.Outcome != drain.Blocked || strings.Contains(dec.Reason, "heal") {
		t.Fatalf("outcome %s (%s), want blocked as before drain healed\n%s", dec.Outcome, dec.Reason, stderr)
	}
	d, stderr = newDrain(t, []string{"job_changed", "hash_changed"}, nil)
	r := &healRunner{rep: validator.Report{Phase: validator.Drain}, outs: func([]evidence.Escape) []heal.Outcome { return nil }}
	d.Prepare = func(context.Context) (Runner, error) { return r, nil }
	d.Heal = true
	if dec := d.Run(context.Background(), nil); dec.Outcome != drain.Pass {
		t.Fatalf("outcome %s (%s), want pass\n%s", dec.Outcome, dec.Reason, stderr)
	}
}
