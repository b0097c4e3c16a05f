package fleet

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestRunLanes: lanes run at once, a lane that waits starts only after the
// gating lane's first scenario ended, and outcomes come back in the order of
// lanes and their scenarios.
func TestRunLanes(t *testing.T) {
	var mu sync.Mutex
	var events []string
	note := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }
	step := func(name string, d time.Duration) Scenario {
		return Scenario{Name: name, Steps: []Step{{Name: "do", Do: func(*Record) error {
			note(name + " start")
			time.Sleep(d)
			note(name + " end")
			return nil
		}}}}
	}
	f := &fleet{ctx: context.Background(), story: func(string) {}}
	gate := make(chan struct{})
	out := runLanes([]laneRun{
		{f: f, first: gate, scenarios: []Scenario{step("a1", 50*time.Millisecond), step("a2", 50*time.Millisecond)}},
		{f: f, waitFor: gate, scenarios: []Scenario{step("b1", 0)}},
		{f: f, scenarios: []Scenario{step("c1", 0)}},
	})
	var names []string
	for _, o := range out {
		names = append(names, o.Scenario)
	}
	if got := len(names); got != 4 || names[0] != "a1" || names[1] != "a2" || names[2] != "b1" || names[3] != "c1" {
		t.Fatalf("outcomes in order a1 a2 b1 c1, got %v", names)
	}
	at := map[string]int{}
	for i, e := range events {
		at[e] = i
	}
	if at["b1 start"] < at["a1 end"] {
		t.Errorf("b1 started before a1 ended: %v", events)
	}
	if at["c1 start"] > at["a1 end"] {
		t.Errorf("c1 (no gate) waited for a1: %v", events)
	}
}

// TestRunLanesCancelled: a waiting lane whose context ends stops waiting
// (its scenarios then stop at their first step), so an interrupt during a
// cold run's first deploy does not hang the lanes.
func TestRunLanesCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := &fleet{ctx: ctx, story: func(string) {}}
	done := make(chan []Outcome)
	go func() {
		done <- runLanes([]laneRun{{f: f, waitFor: make(chan struct{}), scenarios: []Scenario{{Name: "x"}}}})
	}()
	select {
	case out := <-done:
		if len(out) != 1 || out[0].Scenario != "x" {
			t.Fatalf("outcomes: %+v", out)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a lane waiting on a gate never opened did not end with its context")
	}
}

// TestPlan: on every shape, make cell's selection gives each lane a
// deployment of its own (two lanes of one name would deploy over each
// other), exactly one lane gates the others, and make test's default
// scenarios run in five lanes.
func TestPlan(t *testing.T) {
	all, err := parseSelection("all")
	if err != nil {
		t.Fatal(err)
	}
	for name, sh := range shapes {
		plan := all.forShape(sh).plan()
		seen, gates := map[string]bool{}, 0
		for _, l := range plan {
			if seen[l.dep] {
				t.Errorf("%s: two lanes deploy %s", name, l.dep)
			}
			seen[l.dep] = true
			if l.gates {
				gates++
			}
			if l.cells < 1 || l.scenarios == nil {
				t.Errorf("%s: lane %s has %d cells, scenarios %t", name, l.dep, l.cells, l.scenarios != nil)
			}
		}
		if gates != 1 {
			t.Errorf("%s: %d lanes gate, want 1", name, gates)
		}
		if len(plan) < 6 {
			t.Errorf("%s: make cell runs %d lanes, want the default five and a Garden lane at least", name, len(plan))
		}
	}
	if n := len((selection{Default: true}).plan()); n != 5 {
		t.Errorf("the default scenarios run in %d lanes, want 5", n)
	}
}
