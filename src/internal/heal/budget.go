package heal

import "time"

// DefaultPerMinute bounds heals: a fight with something that keeps moving
// processes out must not become a busy loop.
const DefaultPerMinute = 60

// Window is the span Budget counts heals over.
const Window = time.Minute

// Budget caps heals in a sliding window: at most perMinute processes are
// handed to the healer in any Window (issue 38, hole 5; a token bucket
// let one scan move every escape it saw). Each process is counted at the
// clock's time after its move (Spend), never before, so a move is counted
// for at least the Window that follows it.
type Budget struct {
	perMinute int
	clock     func() time.Time
	spent     []time.Time // when each heal of the last Window was counted
	ledger    string      // the shared record's file (NewSharedBudget); "" for none
}

// NewBudget is a budget of perMinute heals a Window, read on clock (nil:
// time.Now, whose monotonic reading a wall clock step does not move).
func NewBudget(perMinute int, clock func() time.Time) *Budget {
	if clock == nil {
		clock = time.Now
	}
	return &Budget{perMinute: perMinute, clock: clock}
}

// PerMinute is the cap.
func (b *Budget) PerMinute() int { return b.perMinute }

// Left is how many processes may be healed now: the cap less those counted
// within the last Window.
func (b *Budget) Left() int {
	now := b.clock()
	kept := b.spent[:0]
	for _, at := range b.spent {
		if now.Sub(at) < Window {
			kept = append(kept, at)
		}
	}
	b.spent = kept
	return max(0, b.perMinute-len(b.spent))
}

// Spend counts n processes healed; call it after their moves.
func (b *Budget) Spend(n int) {
	now := b.clock()
	for range n {
		b.spent = append(b.spent, now)
	}
}
