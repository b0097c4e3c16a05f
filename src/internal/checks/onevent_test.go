package checks

import (
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// Every id watch runs on events is a registered check.
func TestOnEventNamesRegisteredChecks(t *testing.T) {
	ids := map[string]bool{}
	for _, id := range validator.IDs(all(testDeps{})) {
		ids[id] = true
	}
	for _, id := range OnEvent {
		if !ids[id] {
			t.Errorf("OnEvent names %q, which is not registered", id)
		}
	}
}

// Policy.Confirm replaces the validator's confirmation waits (watch's
// shorter schedule); a lasting escape is confirmed after exactly those.
func TestCgroupIntegrityConfirmSchedule(t *testing.T) {
	h := fakehost.New(t, cgroup.Hybrid)
	h.RunContainer(garden("c1"), 100, 2, 500)
	h.Move(101, "pids", "/")
	d := deps(h)
	d.Confirm = []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}
	var waits []time.Duration
	d.Sleep = func(w time.Duration) { waits = append(waits, w) }
	if bad := failures(run(t, d, "cgroup-integrity")); len(bad) != 1 || bad[0].Data["pid"] != "101" {
		t.Fatalf("a lasting escape: %+v", bad)
	}
	if len(waits) != 2 || waits[0]+waits[1] != 300*time.Millisecond {
		t.Fatalf("waited %v, want the given schedule", waits)
	}
}
