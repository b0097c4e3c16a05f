package validator

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeCheck is a check whose findings and error are given.
type fakeCheck struct {
	meta     Meta
	findings []Finding
	err      error
}

func (c fakeCheck) Meta() Meta                             { return c.meta }
func (c fakeCheck) Run(context.Context) ([]Finding, error) { return c.findings, c.err }

func meta(id string, pre, drain Severity) Meta {
	return Meta{ID: id, Title: id + " title", Story: "story", Fix: "fix", Layouts: []string{"unified"},
		Severity: map[Phase]Severity{PreStart: pre, Drain: drain}}
}

func TestRunVerdicts(t *testing.T) {
	fail := []Finding{{Subject: "c1", Status: Fail, Detail: "escaped"}}
	for _, tc := range []struct {
		name         string
		check        fakeCheck
		opts         Options
		wantStatus   Status
		wantBlocking bool
	}{
		{"no findings pass", fakeCheck{meta: meta("a", Blocking, Warning)}, Options{Phase: PreStart}, Pass, false},
		{"only skips skip", fakeCheck{meta: meta("a", Blocking, Warning), findings: []Finding{{Status: Skip}}}, Options{Phase: PreStart}, Skip, false},
		{"skip and pass pass", fakeCheck{meta: meta("a", Blocking, Warning), findings: []Finding{{Status: Skip}, {Status: Pass}}}, Options{Phase: PreStart}, Pass, false},
		{"blocking fail blocks", fakeCheck{meta: meta("a", Blocking, Warning), findings: fail}, Options{Phase: PreStart}, Fail, true},
		{"a warning check's fail is a warn", fakeCheck{meta: meta("a", Blocking, Warning), findings: fail}, Options{Phase: Drain}, Warn, false},
		{"an error blocks a blocking check", fakeCheck{meta: meta("a", Blocking, Warning), err: errors.New("no /proc")}, Options{Phase: PreStart}, Error, true},
		{"an error does not block a warning check", fakeCheck{meta: meta("a", Warning, Warning), err: errors.New("x")}, Options{Phase: PreStart}, Error, false},
		{"ignored fail does not block", fakeCheck{meta: meta("a", Blocking, Warning), findings: fail}, Options{Phase: PreStart, Ignore: []string{"a"}}, Fail, false},
		{"all ignores every check", fakeCheck{meta: meta("a", Blocking, Warning), findings: fail}, Options{Phase: PreStart, Ignore: []string{IgnoreAll}}, Fail, false},
		{"override makes a warning block", fakeCheck{meta: meta("a", Warning, Warning), findings: fail},
			Options{Phase: Drain, SeverityOverride: map[string]Severity{"a": Blocking}}, Fail, true},
		{"a phase missing from Severity is a warning", fakeCheck{meta: Meta{ID: "a"}, findings: fail}, Options{Phase: Drain}, Warn, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := Run(context.Background(), []Check{tc.check}, tc.opts)
			r := rep.Results[0]
			if r.Status != tc.wantStatus || r.Blocking != tc.wantBlocking || rep.Blocked != tc.wantBlocking {
				t.Fatalf("status %s blocking %v (report blocked %v), want %s %v", r.Status, r.Blocking, rep.Blocked, tc.wantStatus, tc.wantBlocking)
			}
			if tc.check.err != nil && r.Error != tc.check.err.Error() {
				t.Errorf("Error %q, want the check's error", r.Error)
			}
		})
	}
}

// Run keeps the registry's order, fills each result from the check's Meta
// and times each check with the clock it is given.
func TestRunOrderMetaAndDuration(t *testing.T) {
	m := meta("b", Blocking, Warning)
	m.References = []string{"https://example.org/1"}
	checks := []Check{fakeCheck{meta: meta("z", Warning, Warning)}, fakeCheck{meta: m}}
	// The checks run at once, so the clock is shared between goroutines.
	var mu sync.Mutex
	tick := time.Unix(0, 0)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); tick = tick.Add(time.Second); return tick }
	rep := Run(context.Background(), checks, Options{Phase: PreStart, Now: now})
	if rep.Phase != PreStart || rep.Results[0].ID != "z" || rep.Results[1].ID != "b" {
		t.Fatalf("results out of order: %+v", rep)
	}
	r := rep.Results[1]
	if r.Title != "b title" || r.Story != "story" || r.Fix != "fix" || !reflect.DeepEqual(r.References, m.References) || r.Severity != Blocking {
		t.Errorf("result does not carry the check's Meta: %+v", r)
	}
	for _, r := range rep.Results {
		if r.Duration <= 0 {
			t.Errorf("%s: duration %v from a clock that advances", r.ID, r.Duration)
		}
	}
}

