package garden

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/garden"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// seed002 is seed 002 with real Garden, in a box where g runs in
// garden.service: gdn is killed behind its supervisor's back (SIGKILL, so it
// saves no properties), and containerd and its tasks run on
// (KillMode=none). While Garden is down one container's init dies (as an OOM
// kill would) and nothing reaps its task. Then the depot is removed and
// Garden's unit started again, as monit's restart would.
//
// Measured: while Garden is down, runtime-ghosts names the dead init's
// state with its pid, and nothing of the live container: its runtime state
// is consistent, and what Garden forgot is not in it. Garden's start
// (gardener.Cleanup) lists containerd's containers, fails to restore each
// (its network properties were never saved) and destroys them all, the
// ghost included; it skips their networks, so a bridge and iptables rules
// per container stay behind (docs/garden.md).
func seed002(t *testing.T, box *sdbox.Box, g *garden.Garden, cellguard string) {
	live, dying := containerWithProcess(t, g, "g1"), containerWithProcess(t, g, "g2")
	box.Run(t, "kill", "-KILL", strconv.Itoa(g.MainPID(t)))
	waitUnitDown(t, box, g.Shape.Unit)
	if alive := garden.Alive(box, live.PIDs); len(alive) != len(live.PIDs) {
		t.Fatalf("g1: pids %v alive of %v after gdn's kill", alive, live.PIDs)
	}
	box.Run(t, "kill", "-KILL", strconv.Itoa(dying.InitPID))
	if alive := garden.WaitGone(box, dying.PIDs, 10*time.Second); len(alive) != 0 {
		t.Fatalf("g2: pids %v alive 10 s after its init's SIGKILL", alive)
	}

	_, report := validateDrain(t, box, cellguard)
	fs := problems(t, report, containerChecks)
	t.Logf("gdn down, g1 running, g2's init killed: %v", fs)
	want := "runtime-ghosts: fail init pid " + strconv.Itoa(dying.InitPID) + " is gone"
	if len(fs) != 1 || !strings.HasPrefix(fs[0], want) || !strings.Contains(fs[0], "/g2/state.json") {
		t.Fatalf("want only runtime-ghosts naming g2's init %d, got %v", dying.InitPID, fs)
	}

	box.Run(t, "rm", "-rf", garden.Depot)
	restarted := time.Now()
	g.Restart(t)
	t.Logf("Garden answered ping %s after its restart without its depot", time.Since(restarted).Round(time.Millisecond))
	for _, h := range []string{"g1", "g2"} {
		for _, msg := range []string{"failed-restoring-container", "clean-up-container.cleaned-up", "no-properties-for-container-skipping-destroy-network"} {
			t.Logf("gdn: %s", g.WaitLog(t, msg, h, 30*time.Second))
		}
	}
	if h := g.List(t); len(h) != 0 {
		t.Fatalf("Garden lists %v after its start cleaned up", h)
	}
	if alive := garden.WaitGone(box, live.PIDs, 10*time.Second); len(alive) != 0 {
		t.Fatalf("g1's pids %v alive after Garden's start destroyed it", alive)
	}
	for _, h := range []string{"g1", "g2"} {
		if _, err := box.ReadFile(garden.ShimRoot + "/" + h + "/state.json"); err == nil {
			t.Fatalf("%s's state.json is still there after Garden's start destroyed it", h)
		}
	}
	_, report = validateDrain(t, box, cellguard)
	if fs := problems(t, report, containerChecks); len(fs) != 0 {
		t.Fatalf("after Garden's start cleaned up: %v", fs)
	}
	// one bridge per container whose network Garden skipped; the churn's
	// and c1's were destroyed with their properties
	out := strings.TrimSpace(box.Run(t, "sh", "-c", "ip -o link show type bridge | grep -c wbrdg- || true"))
	if out != "2" {
		t.Fatalf("want g1's and g2's bridges left behind, found %s Garden bridges", out)
	}
	t.Logf("left behind: g1's and g2's bridges (wbrdg-*) and iptables rules; cellguard has no check for them")
}

func waitUnitDown(t *testing.T, box *sdbox.Box, unit string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := box.Output("systemctl", "show", "-p", "MainPID", "-p", "ActiveState", unit)
		if strings.Contains(out, "MainPID=0") {
			t.Logf("%s after gdn's kill: %s", unit, strings.Join(strings.Fields(out), " "))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still has a main process after gdn's kill: %s", unit, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
