package fleet

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestRunLanes: lanes run at once, a lane that waits starts only after the
// gating lane's first scenario ended, each lane's scenarios run in order,
// and once do says a lane cannot go on, its later scenarios get the reason
// instead of running.
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
	blockedWith := map[string]string{}
	runLanes([]laneRun{
		{f: f, first: gate, scenarios: []Scenario{step("a1", 50*time.Millisecond), step("a2", 50*time.Millisecond)}},
		{f: f, waitFor: gate, scenarios: []Scenario{step("b1", 0)}},
		{f: f, scenarios: []Scenario{step("c1", 0), step("c2", 0), step("c3", 0)}},
	}, func(l laneRun, j int, blocked string) string {
		s := l.scenarios[j]
		if blocked != "" {
			mu.Lock()
			blockedWith[s.Name] = blocked
			mu.Unlock()
			return ""
		}
		Run(s, nil)
		if s.Name == "c1" {
			return "c1 did not hold"
		}
		return ""
	})
	at := map[string]int{}
	for i, e := range events {
		at[e] = i
	}
	if at["a2 start"] < at["a1 end"] {
		t.Errorf("a2 started before a1 ended: %v", events)
	}
	if at["b1 start"] < at["a1 end"] {
		t.Errorf("b1 started before a1 ended: %v", events)
	}
	if at["c1 start"] > at["a1 end"] {
		t.Errorf("c1 (no gate) waited for a1: %v", events)
	}
	if _, ran := at["c2 start"]; ran || blockedWith["c2"] != "c1 did not hold" || blockedWith["c3"] != "c1 did not hold" {
		t.Errorf("after c1 stopped its lane: c2 ran %t, blocked with %q", ran, blockedWith)
	}
}

// TestRunLanesCancelled: a waiting lane whose context ends stops waiting
// (its scenarios then stop at their first step), so an interrupt during a
// cold run's first deploy does not hang the lanes.
func TestRunLanesCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := &fleet{ctx: ctx, story: func(string) {}}
	done := make(chan []string)
	go func() {
		var ran []string
		runLanes([]laneRun{{f: f, waitFor: make(chan struct{}), scenarios: []Scenario{{Name: "x"}}}},
			func(l laneRun, j int, _ string) string { ran = append(ran, l.scenarios[j].Name); return "" })
		done <- ran
	}()
	select {
	case ran := <-done:
		if len(ran) != 1 || ran[0] != "x" {
			t.Fatalf("ran: %v", ran)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a lane waiting on a gate never opened did not end with its context")
	}
}
