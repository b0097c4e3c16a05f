package heal

import (
	"math/rand"
	"testing"
	"time"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time            { return c.now }
func (c *fakeClock) advance(d time.Duration)   { c.now = c.now.Add(d) }
func newFakeClock() *fakeClock                 { return &fakeClock{now: time.Unix(1_800_000_000, 0)} }
func (c *fakeClock) since(t0 time.Time) string { return c.now.Sub(t0).String() }

// A heal counts from when it was spent, after the move, for a whole
// Window: a scan that began at 0 and moved at 1.5s leaves nothing at
// 60.5s.
func TestBudgetCountsFromTheMove(t *testing.T) {
	c := newFakeClock()
	t0 := c.now
	b := NewBudget(2, c.Now)
	if n := b.Left(); n != 2 {
		t.Fatalf("left %d at start, want 2", n)
	}
	c.advance(1500 * time.Millisecond) // the confirmation and the moves
	b.Spend(2)
	for _, tc := range []struct {
		at   time.Duration
		left int
	}{{59 * time.Second, 0}, {60500 * time.Millisecond, 0}, {61500 * time.Millisecond, 2}} {
		c.now = t0.Add(tc.at)
		if n := b.Left(); n != tc.left {
			t.Errorf("left %d at %s, want %d", n, c.since(t0), tc.left)
		}
	}
}

// TestBudgetSlidingWindow: whatever the scans' times and lengths, no
// 60-second window overlaps more than perMinute moves, and every process
// escaped is healed in time: scans at random gaps (a storm of events, then
// periodic ones), each moving what the budget leaves of the processes
// still out, between its start and its Spend.
func TestBudgetSlidingWindow(t *testing.T) {
	for _, perMinute := range []int{1, 2, 7, 60} {
		rng := rand.New(rand.NewSource(int64(perMinute)))
		c := newFakeClock()
		b := NewBudget(perMinute, c.Now)
		type scan struct {
			start, end time.Time
			moved      int
		}
		var scans []scan
		total := 50 + perMinute*3
		pending := total
		t0 := c.now
		for pending > 0 && c.now.Sub(t0) < 2*time.Hour {
			gap := time.Duration(rng.Intn(300)) * time.Millisecond
			if rng.Intn(4) == 0 {
				gap = time.Duration(rng.Intn(30)) * time.Second
			}
			c.advance(gap)
			s := scan{start: c.now, moved: min(b.Left(), pending)}
			c.advance(time.Duration(rng.Intn(2000)) * time.Millisecond) // confirm and move
			b.Spend(s.moved)
			s.end = c.now
			pending -= s.moved
			scans = append(scans, s)
		}
		// The most moves a window overlaps is reached with the window
		// ending at a scan's start.
		for _, w := range scans {
			n := 0
			for _, s := range scans {
				if !s.start.After(w.start) && s.end.After(w.start.Add(-Window)) {
					n += s.moved
				}
			}
			if n > perMinute {
				t.Fatalf("%d a minute: %d moves in the minute up to %s", perMinute, n, w.start.Sub(t0))
			}
		}
		// Healed in later windows: perMinute each time a Window has passed
		// since the last Spend and the next scan came (gaps here are up to
		// 30s, scans up to 2s).
		rounds := (total + perMinute - 1) / perMinute
		want := time.Duration(rounds) * (Window + 32*time.Second)
		if pending > 0 || c.now.Sub(t0) > want {
			t.Errorf("%d a minute: %d left unhealed after %s, want none after %s", perMinute, pending, c.now.Sub(t0), want)
		}
	}
}
