package watch

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cloudfoundry/cellguard/src/internal/checks"
	"github.com/cloudfoundry/cellguard/src/internal/heal"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// movedHealer moves what it is handed and remembers which pids.
type movedHealer struct{ moved map[int]bool }

func (h *movedHealer) Heal(_ *snapshot.Host, es []checks.Escape) []heal.Outcome {
	out := make([]heal.Outcome, len(es))
	for i, e := range es {
		h.moved[e.PID] = true
		out[i] = heal.Outcome{Escape: e, Written: true, Moved: true}
	}
	return out
}

// With a heal_per_minute of 2, 50 processes escaped at once are moved 2 in
// any minute (issue 38, hole 5: one scan moved all 50): a scan moves what
// the last minute left, the others stay escaped, counted and logged as
// deferred by the budget, and later scans heal them, scan after scan on a
// clock the test moves.
func TestHealBudgetIsAPerMinuteCap(t *testing.T) {
	h := &movedHealer{moved: map[int]bool{}}
	fx := newFixture(t, func(c *Config) { c.Heal, c.HealPerMinute, c.Healer = true, 2, h })
	clock := time.Unix(1_800_000_000, 0)
	fx.w.budget = heal.NewBudget(2, func() time.Time { return clock })
	t0 := clock
	var movedAt []time.Time
	for scan := 0; len(h.moved) < 50; scan++ {
		if scan > 300 {
			t.Fatalf("%d of 50 healed after %d scans", len(h.moved), scan)
		}
		var fs []validator.Finding
		for pid := 1001; pid <= 1050; pid++ {
			if !h.moved[pid] {
				fs = append(fs, escapeFinding(pid, "cpu", "/"))
			}
		}
		fx.integrity.set(nil, fs...)
		before := len(h.moved)
		fx.w.scan(context.Background(), "job", false)
		for range len(h.moved) - before {
			movedAt = append(movedAt, clock)
		}
		if scan == 0 {
			if len(h.moved) != 2 {
				t.Fatalf("the first scan moved %d of 50, want 2", len(h.moved))
			}
			if got := testutil.ToFloat64(fx.w.m.HealRateLimited); got != 48 {
				t.Errorf("cellguard_heal_rate_limited_total = %v, want 48", got)
			}
			if got := testutil.ToFloat64(fx.w.m.Escaped); got != 48 {
				t.Errorf("cellguard_escaped_processes = %v, want 48", got)
			}
			if n := count(fx.messages(), "heal-rate-limited"); n != 1 {
				t.Errorf("%d heal-rate-limited lines, want 1", n)
			}
			if n := count(fx.messages(), "finding"); n != 48 {
				t.Errorf("%d finding lines, want one per escape left", n)
			}
		}
		clock = clock.Add(7 * time.Second)
	}
	for i := range movedAt {
		n := 0
		for _, at := range movedAt[i:] {
			if at.Sub(movedAt[i]) < time.Minute {
				n++
			}
		}
		if n > 2 {
			t.Fatalf("%d moved in the minute from %s", n, movedAt[i].Sub(t0))
		}
	}
	if d := clock.Sub(t0); d > 26*time.Minute {
		t.Errorf("all 50 healed after %s, want 25 minutes and a scan", d)
	}
}
