package cli

import (
	"strconv"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// `cellguard watch --heal --heal-per-minute 2` on a cell with 50 escaped
// processes tries to move 2 in its scan, not 50 (issue 38, hole 5): the
// others are left to later minutes and counted as rate-limited. The
// fixture does not play kernel, so every move tried is a heal that did not
// hold (cellguard_heal_failures_total): one per cgroup.procs write.
func TestWatchHealPerMinuteCapsAScan(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/garden/c1"}, 100, 51, 500)
	for pid := 101; pid <= 150; pid++ {
		h.Move(pid, "", "/system.slice/garden.service")
	}
	code, out, errOut := runWatchCLI(t, h.Root, `{}`, "--once", "--heal", "--heal-per-minute", "2")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	tried := metricValue(t, out, "cellguard_heal_failures_total")
	limited := metricValue(t, out, "cellguard_heal_rate_limited_total")
	if tried != 2 || limited != 48 {
		t.Fatalf("with --heal-per-minute 2 one scan tried to move %d of 50 escaped processes and left %d to the budget, want 2 and 48", tried, limited)
	}
}

// metricValue is the value of an unlabelled metric in a text exposition.
func metricValue(t *testing.T, out, name string) int {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return int(n)
		}
	}
	t.Fatalf("no %s in:\n%s", name, out)
	return 0
}
