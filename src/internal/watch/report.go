package watch

import (
	"strconv"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/checks"
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

// report logs what appeared, cleared and healed since the last run of
// each check in rep, and sets the metrics. Checks not in rep (periodic
// ones after an event scan) keep their open findings.
func (w *Watcher) report(rep validator.Report, trigger string) {
	w.m.Checks.Observe(metrics.WatchPhase, rep.Results)
	ran := map[string]bool{}
	seen := map[string]bool{}
	for _, r := range rep.Results {
		ran[r.ID] = true
		if r.Status == validator.Error {
			// "Could not check" is a state too: logged once when it starts
			// (an unreadable /proc, a vanished root) and when it ends.
			k := r.ID + "\x00error"
			seen[k] = true
			if _, ok := w.open[k]; !ok {
				w.open[k] = openFinding{check: r.ID, detail: r.Error, couldNotRun: true}
				w.changed = true
				w.log.Error("check-could-not-run", nil, lager.Data{"check": r.ID, "error": r.Error, "trigger": trigger})
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
		if !ran[o.check] || seen[k] {
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

// escapes counts the escaped processes of the report (the typed escapes
// the checks confirmed, the heals that did not hold and those the budget
// deferred) and logs and counts the heals made and deferred.
func (w *Watcher) escapes(rep validator.Report) {
	escaped := map[string]bool{}
	healedPIDs := map[string]bool{}
	deferred := map[string]bool{}
	failed := 0
	for _, r := range rep.Results {
		for _, f := range r.Findings {
			switch ev := f.Evidence.(type) {
			case checks.Escape:
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
func processOf(e checks.Escape) string { return e.Container + "/" + strconv.Itoa(e.PID) }
