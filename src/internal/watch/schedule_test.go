package watch

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSchedule plays events against the scheduler on a made-up clock:
// "e<ms>" is an event at that time, "s<ms>/<cpu ms>" runs the due scan if
// it is due by then (and says which it was), "p<ms>" a periodic full scan.
// want lists the scans that ran, as "<trigger>@<ms>".
func TestSchedule(t *testing.T) {
	tests := []struct {
		name  string
		steps string
		want  string
	}{
		{"a lone event: its scan once quiet, then the settle scan",
			"e0 s1000/1 s2000/1", "job@20 settle@130"},
		{"a start's signals coalesce; settle counts from the last",
			"e0 e10 e30 s1000/1 s2000/1", "job@50 settle@160"},
		{"events that never go quiet still scan after maxDebounce",
			"e0 e15 e30 e45 e60 e75 e90 e105 e120 e135 e150 e165 e180 e195 s200/1", "job@200"},
		{"an event after the scan starts a burst of its own; one settle scan, after the last burst",
			"e0 s25/1 e60 s1000/1 s2000/1", "job@20 job@80 settle@190"},
		{"a scan that starts after the settle time covers it",
			"e0 s25/1 e150 s1000/1 s2000/1 s3000/1", "job@20 job@170 settle@280"},
		{"the CPU budget spaces event scans, settle scans too",
			"e0 s25/30 s1000/1", "job@20 settle@320"},
		{"a periodic scan after the settle time covers the burst",
			"e0 s25/1 p200 s1000/1", "job@20"},
		{"a periodic scan before it does not",
			"e0 s25/1 p100 s1000/1", "job@20 settle@130"},
		{"a storm of starts 100 ms apart: a scan per start, one settle scan after the last",
			"e0 e20 s45/1 e100 e120 s145/1 e200 e220 s245/1 s1000/1", "job@40 job@140 job@240 settle@350"},
		{"nothing due without events", "s1000/1", ""},
		{"a burst during the budget's wait is scanned once it ends, and covers its settle time",
			"e0 s25/30 e40 s100/30 e120 s200/30 s1000/1", "job@20 job@320"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Unix(1000, 0)
			at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
			s := &schedule{quiet: 20 * time.Millisecond, maxWait: 200 * time.Millisecond, settle: 130 * time.Millisecond, share: 0.1}
			var ran []string
			for _, step := range strings.Fields(tt.steps) {
				var ms, cpu int
				switch step[0] {
				case 'e':
					mustScan(t, step[1:], "%d", &ms)
					s.event(at(ms), "job")
				case 'p':
					mustScan(t, step[1:], "%d", &ms)
					s.covered(at(ms))
				case 's':
					mustScan(t, step[1:], "%d/%d", &ms, &cpu)
					due, ok := s.due()
					if !ok || due.After(at(ms)) {
						continue
					}
					trig, last := s.begin(due)
					ran = append(ran, trig+"@"+msString(due.Sub(t0)))
					s.done(due, time.Duration(cpu)*time.Millisecond, last)
				}
			}
			if got := strings.Join(ran, " "); got != tt.want {
				t.Errorf("scans %q, want %q", got, tt.want)
			}
		})
	}
}

func mustScan(t *testing.T, s, format string, v ...any) {
	t.Helper()
	if _, err := fmt.Sscanf(s, format, v...); err != nil {
		t.Fatalf("step %q: %v", s, err)
	}
}

func msString(d time.Duration) string { return strconv.Itoa(int(d / time.Millisecond)) }

// TestScheduleStormStaysWithinBudget drives watch's own budget with a
// storm: an event every 10 ms for a minute, each event scan costing cpu.
// Whatever a scan costs, the scans started in the minute may use at most
// share of it (and the last scan, which the budget pays for after it), and
// a cell whose scans are costly must still get the share, not less; cheap
// scans are held back by the debounce alone.
func TestScheduleStormStaysWithinBudget(t *testing.T) {
	const storm = time.Minute
	for _, cpu := range []time.Duration{5 * time.Millisecond, 150 * time.Millisecond, 2300 * time.Millisecond} {
		t.Run(cpu.String(), func(t *testing.T) {
			s := &schedule{quiet: DefaultDebounce, maxWait: maxDebounce, settle: settleDelay, share: eventCPUShare}
			t0 := time.Unix(1000, 0)
			var used time.Duration
			scans := 0
			for now := t0; now.Before(t0.Add(storm)); now = now.Add(10 * time.Millisecond) {
				s.event(now, "job")
				if due, ok := s.due(); ok && !due.After(now) {
					_, last := s.begin(now)
					s.done(now, cpu, last)
					used += cpu
					scans++
				}
			}
			limit := time.Duration(eventCPUShare*float64(storm)) + cpu
			floor := time.Duration(eventCPUShare*float64(storm)) - cpu
			if free := time.Duration(storm/maxDebounce) * cpu; free < floor {
				// Cheap scans: one per maxDebounce of the storm.
				floor = free * 9 / 10
			}
			if used > limit || used < floor {
				t.Errorf("%d scans used %s of CPU in a minute's storm, want within [%s, %s]", scans, used, floor, limit)
			}
		})
	}
}