func TestValidate(t *testing.T) {
	good := fakeCheck{meta: meta("a", Blocking, Warning)}
	for _, tc := range []struct {
		name   string
		checks []Check
		want   string
	}{
		{"ok", []Check{good, fakeCheck{meta: meta("b", Warning, Warning)}}, ""},
		{"no id", []Check{fakeCheck{meta: Meta{Title: "t", Story: "s", Fix: "f"}}}, "has no id"},
		{"twice", []Check{good, good}, "registered twice"},
		{"no story", []Check{fakeCheck{meta: Meta{ID: "a", Title: "t", Fix: "f"}}}, "title, story and fix are required"},
		{"no layouts", []Check{fakeCheck{meta: Meta{ID: "a", Title: "t", Story: "s", Fix: "f"}}}, "layouts are required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.checks)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestIDsSorted(t *testing.T) {
	got := IDs([]Check{fakeCheck{meta: Meta{ID: "b"}}, fakeCheck{meta: Meta{ID: "a"}}})
	if !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("IDs = %q", got)
	}
}

func TestPolicyOptions(t *testing.T) {
	registry := []Check{
		fakeCheck{meta: meta("integrity", Blocking, Blocking)},
		fakeCheck{meta: meta("versions", Blocking, Warning)},
		fakeCheck{meta: meta("ghosts", Warning, Warning)},
	}
	for _, tc := range []struct {
		name         string
		policy       Policy
		phase        Phase
		wantOverride map[string]Severity
		wantErr      string // the PolicyError's list, "" for none
	}{
		{name: "no lists keeps every severity", phase: PreStart},
		{name: "ignore all", policy: Policy{Ignore: []string{IgnoreAll}}, phase: Drain},
		{name: "unknown ignored id", policy: Policy{Ignore: []string{"integrty"}}, phase: Drain, wantErr: "ignore"},
		{name: "a blocking list names exactly the blockers", phase: PreStart,
			policy:       Policy{Blocking: map[Phase][]string{PreStart: {"ghosts"}}},
			wantOverride: map[string]Severity{"ghosts": Blocking, "integrity": Warning, "versions": Warning}},
		{name: "another phase's list does not apply", phase: Drain,
			policy: Policy{Blocking: map[Phase][]string{PreStart: {"ghosts"}}}},
		{name: "an empty list blocks nothing", phase: Drain,
			policy:       Policy{Blocking: map[Phase][]string{Drain: {}}},
			wantOverride: map[string]Severity{"integrity": Warning}},
		{name: "all is not a check id in a blocking list", phase: Drain,
			policy: Policy{Blocking: map[Phase][]string{Drain: {IgnoreAll}}}, wantErr: "blocking"},
		{name: "unknown blocking id", phase: PreStart,
			policy: Policy{Blocking: map[Phase][]string{PreStart: {"nope"}}}, wantErr: "blocking"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := tc.policy.Options(registry, tc.phase)
			if tc.wantErr != "" {
				var perr *PolicyError
				if !errors.As(err, &perr) || perr.List != tc.wantErr || !errors.Is(err, ErrUnknownID) {
					t.Fatalf("Options = %v, want a PolicyError of list %s wrapping ErrUnknownID", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if opts.Phase != tc.phase || !reflect.DeepEqual(opts.Ignore, tc.policy.Ignore) {
				t.Errorf("Options = %+v", opts)
			}
			if len(opts.SeverityOverride) != len(tc.wantOverride) || len(tc.wantOverride) > 0 && !reflect.DeepEqual(opts.SeverityOverride, tc.wantOverride) {
				t.Errorf("SeverityOverride = %v, want %v", opts.SeverityOverride, tc.wantOverride)
			}
		})
	}
}

// hangingCheck runs until release is closed, ignoring its context, as a
// check stuck in a syscall or on a hung D-Bus peer does.
type hangingCheck struct {
	meta    Meta
	release chan struct{}
}

func (c hangingCheck) Meta() Meta { return c.meta }
func (c hangingCheck) Run(context.Context) ([]Finding, error) {
	<-c.release
	return []Finding{{Status: Fail, Detail: "too late to count"}}, nil
}

// doneCheck is a check that says when it has run.
type doneCheck struct {
	fakeCheck
	wg *sync.WaitGroup
}

func (c doneCheck) Run(ctx context.Context) ([]Finding, error) {
	defer c.wg.Done()
	return c.fakeCheck.Run(ctx)
}

// politeCheck returns the context's error once the run ends.
type politeCheck struct{ meta Meta }

func (c politeCheck) Meta() Meta { return c.meta }
func (c politeCheck) Run(ctx context.Context) ([]Finding, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// When the run's context ends (a drain's budget), Run returns what
// finished and marks the rest unfinished: an error result that never
// blocks, in a report marked incomplete. A check that finished keeps its
// verdict, blocking included.
func TestRunReturnsPartialResultsWhenContextEnds(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	fail := []Finding{{Subject: "c1", Status: Fail, Detail: "escaped"}}
	var fast sync.WaitGroup
	fast.Add(2)
	checks := []Check{
		doneCheck{fakeCheck{meta: meta("fast-fail", Blocking, Blocking), findings: fail}, &fast},
		hangingCheck{meta: meta("hung", Blocking, Blocking), release: release},
		politeCheck{meta: meta("polite", Blocking, Blocking)},
		doneCheck{fakeCheck{meta: meta("fast-pass", Blocking, Blocking)}, &fast},
	}
	ctx, cancel := context.WithCancel(context.Background())
	var rep Report
	returned := make(chan struct{})
	go func() {
		rep = Run(ctx, checks, Options{Phase: Drain})
		close(returned)
	}()
	// Nothing can end the run but the cancel: the hung check never returns
	// before release is closed, which is after the test. The wait also
	// lets the fast checks' results reach Run before the cancel.
	fast.Wait()
	select {
	case <-returned:
		t.Fatal("Run returned while a check was still running and the context was alive")
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	<-returned

	byID := map[string]Result{}
	for _, r := range rep.Results {
		byID[r.ID] = r
	}
	if got := []string{rep.Results[0].ID, rep.Results[1].ID, rep.Results[2].ID, rep.Results[3].ID}; !reflect.DeepEqual(got, []string{"fast-fail", "hung", "polite", "fast-pass"}) {
		t.Fatalf("results out of the checks' order: %v", got)
	}
	if r := byID["fast-fail"]; r.Unfinished || r.Status != Fail || !r.Blocking {
		t.Errorf("finished failing check: %+v", r)
	}
	if r := byID["fast-pass"]; r.Unfinished || r.Status != Pass {
		t.Errorf("finished passing check: %+v", r)
	}
	for _, id := range []string{"hung", "polite"} {
		r := byID[id]
		if !r.Unfinished || r.Status != Error || r.Blocking || !strings.Contains(r.Error, "did not finish") || r.Title != id+" title" {
			t.Errorf("%s: %+v, want unfinished, error, not blocking, with its Meta", id, r)
		}
	}
	if !rep.Incomplete || !rep.Blocked {
		t.Errorf("report incomplete %v blocked %v, want both (the finished check's failure still counts)", rep.Incomplete, rep.Blocked)
	}
}

// A context that ended before the run started leaves every check that
// waits for it unfinished, and the run still returns.
func TestRunWithAnEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep := Run(ctx, []Check{politeCheck{meta: meta("polite", Blocking, Blocking)}}, Options{Phase: Drain})
	if r := rep.Results[0]; !r.Unfinished || r.Blocking || !rep.Incomplete || rep.Blocked {
		t.Fatalf("report %+v", rep)
	}
}

type panickyCheck struct{ meta Meta }

func (c panickyCheck) Meta() Meta                             { return c.meta }
func (c panickyCheck) Run(context.Context) ([]Finding, error) { panic("index out of range") }

// A check that panics is an error result of that check; the others still
// report, and the process lives on to keep the drain contract.
func TestRunSurvivesAPanickingCheck(t *testing.T) {
	rep := Run(context.Background(), []Check{
		panickyCheck{meta: meta("boom", Warning, Warning)},
		fakeCheck{meta: meta("fine", Blocking, Blocking)},
	}, Options{Phase: Drain})
	if r := rep.Results[0]; r.Status != Error || !strings.Contains(r.Error, "check panicked: index out of range") || r.Blocking {
		t.Errorf("panicking check: %+v", r)
	}
	if r := rep.Results[1]; r.Status != Pass {
		t.Errorf("other check: %+v", r)
	}
}

// A finding's identity is its check, subject, status and Data without the
// keys the check names as measurements: where an escaped process is now
// changes nothing, which hierarchy it is in does.
func TestIdentityLeavesOutMeasured(t *testing.T) {
	f := func(hier, actual string) Finding {
		return Finding{Subject: "c1", Status: Fail, Measured: []string{"actual"},
			Data: map[string]string{"hierarchy": hier, "actual": actual}}
	}
	if f("cpu", "/").Identity("x") != f("cpu", "/system.slice").Identity("x") {
		t.Error("a measurement changed the identity")
	}
	if f("cpu", "/").Identity("x") == f("blkio", "/").Identity("x") {
		t.Error("another hierarchy is the same problem")
	}
	if f("cpu", "/").Identity("x") == f("cpu", "/").Identity("y") {
		t.Error("another check's finding is the same problem")
	}
}

// Run names each finding's measured keys from the check's Meta, and
// WithFindings judges a result and the report again, in a new report.
func TestMeasuredFromMetaAndWithFindings(t *testing.T) {
	c := &fakeMeasuring{}
	rep := Run(context.Background(), []Check{c}, Options{Phase: Drain})
	if !rep.Blocked || len(rep.Results[0].Findings[0].Measured) != 1 {
		t.Fatalf("report %+v", rep)
	}
	healed := rep.WithFindings(0, []Finding{{Status: Warn, Detail: "moved back"}})
	if r := healed.Results[0]; healed.Blocked || r.Blocking || r.Status != Warn {
		t.Fatalf("after WithFindings: %+v", healed)
	}
	if r := rep.Results[0]; !rep.Blocked || !r.Blocking || r.Status != Fail {
		t.Fatalf("WithFindings changed the report it was given: %+v", rep)
	}
	if !Warn.IsProblem() || !Error.IsProblem() || Pass.IsProblem() || Skip.IsProblem() {
		t.Error("IsProblem")
	}
}

type fakeMeasuring struct{}

func (*fakeMeasuring) Meta() Meta {
	return Meta{ID: "m", Title: "m", Story: "s", Fix: "f", Measured: []string{"age"},
		Severity: map[Phase]Severity{Drain: Blocking}}
}

func (*fakeMeasuring) Run(context.Context) ([]Finding, error) {
	return []Finding{{Status: Fail, Detail: "d", Data: map[string]string{"age": "3"}}}, nil
}

// A check lists at most MaxProblemFindings problems nobody acts on, and one
// summary counting the rest by kind; findings with Evidence (escapes, which
// heal moves and watch counts) and passes are all kept (issue 38, hole 3).
func TestRunCapsFindingsPerCheck(t *testing.T) {
	var fs []Finding
	for i := 0; i < 70; i++ {
		fs = append(fs, Finding{Status: Fail, Detail: "small pipe", Data: map[string]string{"kind": "small-pipe"}})
	}
	for i := 0; i < 10; i++ {
		fs = append(fs, Finding{Status: Warn, Detail: "odd", Data: map[string]string{"kind": "odd"}})
	}
	for i := 0; i < 60; i++ {
		fs = append(fs, Finding{Status: Fail, Detail: "escape", Evidence: i})
	}
	fs = append(fs, Finding{Status: Pass, Detail: "summary"})
	rep := Run(context.Background(), []Check{fakeCheck{meta: meta("flood", Warning, Warning), findings: fs}}, Options{Phase: PreStart})
	got := rep.Results[0].Findings
	var plain, evidence, passes int
	var more *Finding
	for i, f := range got {
		switch {
		case f.Data["kind"] == "more":
			more = &got[i]
		case f.Evidence != nil:
			evidence++
		case f.Status == Pass:
			passes++
		default:
			plain++
		}
	}
	if plain != MaxProblemFindings || evidence != 60 || passes != 1 || more == nil {
		t.Fatalf("kept %d plain, %d with evidence, %d passes, summary %v; want %d, 60, 1 and a summary", plain, evidence, passes, more, MaxProblemFindings)
	}
	if more.Status != Fail || more.Data["not_listed"] != "30" || more.Data["kinds"] != "odd=10,small-pipe=20" {
		t.Fatalf("summary %+v", *more)
	}
	if id := more.Identity("flood"); strings.Contains(id, "30") {
		t.Errorf("the summary's identity changes with its count: %q", id)
	}
}

// Count counts the problem findings, not the passes and skips a check
// lists; metrics, the log and the human report read it from the result.
func TestResultCount(t *testing.T) {
	r := Result{Findings: []Finding{{Status: Pass}, {Status: Warn}, {Status: Fail}, {Status: Error}, {Status: Skip}}}
	if n := r.Count(); n != 3 {
		t.Fatalf("Count() = %d, want 3", n)
	}
	if n := (Result{}).Count(); n != 0 {
		t.Fatalf("Count() of no findings = %d, want 0", n)
	}
}
