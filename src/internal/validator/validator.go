package validator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
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
	// Measured names the Data keys of the check's findings that change
	// while the problem stays the same (Finding.Measured).
	Measured []string
	// Layouts are the cgroup layouts whose hosts the check judges, as
	// cgroup.Mode names them ("legacy", "hybrid", "unified"). On a host of
	// another layout the check's one finding is a Skip saying it is not
	// applicable there: never a pass, a finding or "could not read".
	// Every check names them (Validate).
	Layouts []string
}

// SeverityIn returns the check's severity in phase p.
func (m Meta) SeverityIn(p Phase) Severity {
	if s, ok := m.Severity[p]; ok {
		return s
	}
	return Warning
}

// IsProblem says whether a finding or result with this status is a problem
// an operator hears about (counted, logged, watched until it clears), not a
// pass summary or a skip note. It is the one rule; report, watch, metrics
// and cli ask it.
func (s Status) IsProblem() bool { return s == Fail || s == Warn || s == Error }

// Finding is one piece of evidence a check produced. Reports print it as
// "subject: detail", so Detail does not repeat the subject.
type Finding struct {
	Subject string `json:"subject,omitempty"` // container id, pid, unit, sysctl key
	Status  Status `json:"status"`
	Detail  string `json:"detail"`
	// Data is machine-readable evidence for operators (JSON, logs): what
	// identifies the problem (hierarchy, expected).
	Data map[string]string `json:"data,omitempty"`
	// Measured names the keys of Data that change while the problem stays
	// the same (where an escaped process is now, an age, a live value): not
	// part of Identity, or watch would report the same problem again every
	// scan. A check names them once in Meta.Measured; Run sets them here.
	Measured []string `json:"-"`
	// Evidence is the check's typed account of the finding (checks.Escape,
	// runcstate.Runtime) for the packages that act on it: they read it,
	// never Data's keys, which are for operators. Not in JSON.
	Evidence any `json:"-"`
}

