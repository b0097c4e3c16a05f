package validator

import (
	"context"
	"errors"
	"reflect"
	"strings"
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
	return Meta{ID: id, Title: id + " title", Story: "story", Fix: "fix",
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
	tick := time.Unix(0, 0)
	now := func() time.Time { tick = tick.Add(time.Second); return tick }
	rep := Run(context.Background(), checks, Options{Phase: PreStart, Now: func() time.Time { return now() }})
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
