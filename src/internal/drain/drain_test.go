package drain

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

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// The arguments are the ones bosh-agent v2.759.0 builds
// (agent/script/drain/script_params.go).
func TestParse(t *testing.T) {
	testCases := []struct {
		name       string
		args       []string
		want       Call
		blocksByDf bool
	}{
		{"shutdown (stop, recreate, delete, scale-in)", []string{"job_shutdown", "hash_unchanged"},
			Call{JobChange: "job_shutdown", HashChange: "hash_unchanged", Event: Shutdown, Recognized: true}, false},
		{"update with packages", []string{"job_changed", "hash_changed", "cellguard", "golang-1-linux"},
			Call{JobChange: "job_changed", HashChange: "hash_changed", Packages: []string{"cellguard", "golang-1-linux"}, Event: Update, Recognized: true}, true},
		{"first deploy of the job", []string{"job_new", "hash_new"},
			Call{JobChange: "job_new", HashChange: "hash_new", Event: Update, Recognized: true}, true},
		{"dynamic drain follow-up", []string{"job_check_status", "hash_unchanged"},
			Call{JobChange: "job_check_status", HashChange: "hash_unchanged", Event: CheckStatus, Recognized: true}, true},
		{"by hand, no arguments: an update", nil, Call{Event: Update}, true},
		{"an older agent's job_unchanged: an update", []string{"job_unchanged", "hash_unchanged"},
			Call{JobChange: "job_unchanged", HashChange: "hash_unchanged", Event: Update}, true},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			got := Parse(tc.args)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Parse(%q) = %+v, want %+v", tc.args, got, tc.want)
			}
			if got.Event.BlocksByDefault() != tc.blocksByDf {
				t.Errorf("%s blocks by default: %v", got.Event, !tc.blocksByDf)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	blocked := &validator.Report{Phase: validator.Drain, Blocked: true}
	clean := &validator.Report{Phase: validator.Drain}
	partial := &validator.Report{Phase: validator.Drain, Blocked: true, Incomplete: true}
	unfinished := &validator.Report{Phase: validator.Drain, Incomplete: true}
	lift := &Lift{By: "bosh_abc", Reason: "INC-1", Created: time.Unix(0, 0), Expires: time.Unix(3600, 0)}
	update, shutdown := Parse([]string{"job_changed", "hash_changed"}), Parse([]string{"job_shutdown", "hash_unchanged"})
	check, byHand := Parse([]string{"job_check_status", "hash_unchanged"}), Parse(nil)
	testCases := []struct {
		name string
		in   Input
		want Outcome
	}{
		{"clean update passes", Input{Call: update, Report: clean}, Pass},
		{"escapes block an update", Input{Call: update, Report: blocked}, Blocked},
		{"escapes block a status call", Input{Call: check, Report: blocked}, Blocked},
		{"escapes block a hand-run", Input{Call: byHand, Report: blocked}, Blocked},
		{"escapes let a shutdown go", Input{Call: shutdown, Report: blocked}, ReleasedOnShutdown},
		{"escapes block a shutdown when asked", Input{Call: shutdown, Report: blocked, BlockOnShutdown: true}, Blocked},
		{"a lift lets an update go", Input{Call: update, Report: blocked, Lift: lift}, Lifted},
		{"a lift lets a blocking shutdown go", Input{Call: shutdown, Report: blocked, BlockOnShutdown: true, Lift: lift}, Lifted},
		{"a lift on a clean host is not used", Input{Call: update, Report: clean, Lift: lift}, Pass},
		{"could not run never blocks", Input{Call: update, CouldNotRun: errors.New("bad config")}, CouldNotRun},
		{"no report never blocks", Input{Call: update}, CouldNotRun},
		{"an expired budget alone never blocks", Input{Call: update, Report: unfinished}, BudgetExpired},
		// A blocking finding of a check that finished blocks, whatever else
		// did not finish (issue 38, hole 3).
		{"a finished blocking check blocks despite an unfinished one", Input{Call: update, Report: partial}, Blocked},
		{"blocking+incomplete blocks a status call", Input{Call: check, Report: partial}, Blocked},
		{"blocking+incomplete on shutdown is released", Input{Call: shutdown, Report: partial}, ReleasedOnShutdown},
		{"blocking+incomplete on shutdown blocks when asked", Input{Call: shutdown, Report: partial, BlockOnShutdown: true}, Blocked},
		{"blocking+incomplete is lifted by a lift", Input{Call: update, Report: partial, Lift: lift}, Lifted},
		// Drain's heal (cellguard.drain.heal): Report is judged again after
		// it, so what it moved back no longer blocks.
		{"every escape healed lets an update go", Input{Call: update, Report: clean, Heal: &Heal{Moved: 2}}, Healed},
		{"a heal on shutdown is said too", Input{Call: shutdown, Report: clean, Heal: &Heal{Moved: 1}}, Healed},
		{"a heal of processes that were gone passes", Input{Call: update, Report: clean, Heal: &Heal{}}, Pass},
		{"what the heal left blocks an update", Input{Call: update, Report: blocked, Heal: &Heal{Moved: 1, Unhealed: []string{"pid 7 (sleep) of c1 in blkio: moving it back failed"}}}, Blocked},
		{"what the heal left is released on shutdown", Input{Call: shutdown, Report: blocked, Heal: &Heal{Unhealed: []string{"pid 7"}}}, ReleasedOnShutdown},
		{"a heal with an expired budget is budget_expired", Input{Call: update, Report: unfinished, Heal: &Heal{Moved: 1}}, BudgetExpired},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.in)
			if d.Outcome != tc.want || d.Block != (tc.want == Blocked) || d.Reason == "" {
				t.Fatalf("Decide = %+v, want outcome %s (block only when blocked) with a reason", d, tc.want)
			}
		})
	}
	if d := Decide(Input{Call: update, CouldNotRun: errors.New("parse config x: bad")}); !strings.Contains(d.Reason, "parse config x: bad") {
		t.Errorf("could-not-run reason %q lacks the error", d.Reason)
	}
	if d := Decide(Input{Call: update, Report: blocked, Lift: lift}); !strings.Contains(d.Reason, "bosh_abc") || !strings.Contains(d.Reason, "INC-1") {
		t.Errorf("lifted reason %q lacks who and why", d.Reason)
	}
}

