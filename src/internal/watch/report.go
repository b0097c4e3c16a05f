package watch

import (
	"maps"
	"slices"
	"strconv"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/evidence"
	"github.com/cloudfoundry/cellguard/src/internal/heal"
	"github.com/cloudfoundry/cellguard/src/internal/metrics"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// openFinding is a problem watch has logged and not yet seen clear.
type openFinding struct {
	check   string
	subject string
	detail  string
	// couldNotRun marks the check's own error, not a finding.
	couldNotRun bool
}

// healed says whether f is an escape healed this scan: not a problem
// watch keeps open, and logged as "healed" instead.
func healed(f validator.Finding) bool {
	o, ok := f.Evidence.(heal.Outcome)
	return ok && o.Moved
}

// couldNotJudge says r judged nothing: the check's error, the host
// unreadable (fds exhausted), or the scan's deadline passed first.
func couldNotJudge(r validator.Result) bool { return r.Status == validator.Error }

// report logs what appeared, cleared and healed since the last run of
// each check in rep, and sets the metrics. Checks not in rep (periodic
// ones after an event scan) keep their open findings, and so does a check
// that could not judge: it found nothing either way.
func (w *Watcher) report(rep validator.Report, trigger string) {
	w.observe(rep.Results)
	ran := map[string]bool{}
	seen := map[string]bool{}
	unjudged := map[string]bool{}
	for _, r := range rep.Results {
		ran[r.ID] = true
		if couldNotJudge(r) {
			// "Could not judge" is a state too: logged once when it starts
			// (an unreadable /proc, a vanished root, a hung check) and when
			// it ends.
			unjudged[r.ID] = true
			k := r.ID + "\x00error"
			seen[k] = true
			if _, ok := w.open[k]; !ok {
				w.open[k] = openFinding{check: r.ID, detail: r.Error, couldNotRun: true}
				w.changed = true
				w.log.Error("check-could-not-run", nil, lager.Data{"check": r.ID, "error": r.Error, "trigger": trigger,
					"judgement": "could not judge", "findings_kept_open": w.openOf(r.ID)})
			}
		}
		for _, f := range r.Findings {
			if !f.Status.IsProblem() || healed(f) {
				continue
			}
			k := f.Identity(r.ID)
			seen[k] = true
			if _, ok := w.open[k]; ok {
				continue
			}
			w.open[k] = openFinding{check: r.ID, subject: f.Subject, detail: f.Detail}
			w.changed = true
			w.log.Info("finding", lager.Data{"check": r.ID, "subject": f.Subject, "status": f.Status,
				"detail": f.Detail, "data": f.Data, "trigger": trigger})
		}
	}
	w.escapes(rep)
	for k, o := range w.open {
		if !ran[o.check] || seen[k] || (unjudged[o.check] && !o.couldNotRun) {
			continue
		}
		delete(w.open, k)
		w.changed = true
		if o.couldNotRun {
			w.log.Info("check-runs-again", lager.Data{"check": o.check, "trigger": trigger})
			continue
		}
		w.log.Info("finding-cleared", lager.Data{"check": o.check, "subject": o.subject, "detail": o.detail, "trigger": trigger})
	}
}

// observe sets the per-check gauges. A check that could not judge shows
// status 3 and cellguard_check_could_not_judge 1, and keeps the findings
// and blocking gauges of its last judged result: an error never lowers
// them.
func (w *Watcher) observe(results []validator.Result) {
	if w.judged == nil {
		w.judged = map[string]validator.Result{}
	}
	shown := slices.Clone(results)
	for i, r := range results {
		if !couldNotJudge(r) {
			w.judged[r.ID] = r
			w.m.CouldNotJudge.WithLabelValues(r.ID).Set(0)
			continue
		}
		w.m.CouldNotJudge.WithLabelValues(r.ID).Set(1)
		if last, ok := w.judged[r.ID]; ok {
			shown[i].Findings = last.Findings
			shown[i].Blocking = last.Blocking || r.Blocking
		}
	}
	w.m.Checks.Observe(metrics.WatchPhase, shown)
}

// openOf counts the open findings of check.
func (w *Watcher) openOf(check string) int {
	n := 0
	for _, o := range w.open {
		if o.check == check && !o.couldNotRun {
			n++
		}
	}
	return n
}

// escapes counts the escaped processes (the typed escapes the checks
// confirmed, the heals that did not hold and those the budget deferred, as
// each check last judged them) and logs and counts the heals made and
// deferred.
func (w *Watcher) escapes(rep validator.Report) {
	if w.escaped == nil {
		w.escaped = map[string]map[string]bool{}
	}
	healedPIDs := map[string]bool{}
	deferred := map[string]bool{}
	failed := 0
	for _, r := range rep.Results {
		escaped := map[string]bool{}
		if couldNotJudge(r) {
			maps.Copy(escaped, w.escaped[r.ID])
		}
		for _, f := range r.Findings {
			switch ev := f.Evidence.(type) {
			case evidence.Escape:
				escaped[processOf(ev)] = true
			case heal.Outcome:
				switch {
				case ev.Moved:
					healedPIDs[processOf(ev.Escape)] = true
					w.log.Info("healed", lager.Data{"check": r.ID, "subject": f.Subject, "detail": f.Detail, "data": f.Data, "scan": w.scans})
				case ev.Deferred:
					escaped[processOf(ev.Escape)] = true
					deferred[processOf(ev.Escape)] = true
				case ev.Failed():
					escaped[processOf(ev.Escape)] = true
					failed++
				}
			}
		}
		w.escaped[r.ID] = escaped
	}
	escaped := map[string]bool{}
	for _, e := range w.escaped {
		maps.Copy(escaped, e)
	}
	// A process healed in one hierarchy but not another is still escaped.
	for pid := range escaped {
		delete(healedPIDs, pid)
	}
	w.m.Escaped.Set(float64(len(escaped)))
	w.m.Healed.Add(float64(len(healedPIDs)))
	w.m.HealFailed.Add(float64(failed))
	if len(deferred) > 0 {
		w.m.HealRateLimited.Add(float64(len(deferred)))
		w.log.Info("heal-rate-limited", lager.Data{"deferred": len(deferred), "escaped": len(escaped), "per_minute": w.cfg.HealPerMinute})
	}
}

// processOf names an escape's process across hierarchies: its container
// and pid.
func processOf(e evidence.Escape) string { return e.Container + "/" + strconv.Itoa(e.PID) }
