// Package check is the validator's framework: what a check is, what it
// returns, and how a run turns results into a verdict. Checks live in their
// own packages (one file per check) and are listed in one registry; they
// never print and never exit.
package check

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Phase is when the validator runs.
type Phase string

const (
	PreStart Phase = "pre-start"
	Drain    Phase = "drain"
)

// Severity says what a failing check does to the rollout.
type Severity string

const (
	Blocking Severity = "blocking" // exit 1: the rollout stops
	Warning  Severity = "warning"  // reported, exit 0
	Info     Severity = "info"     // reported for the operator's knowledge
)

// Status of one result.
type Status string

const (
	Pass  Status = "pass"
	Warn  Status = "warn"
	Fail  Status = "fail"
	Error Status = "error" // the check could not run
	Skip  Status = "skip"  // not applicable here (e.g. no runtime root)
)

// Meta is a check's data: everything an operator reads about it.
type Meta struct {
	ID    string // stable, kebab-case: "cgroup-integrity"
	Title string
	// Severity per phase; a phase missing from the map means Warning.
	Severity map[Phase]Severity
	// Story: the incident this check comes from, in a sentence or two.
	Story string
	// References: issue, advisory or commit URLs.
	References []string
	// Fix: what the operator should do when it fails.
	Fix string
}

// SeverityIn returns the check's severity in phase p.
func (m Meta) SeverityIn(p Phase) Severity {
	if s, ok := m.Severity[p]; ok {
		return s
	}
	return Warning
}

// Finding is one piece of evidence a check produced.
type Finding struct {
	Subject string            `json:"subject,omitempty"` // container id, pid, unit, sysctl key
	Status  Status            `json:"status"`
	Detail  string            `json:"detail"`
	Data    map[string]string `json:"data,omitempty"` // machine-readable evidence (hierarchy, expected, actual)
}

// Check is implemented by every check.
type Check interface {
	Meta() Meta
	// Run inspects the host. An error means "could not check" and becomes
	// an Error result; findings with Fail mean the check failed.
	Run(ctx context.Context) ([]Finding, error)
}

// Result is one check's outcome in a run.
type Result struct {
	ID         string    `json:"id"`
	Title      string    `json:"title"`
	Severity   Severity  `json:"severity"`
	Status     Status    `json:"status"` // worst of its findings, or pass
	Ignored    bool      `json:"ignored,omitempty"`
	Blocking   bool      `json:"blocking"` // this result blocks the rollout
	Findings   []Finding `json:"findings,omitempty"`
	Error      string    `json:"error,omitempty"`
	Fix        string    `json:"fix,omitempty"`
	Story      string    `json:"story,omitempty"`
	References []string  `json:"references,omitempty"`
	Duration   float64   `json:"duration_seconds"`
}

// Report is a whole run.
type Report struct {
	Phase   Phase    `json:"phase"`
	Results []Result `json:"results"`
	// Blocked is true when any non-ignored blocking check failed or errored.
	Blocked bool `json:"blocked"`
}

// Options tune a run.
type Options struct {
	Phase Phase
	// Ignore lists check ids whose blocking failures are downgraded; they
	// are still reported. "all" ignores every check.
	Ignore []string
	// SeverityOverride sets severities per check id for this phase,
	// replacing Meta.Severity (from the job's blocking lists).
	SeverityOverride map[string]Severity
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Run runs every check and builds the report, in the checks' order. It
// never stops early: an operator wants every finding of a cell, not the
// first. The checks run at once: several share one scan of the host and
// the others read a few files or ask systemd, so a drain spends the scan's
// time, not the sum (docs/performance.md). A check's Duration is its own
// wall time, including any wait for the shared scan.
func Run(ctx context.Context, checks []Check, opts Options) Report {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	ignored := map[string]bool{}
	for _, id := range opts.Ignore {
		ignored[id] = true
	}
	results := make([]Result, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = runOne(ctx, c, opts, now, ignored)
		}()
	}
	wg.Wait()
	rep := Report{Phase: opts.Phase, Results: results}
	for _, res := range results {
		if res.Blocking {
			rep.Blocked = true
		}
	}
	return rep
}

func runOne(ctx context.Context, c Check, opts Options, now func() time.Time, ignored map[string]bool) Result {
	m := c.Meta()
	sev := m.SeverityIn(opts.Phase)
	if s, ok := opts.SeverityOverride[m.ID]; ok {
		sev = s
	}
	start := now()
	findings, err := c.Run(ctx)
	res := Result{
		ID: m.ID, Title: m.Title, Severity: sev, Status: Pass,
		Findings: findings, Fix: m.Fix, Story: m.Story, References: m.References,
		Ignored:  ignored[m.ID] || ignored["all"],
		Duration: now().Sub(start).Seconds(),
	}
	if err != nil {
		res.Status = Error
		res.Error = err.Error()
	} else {
		res.Status = worst(findings)
	}
	if res.Status == Fail && sev != Blocking {
		// A non-blocking check's failure is a warning by definition.
		res.Status = Warn
	}
	res.Blocking = sev == Blocking && (res.Status == Fail || res.Status == Error) && !res.Ignored
	return res
}

var rank = map[Status]int{Skip: 0, Pass: 1, Warn: 2, Fail: 3, Error: 4}

func worst(fs []Finding) Status {
	st := Pass
	if len(fs) > 0 {
		st = Skip
		allSkip := true
		for _, f := range fs {
			if f.Status != Skip {
				allSkip = false
			}
			if rank[f.Status] > rank[st] {
				st = f.Status
			}
		}
		if !allSkip && st == Skip {
			st = Pass
		}
	}
	return st
}

// Validate checks a registry: ids unique and every check documented.
func Validate(checks []Check) error {
	seen := map[string]bool{}
	for _, c := range checks {
		m := c.Meta()
		switch {
		case m.ID == "":
			return fmt.Errorf("check with title %q has no id", m.Title)
		case seen[m.ID]:
			return fmt.Errorf("check id %q registered twice", m.ID)
		case m.Title == "" || m.Story == "" || m.Fix == "":
			return fmt.Errorf("check %q: title, story and fix are required", m.ID)
		}
		seen[m.ID] = true
	}
	return nil
}

// IDs returns the registered ids, sorted, for --help and ignore validation.
func IDs(checks []Check) []string {
	var ids []string
	for _, c := range checks {
		ids = append(ids, c.Meta().ID)
	}
	sort.Strings(ids)
	return ids
}