// A drain that healed says so, and one that blocks after healing names
// each process it could not heal and why, a bounded list.
func TestDecideSaysWhatTheHealDidAndLeft(t *testing.T) {
	update := Parse([]string{"job_changed", "hash_changed"})
	d := Decide(Input{Call: update, Report: &validator.Report{}, Heal: &Heal{Moved: 2}})
	if !strings.Contains(d.Reason, "moved 2 escaped processes back") {
		t.Errorf("healed reason %q does not say how many moved", d.Reason)
	}
	var left []string
	for i := range 8 {
		left = append(left, fmt.Sprintf("pid %d (sleep) of c1 in blkio: moving it back failed", 100+i))
	}
	d = Decide(Input{Call: update, Report: &validator.Report{Blocked: true}, Heal: &Heal{Moved: 1, Unhealed: left}})
	for _, want := range []string{"moved 1 escaped process back", "could not heal 8", left[0], left[maxUnhealedNamed-1], "and 3 more (drain.log)"} {
		if !strings.Contains(d.Reason, want) {
			t.Errorf("blocked reason lacks %q:\n%s", want, d.Reason)
		}
	}
	if strings.Contains(d.Reason, left[maxUnhealedNamed]) {
		t.Errorf("blocked reason names more than %d processes:\n%s", maxUnhealedNamed, d.Reason)
	}
}

func TestNewLiftBounds(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, reason, by string
		d                time.Duration
		want             string
	}{
		{"ok", "INC-1: escapes known, recreating next", "alice", time.Hour, ""},
		{"no reason", "  ", "alice", time.Hour, "a reason is required"},
		{"no one", "r", "", time.Hour, "pass --by"},
		{"zero", "r", "alice", 0, "above zero"},
		{"past the cap", "r", "alice", MaxLiftFor + time.Second, "at most 24h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLift(tc.reason, tc.by, now, tc.d)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("NewLift = %v, want an error containing %q", err, tc.want)
				}
				return
			}
			if err != nil || !l.Created.Equal(now) || !l.Expires.Equal(now.Add(tc.d)) || l.By != tc.by {
				t.Fatalf("NewLift = %+v, %v", l, err)
			}
		})
	}
}

// A lift holds from its creation until it expires, on its own clock: no
// one has to cancel it.
func TestLiftExpiresOnItsOwn(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	l, err := NewLift("INC-1", "alice", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		at    time.Time
		state string
	}{
		{now.Add(-time.Second), "invalid"}, // the clock went back: not yet valid
		{now, "active"},
		{now.Add(59 * time.Minute), "active"},
		{now.Add(time.Hour), "expired"},
		{now.Add(48 * time.Hour), "expired"},
	} {
		if got := l.State(tc.at); got != tc.state || l.ActiveAt(tc.at) != (tc.state == "active") {
			t.Errorf("at %v: state %s, want %s", tc.at, got, tc.state)
		}
	}
	hand := Lift{Reason: "r", By: "b", Created: now, Expires: now.Add(365 * 24 * time.Hour)}
	if hand.ActiveAt(now.Add(time.Minute)) || hand.State(now) != "invalid" {
		t.Error("a lift edited to last a year holds")
	}
}

func TestLiftFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cellguard")
	path := filepath.Join(dir, "drain-lift.json")
	if _, err := ReadLift(path); !errors.Is(err, ErrNoLift) {
		t.Fatalf("ReadLift of nothing = %v, want ErrNoLift", err)
	}
	l, err := NewLift("INC-1", "alice", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	l.SudoUser = "bosh_abc"
	if err := WriteLift(path, l); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, st.Mode().Perm(), err, want)
		}
	}
	got, err := ReadLift(path)
	if err != nil || !reflect.DeepEqual(got, l) {
		t.Fatalf("ReadLift = %+v, %v; want %+v", got, err, l)
	}
	// Someone other than root could have written it: refused.
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLift(path); !errors.Is(err, safefile.ErrUntrusted) {
		t.Fatalf("ReadLift of a world-writable lift = %v, want ErrUntrusted", err)
	}
	if err := os.WriteFile(path, []byte(`{"reason":"r","by":"b","created":"2026-12-01T10:00:00Z","expires":"2026-12-01T11:00:00Z","forever":true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLift(path); err == nil || !strings.Contains(err.Error(), "forever") {
		t.Fatalf("ReadLift with an unknown field = %v", err)
	}
	if err := os.WriteFile(path, []byte(`{"by":"b","created":"2026-12-01T10:00:00Z","expires":"2026-12-01T11:00:00Z"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLift(path); err == nil || !strings.Contains(err.Error(), "required") {
		t.Fatalf("ReadLift without a reason = %v", err)
	}
	for _, want := range []bool{true, false} {
		if removed, err := CancelLift(path); err != nil || removed != want {
			t.Fatalf("CancelLift = %v, %v; want %v", removed, err, want)
		}
	}
}

// TestWriteLiftMakesItsDirectoryPrivate: the lift's directory is 0700 even
// when something (an older pre-start, an operator's mkdir -p) made it
// first with a looser mode, and a directory that is not ours, or not a
// directory, is refused rather than written into.
func TestWriteLiftMakesItsDirectoryPrivate(t *testing.T) {
	l, err := NewLift("INC-1", "alice", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o755, 0o775, 0o777} {
		dir := filepath.Join(t.TempDir(), "lift")
		if err := os.Mkdir(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "drain-lift.json")
		if err := WriteLift(path, l); err != nil {
			t.Fatalf("dir %v: %v", mode, err)
		}
		if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("dir made %v first: now %v (%v), want 0700", mode, st.Mode().Perm(), err)
		}
		if _, err := ReadLift(path); err != nil {
			t.Errorf("dir made %v first: ReadLift: %v", mode, err)
		}
	}
	base := t.TempDir()
	if err := os.Symlink(base, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	if err := WriteLift(filepath.Join(base, "link", "drain-lift.json"), l); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("lift directory that is a symlink: %v, want a refusal", err)
	}
	if os.Geteuid() == 0 {
		dir := filepath.Join(base, "theirs")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := WriteLift(filepath.Join(dir, "drain-lift.json"), l); !errors.Is(err, safefile.ErrUntrusted) || !strings.Contains(err.Error(), "uid 65534") {
			t.Errorf("lift directory owned by uid 65534: %v, want a refusal", err)
		}
	}
}

// check is a fake validator check: it returns its findings, or, when hang
// is set, never returns on its own (a check wedged on the host).
type check struct {
	id       string
	severity validator.Severity
	findings []validator.Finding
	hang     bool
}

func (c check) Meta() validator.Meta {
	return validator.Meta{ID: c.id, Title: c.id, Story: "s", Fix: "f",
		Severity: map[validator.Phase]validator.Severity{validator.Drain: c.severity}}
}

func (c check) Run(ctx context.Context) ([]validator.Finding, error) {
	if c.hang {
		<-ctx.Done()
		select {} // ignores its context too: the run must not wait for it
	}
	return c.findings, nil
}

// A confirmed escape from a check that finished blocks the drain although
// another check did not finish within the budget: at 88f9e12 Decide said
// budget_expired and drain printed 0 (issue 38, hole 3).
func TestDecideBlocksOnFinishedCheckWhenRunIncomplete(t *testing.T) {
	checks := []validator.Check{
		check{id: "cgroup-integrity", severity: validator.Blocking,
			findings: []validator.Finding{{Subject: "c1", Status: validator.Fail, Detail: "pid 7 escaped"}}},
		check{id: "stuck", severity: validator.Blocking, hang: true},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	rep := validator.Run(ctx, checks, validator.Options{Phase: validator.Drain})
	if !rep.Incomplete || !rep.Blocked {
		t.Fatalf("report: incomplete %v blocked %v, want both: %+v", rep.Incomplete, rep.Blocked, rep)
	}
	if r := rep.Results[1]; !r.Unfinished || r.Blocking {
		t.Fatalf("the unfinished check: %+v, want unfinished and not blocking", r)
	}
	d := Decide(Input{Call: Parse([]string{JobChanged, "hash_changed"}), Report: &rep})
	if d.Outcome != Blocked || !d.Block {
		t.Fatalf("Decide = %+v, want blocked", d)
	}
	if !strings.Contains(d.Reason, "did not finish") {
		t.Errorf("reason %q does not say that some checks did not finish", d.Reason)
	}
}