// Identity names the problem a finding of check id reports, the same from
// one run to the next while the problem lasts: its subject, status and
// Data, without the Measured keys.
func (f Finding) Identity(id string) string {
	parts := make([]string, 0, 3+len(f.Data))
	parts = append(parts, id, f.Subject, string(f.Status))
	ks := make([]string, 0, len(f.Data))
	for k := range f.Data {
		if !slices.Contains(f.Measured, k) {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	for _, k := range ks {
		parts = append(parts, k+"="+f.Data[k])
	}
	return strings.Join(parts, "\x00")
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
	// Layouts are the cgroup layouts the check judges (Meta.Layouts).
	Layouts  []string `json:"layouts,omitempty"`
	Duration float64  `json:"duration_seconds"`
	// Unfinished: the run's context ended before the check did (a drain's
	// time budget ran out). Its Status is Error, and it never blocks: it
	// found nothing either way.
	Unfinished bool `json:"unfinished,omitempty"`
}

// Count is the number of the result's problem findings: what a report's
// FINDINGS column, the log and cellguard_check_findings say.
func (r Result) Count() int {
	n := 0
	for _, f := range r.Findings {
		if f.Status.IsProblem() {
			n++
		}
	}
	return n
}

// Report is a whole run.
type Report struct {
	Phase   Phase    `json:"phase"`
	Results []Result `json:"results"`
	// Blocked is true when any non-ignored blocking check that finished
	// failed or errored; an unfinished check never counts, so a finished
	// check's blocking finding blocks whatever else did not finish.
	Blocked bool `json:"blocked"`
	// Incomplete is true when the run's context ended before every check
	// finished: Results then hold what finished, and the rest Unfinished.
	Incomplete bool `json:"incomplete,omitempty"`
}

// Options tune a run. Build them with Policy.Options, which checks every
// id against the registry.
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

// IgnoreAll in an ignore list ignores every check.
const IgnoreAll = "all"

// Policy is the operator's say over a run, as kubeadm's RunChecks takes
// its ignore list: which checks never block, and which block per phase.
type Policy struct {
	// Ignore names checks that are run and reported but never block;
	// IgnoreAll ignores every check.
	Ignore []string
	// Blocking names, per phase, exactly the checks that block in it: a
	// listed check blocks, an unlisted one that would block only warns. A
	// phase absent from the map keeps every check's own severity.
	Blocking map[Phase][]string
}

// ErrUnknownID means a policy names a check no registered check has: a
// typo must not silently leave a check blocking (or not) against the
// operator's intent.
var ErrUnknownID = errors.New("unknown check id")

// PolicyError says which list of a Policy named an unknown id.
type PolicyError struct {
	List  string // "ignore" or "blocking"
	Phase Phase  // for "blocking"
	Err   error
}

func (e *PolicyError) Error() string { return e.List + ": " + e.Err.Error() }
func (e *PolicyError) Unwrap() error { return e.Err }

// Options checks the policy against the registry and returns the options
// of a run in phase.
func (p Policy) Options(registry []Check, phase Phase) (Options, error) {
	known := map[string]bool{}
	for _, c := range registry {
		known[c.Meta().ID] = true
	}
	if err := knownIDs(known, p.Ignore, true); err != nil {
		return Options{}, &PolicyError{List: "ignore", Err: err}
	}
	opts := Options{Phase: phase, Ignore: p.Ignore}
	list, ok := p.Blocking[phase]
	if !ok {
		return opts, nil
	}
	if err := knownIDs(known, list, false); err != nil {
		return Options{}, &PolicyError{List: "blocking", Phase: phase, Err: err}
	}
	listed := map[string]bool{}
	for _, id := range list {
		listed[id] = true
	}
	opts.SeverityOverride = map[string]Severity{}
	for _, c := range registry {
		m := c.Meta()
		switch {
		case listed[m.ID]:
			opts.SeverityOverride[m.ID] = Blocking
		case m.SeverityIn(phase) == Blocking:
			opts.SeverityOverride[m.ID] = Warning
		}
	}
	return opts, nil
}

func knownIDs(known map[string]bool, given []string, allowAll bool) error {
	for _, id := range given {
		if !known[id] && !(allowAll && id == IgnoreAll) {
			return fmt.Errorf("%w %q", ErrUnknownID, id)
		}
	}
	return nil
}

// Run runs every check and builds the report, in the checks' order. It
// never stops early on a finding: an operator wants every finding of a
// cell, not the first. The checks run at once: several share one scan of
// the host and the others read a few files or ask systemd, so a drain
// spends the scan's time, not the sum (docs/performance.md). A check's
// Duration is its own wall time, including any wait for the shared scan.
//
// When ctx ends first (a drain's time budget), Run returns at once with
// the results of the checks that finished and every other one Unfinished;
// a check still running is left to end on its own and its result is
// dropped. A check that returns an error after ctx ended is Unfinished
// too: it stopped because the run did, not because the host is broken. A
// check that panics is an Error result, not the end of the process.
func Run(ctx context.Context, checks []Check, opts Options) Report {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	ignored := map[string]bool{}
	for _, id := range opts.Ignore {
		ignored[id] = true
	}
	type done struct {
		i   int
		res Result
	}
	// Buffered: a check that outlives the run must not block forever on
	// a send nobody receives.
	ch := make(chan done, len(checks))
	metas := make([]Meta, len(checks))
	start := now()
	for i, c := range checks {
		metas[i] = c.Meta()
		go func() { ch <- done{i, runOne(ctx, c, metas[i], opts, now, ignored)} }()
	}
	results := make([]Result, len(checks))
	finished := make([]bool, len(checks))
	received := 0
	record := func(d done) { results[d.i], finished[d.i] = d.res, true; received++ }
wait:
	for received < len(checks) {
		select {
		case d := <-ch:
			record(d)
		case <-ctx.Done():
			break wait
		}
	}
	// When ctx ended, take the results that arrived meanwhile, no more.
arrived:
	for received < len(checks) {
		select {
		case d := <-ch:
			record(d)
		default:
			break arrived
		}
	}
	rep := Report{Phase: opts.Phase, Results: results}
	for i := range checks {
		if !finished[i] {
			results[i] = unfinished(metas[i], opts, ignored, ctx.Err(), now().Sub(start))
		}
		if results[i].Unfinished {
			rep.Incomplete = true
		}
		if results[i].Blocking {
			rep.Blocked = true
		}
	}
	return rep
}

// severityOf is m's severity in the run's phase, after the override.
func severityOf(m Meta, opts Options) Severity {
	if s, ok := opts.SeverityOverride[m.ID]; ok {
		return s
	}
	return m.SeverityIn(opts.Phase)
}

func resultOf(m Meta, opts Options, ignored map[string]bool) Result {
	return Result{
		ID: m.ID, Title: m.Title, Severity: severityOf(m, opts), Status: Pass,
		Fix: m.Fix, Story: m.Story, References: m.References, Layouts: m.Layouts,
		Ignored: ignored[m.ID] || ignored[IgnoreAll],
	}
}

// unfinished is the result of a check the run stopped waiting for.
func unfinished(m Meta, opts Options, ignored map[string]bool, why error, d time.Duration) Result {
	res := resultOf(m, opts, ignored)
	res.Status, res.Unfinished, res.Duration = Error, true, d.Seconds()
	res.Error = fmt.Sprintf("did not finish before the run ended (%v)", why)
	return res
}

// MaxProblemFindings caps the problem findings of one check's result that
// no package acts on. Tenants control how many processes, pipes and
// namespaces there are; each finding is a report line, a log line and a
// watch event, so an unbounded count let one tenant flood pre-start's log
// (issue 38, hole 3: 19,800 findings, 9.6 MB). Findings with Evidence
// (escapes, which heal moves and watch counts) are all kept.
const MaxProblemFindings = 50

// capFindings keeps every finding with Evidence, every pass and skip, and
// the first MaxProblemFindings other problems; the rest become one summary
// finding that counts them by kind, with the worst status among them.
func capFindings(fs []Finding) []Finding {
	kept, dropped, worstSt := 0, 0, Warn
	byKind := map[string]int{}
	out := fs[:0:0]
	for _, f := range fs {
		if f.Evidence != nil || !f.Status.IsProblem() || kept < MaxProblemFindings {
			if f.Evidence == nil && f.Status.IsProblem() {
				kept++
			}
			out = append(out, f)
			continue
		}
		dropped++
		byKind[cmp.Or(f.Data["kind"], "other")]++
		if rank[f.Status] > rank[worstSt] {
			worstSt = f.Status
		}
	}
	if dropped == 0 {
		return fs
	}
	kinds := make([]string, 0, len(byKind))
	for k, n := range byKind {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	return append(out, Finding{
		Status: worstSt,
		Detail: fmt.Sprintf("%d more findings not listed (%s): a check lists at most %d", dropped, strings.Join(kinds, ", "), MaxProblemFindings),
		Data:   map[string]string{"kind": "more", "not_listed": strconv.Itoa(dropped), "kinds": strings.Join(kinds, ",")},
		// The count changes while the flood lasts: one problem.
		Measured: []string{"not_listed", "kinds"},
	})
}

func runOne(ctx context.Context, c Check, m Meta, opts Options, now func() time.Time, ignored map[string]bool) (res Result) {
	res = resultOf(m, opts, ignored)
	start := now()
	defer func() {
		if p := recover(); p != nil {
			res.Status, res.Error, res.Findings = Error, fmt.Sprintf("check panicked: %v", p), nil
			res.Duration = now().Sub(start).Seconds()
			res.Blocking = res.Severity == Blocking && !res.Ignored
		}
	}()
	findings, err := c.Run(ctx)
	if len(m.Measured) > 0 {
		for i := range findings {
			if findings[i].Measured == nil {
				findings[i].Measured = m.Measured
			}
		}
	}
	res.Findings = capFindings(findings)
	res.Duration = now().Sub(start).Seconds()
	switch {
	case err != nil && ctx.Err() != nil:
		return unfinished(m, opts, ignored, ctx.Err(), now().Sub(start))
	case err != nil:
		res.Status = Error
		res.Error = err.Error()
	default:
		res.Status = worst(res.Findings)
	}
	res.settle()
	return res
}

// settle applies the severity to the status and says whether it blocks.
func (res *Result) settle() {
	if res.Status == Fail && res.Severity != Blocking {
		// A non-blocking check's failure is a warning by definition.
		res.Status = Warn
	}
	res.Blocking = res.Severity == Blocking && (res.Status == Fail || res.Status == Error) && !res.Ignored
}

// WithFindings is rep with result i's findings replaced by what acting on
// them left (heal's outcomes), that result and the report judged again as
// Run would have: a new report, rep unchanged. A check that could not run
// keeps its error.
func (rep Report) WithFindings(i int, fs []Finding) Report {
	rep.Results = slices.Clone(rep.Results)
	res := &rep.Results[i]
	res.Findings = fs
	if res.Error == "" {
		res.Status = worst(fs)
		res.settle()
	}
	rep.Blocked = false
	for _, r := range rep.Results {
		rep.Blocked = rep.Blocked || r.Blocking
	}
	return rep
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

// Validate checks a registry: ids unique and every check documented,
// including the cgroup layouts it judges.
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
		case len(m.Layouts) == 0:
			return fmt.Errorf("check %q: layouts are required (the cgroup layouts it judges)", m.ID)
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
