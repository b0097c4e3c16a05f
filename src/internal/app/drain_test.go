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

	"github.com/cloudfoundry/cellguard/src/internal/drain"
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

// runFunc is a Runner that is only its run.
type runFunc func(ctx context.Context) validator.Report

func (f runFunc) Run(ctx context.Context) validator.Report { return f(ctx) }
func (runFunc) LogData() lager.Data                        { return nil }

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
