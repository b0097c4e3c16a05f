package watch

import "time"

// schedule decides when event scans run. Pure logic: Run feeds it the
// events and scans with their times and sleeps until due says.
//
// A burst of events (one unit start sends UnitNew, PropertiesChanged and
// JobRemoved within tens of ms) makes one scan once the events go quiet,
// but never later than maxWait after its first event, so a storm of
// starts cannot postpone scanning. systemd 252 can move a neighbour's
// processes after the last signal of the start that causes it, and no
// signal accompanies the move (docs/performance.md, "When systemd moves"),
// so each burst gets one settle scan, settle after its last event, unless
// a later scan already started then. A storm keeps making bursts: the CPU
// budget (share) spaces all event scans, settle scans included.
type schedule struct {
	quiet, maxWait, settle time.Duration
	share                  float64 // of one core, on average, for event scans

	trigger     string    // the pending burst's first event kind; "" when none
	first, last time.Time // the pending burst's first and latest event
	settleAt    time.Time // when the settle scan is due; zero when none
	notBefore   time.Time // no event scan before this (the CPU budget)
}

// event notes an event of kind at now.
func (s *schedule) event(now time.Time, kind string) {
	if s.trigger == "" {
		s.trigger, s.first = kind, now
	}
	s.last = now
}

// due is when the next event scan should start; ok is false when none is.
func (s *schedule) due() (at time.Time, ok bool) {
	switch {
	case s.trigger != "":
		at = s.last.Add(s.quiet)
		if limit := s.first.Add(s.maxWait); limit.Before(at) {
			at = limit
		}
	case !s.settleAt.IsZero():
		at = s.settleAt
	default:
		return time.Time{}, false
	}
	if at.Before(s.notBefore) {
		at = s.notBefore
	}
	return at, true
}

// begin starts the due scan at now: it returns the trigger to count it
// under, and the pending burst's last event (zero for a settle scan).
func (s *schedule) begin(now time.Time) (trigger string, last time.Time) {
	if !s.settleAt.IsZero() && !now.Before(s.settleAt) {
		s.settleAt = time.Time{} // this scan reads after the settle time
	}
	if s.trigger == "" {
		return TriggerSettle, time.Time{}
	}
	trigger, last = s.trigger, s.last
	s.trigger = ""
	return trigger, last
}

// done records an event scan that began at start, used cpu, and was for a
// burst whose last event was last (zero: a settle scan).
func (s *schedule) done(start time.Time, cpu time.Duration, last time.Time) {
	s.notBefore = start.Add(time.Duration(float64(cpu) / s.share))
	if last.IsZero() {
		return
	}
	if at := last.Add(s.settle); at.After(start) && at.After(s.settleAt) {
		s.settleAt = at
	}
}

// covered says a full scan (the period's) started at now: it read after
// every event so far.
func (s *schedule) covered(now time.Time) {
	s.trigger = ""
	if !now.Before(s.settleAt) {
		s.settleAt = time.Time{}
	}
}
