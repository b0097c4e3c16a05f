package heal

import "time"

// DefaultPerMinute bounds heals: a fight with something that keeps moving
// processes out must not become a busy loop.
const DefaultPerMinute = 60

// Budget is a token bucket of heals: perMinute tokens a minute, at most
// perMinute saved. A scan heals only with a token left; what it healed is
// taken afterwards, so a scan that healed many waits longer for the next.
type Budget struct {
	perMinute int
	tokens    float64
	at        time.Time
}

// NewBudget is a full bucket of perMinute heals at now.
func NewBudget(perMinute int, now time.Time) *Budget {
	return &Budget{perMinute: perMinute, tokens: float64(perMinute), at: now}
}

// PerMinute is the refill rate.
func (b *Budget) PerMinute() int { return b.perMinute }

func (b *Budget) refill(now time.Time) {
	b.tokens += now.Sub(b.at).Minutes() * float64(b.perMinute)
	if max := float64(b.perMinute); b.tokens > max {
		b.tokens = max
	}
	b.at = now
}

// Available says whether a scan starting now may heal.
func (b *Budget) Available(now time.Time) bool {
	b.refill(now)
	return b.tokens >= 1
}

// Take spends n heals made by now.
func (b *Budget) Take(n int, now time.Time) {
	b.refill(now)
	b.tokens -= float64(n)
}
