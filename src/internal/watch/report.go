package watch

import (
	"sort"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/metrics"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// escapeCheck is the check whose findings are escaped processes, what
// cellguard_escaped_processes and the heal counters count.
const escapeCheck = "cgroup-integrity"

// openFinding is a problem watch has logged and not yet seen clear.
type openFinding struct {
	check   string
	subject string
	detail  string
	// couldNotRun marks the check's own error, not a finding.
	couldNotRun bool
}

// measurements are finding data that change while the problem stays the
// same (an age, where an escaped process is now, a live value): they are
// not part of a finding's identity, or it would be logged again every scan.
var measurements = map[string]bool{
	"age_seconds": true, "actual": true, "live": true, "active_state": true,
	"capacity_bytes": true, "version_output": true, "fix_error": true, "after_fix": true,
}

// key identifies a finding across scans.
func key(id string, f validator.Finding) string {
	parts := []string{id, f.Subject, string(f.Status)}
	ks := make([]string, 0, len(f.Data))
	for k := range f.Data {
		if !measurements[k] {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	for _, k := range ks {
		parts = append(parts, k+"="+f.Data[k])
	}
	return strings.Join(parts, "\x00")
}

func isProblem(s validator.Status) bool {
	return s == validator.Fail || s == validator.Warn || s == validator.Error
}

// report logs what appeared, cleared and healed since the last run of
// each check in rep, and sets the metrics. Checks not in rep (periodic
// ones after an event scan) keep their open findings.
func (w *Watcher) report(rep validator.Report, trigger string, heal bool, now time.Time) {
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
		if r.ID == escapeCheck {
			w.escapes(r, heal, now)
		}
		for _, f := range r.Findings {
			if !isProblem(f.Status) || f.Data["fixed"] == "true" {
				continue
			}
			k := key(r.ID, f)
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

// escapes counts the escaped processes of cgroup-integrity's result and
// logs and counts the heals it made.
func (w *Watcher) escapes(r validator.Result, heal bool, now time.Time) {
	escaped := map[string]bool{}
	healed := map[string]bool{}
	failed := 0
	for _, f := range r.Findings {
		pid := f.Subject + "/" + f.Data["pid"]
		switch {
		case f.Data["pid"] == "":
		case f.Data["fixed"] == "true":
			healed[pid] = true
			w.log.Info("healed", lager.Data{"check": r.ID, "subject": f.Subject, "detail": f.Detail, "data": f.Data, "scan": w.scans})
		case f.Status == validator.Fail:
			escaped[pid] = true
			if _, bad := f.Data["fix_error"]; bad || f.Data["after_fix"] != "" {
				failed++
			}
		}
	}
	// A process healed in one hierarchy but not another is still escaped.
	for pid := range escaped {
		delete(healed, pid)
	}
	w.m.Escaped.Set(float64(len(escaped)))
	w.m.Healed.Add(float64(len(healed)))
	w.m.HealFailed.Add(float64(failed))
	if heal {
		w.bucket.take(len(healed)+failed, now)
	} else if w.cfg.Heal && len(escaped) > 0 {
		w.m.HealRateLimited.Add(float64(len(escaped)))
		w.log.Info("heal-rate-limited", lager.Data{"escaped": len(escaped), "per_minute": w.cfg.HealPerMinute})
	}
}

// bucket is a token bucket of heals: perMinute tokens a minute, at most
// perMinute saved. A scan heals only with a token left; what it heals is
// taken afterwards, so a scan that healed many waits longer for the next.
type bucket struct {
	perMinute int
	tokens    float64
	at        time.Time
}

func newBucket(perMinute int, now time.Time) *bucket {
	return &bucket{perMinute: perMinute, tokens: float64(perMinute), at: now}
}

func (b *bucket) refill(now time.Time) {
	b.tokens += now.Sub(b.at).Minutes() * float64(b.perMinute)
	if max := float64(b.perMinute); b.tokens > max {
		b.tokens = max
	}
	b.at = now
}

func (b *bucket) available(now time.Time) bool {
	b.refill(now)
	return b.tokens >= 1
}

func (b *bucket) take(n int, now time.Time) {
	b.refill(now)
	b.tokens -= float64(n)
}
