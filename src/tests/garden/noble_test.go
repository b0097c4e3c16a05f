package garden

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/boxwatch"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/garden"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// churnRounds is how many containers the churn makes and destroys through
// Garden after the trigger: each round is create, a process run to its end,
// a process left running, destroy.
const churnRounds = 6

// containerChecks are the checks that judge containers; any finding of theirs
// that is not a pass, while nothing escaped, is a false positive.
var containerChecks = []string{"cgroup-integrity", "devices-cgroup", "runtime-ghosts", "stuck-runc-init"}

// TestTodayOnNoble is today's Garden (v1.58.0) on noble's systemd 255 in the
// hybrid layout. As garden-runc-release ships it (garden.service:
// Delegate=yes, KillMode=none, TasksMax=infinity) the seed-000 trigger moves
// the container's blkio, as on 252: plain Delegate=yes covers v1 io, not
// blkio, there; watch and the drain name the container. With cellguard's
// drop-in (cellguard.delegate_units: [garden.service], written before Garden
// starts) nothing moves, and across the trigger and a churn of containers
// through Garden's API (create, run, destroy) while watch scans every two
// seconds cellguard stays quiet: no false positive. The first subtest is the
// second's control: it shows the trigger moves something on 255, so
// "nothing moved" means something. (A control unit in the second box does
// not move: garden.service's start with the explicit list has realized
// those controllers for the whole slice already.) Seed 002 then runs in the
// second box and Garden.
func TestTodayOnNoble(t *testing.T) {
	sdbox.RequireSuite(t, "noble")
	t.Run("garden.service as shipped: the trigger moves blkio, cellguard names it", func(t *testing.T) {
		box := bootBox(t, "gnoble-shipped", sdbox.WithSuite("noble"))
		g := garden.Start(t, box, garden.Today, garden.GardenService)
		cellguard := box.InstallCellguard(t)
		c := containerWithProcess(t, g, "c1")
		w := startWatch(t, box, cellguard)

		triggerNamed(t, box, g, cellguard, w, c, "blkio")
		d := g.Destroy(t, "c1", time.Minute)
		if d.Error != "" {
			t.Fatalf("destroy c1: %s", d.Error)
		}
		t.Logf("Garden's destroy of c1: ok in %.2fs", d.Seconds)
	})

	t.Run("cellguard unit delegate garden.service before Garden starts: quiet across the trigger and a churn", func(t *testing.T) {
		box := bootBox(t, "gnoble-cg", sdbox.WithSuite("noble"))
		cellguard := box.InstallCellguard(t)
		box.Run(t, cellguard, "unit", "delegate", "garden.service")
		started := time.Now()
		g := garden.Start(t, box, garden.Today, garden.GardenService)
		t.Logf("Garden answered ping %s after its install began; %s", time.Since(started).Round(time.Millisecond),
			strings.TrimSpace(box.Run(t, "systemctl", "show", "-p", "DelegateControllers", "garden.service")))
		triggerAndChurn(t, box, g, cellguard)
		// the same box and Garden: a boot and a Garden start cost a minute
		// or more under load, and seed 002 needs neither fresh
		t.Run("seed 002: gdn killed, restarted without its depot", func(t *testing.T) { seed002(t, box, g, cellguard) })
	})
}

func triggerAndChurn(t *testing.T, box *sdbox.Box, g *garden.Garden, cellguard string) {
	c := containerWithProcess(t, g, "c1")
	w := startWatch(t, box, cellguard, "--period", "2s")

	garden.FireSeed000Trigger(t, box)
	if moved := g.Moved(t, c); len(moved) != 0 {
		t.Fatalf("the trigger moved %v of c1 although garden.service has cellguard's controller list", moved)
	}
	var creates, destroys []float64
	for i := range churnRounds {
		h := fmt.Sprintf("churn%d", i)
		creates = append(creates, g.Create(t, h).Seconds)
		if out := g.RunWait(t, h, "sh", "-c", "echo ok"); out.ExitCode == nil || *out.ExitCode != 0 || strings.TrimSpace(out.Stdout) != "ok" {
			t.Fatalf("run in %s: %+v", h, out)
		}
		g.Run(t, h, "sleep", "3600")
		d := g.Destroy(t, h, time.Minute)
		if d.Error != "" {
			t.Fatalf("destroy %s: %s", h, d.Error)
		}
		destroys = append(destroys, d.Seconds)
	}
	t.Logf("churn of %d containers: create %s s, destroy %s s", churnRounds, garden.SecondsRange(creates), garden.SecondsRange(destroys))
	if moved := g.Moved(t, c); len(moved) != 0 {
		t.Fatalf("c1 moved during the churn: %v", moved)
	}

	code, report := validateDrain(t, box, cellguard)
	if fps := problems(t, report, containerChecks); len(fps) != 0 || code != 0 {
		t.Fatalf("validate --phase drain exited %d with findings where nothing escaped: %v\n%s", code, fps, report)
	}
	// a scan after the churn, so a finding about its last step can clear
	churned := time.Now()
	if _, ok := w.WaitLog("scan", func(l boxwatch.Line) bool { return l.Timestamp.After(churned) }, 15*time.Second); !ok {
		t.Fatal("watch did not scan within 15 s after the churn")
	}
	w.Stop()
	scans := judgeWatch(t, w.Lines())
	if scans < 3 {
		t.Fatalf("watch scanned %d times over the trigger and the churn: it proved nothing", scans)
	}
	t.Logf("watch scanned %d times over the trigger and the churn", scans)
	d := g.Destroy(t, "c1", time.Minute)
	if d.Error != "" {
		t.Fatalf("destroy c1: %s", d.Error)
	}
	t.Logf("destroy c1: ok in %.2fs", d.Seconds)
}

// judgeWatch counts watch's scans and fails the test for every finding of
// a container check and every check that could not run. Findings of other
// checks (the box's sysctls, its own runc's advisories) say nothing about
// Garden and are not judged.
func judgeWatch(t *testing.T, lines []boxwatch.Line) (scans int) {
	t.Helper()
	for _, l := range lines {
		check, _ := l.Data["check"].(string)
		switch {
		case l.Message == "scan":
			scans++
		case l.Message == "check-could-not-run":
			t.Errorf("watch: %s could not run: %v", check, l.Data["error"])
		case l.Message == "finding" && slices.Contains(containerChecks, check):
			t.Errorf("watch: %s %v: %v", check, l.Data["subject"], l.Data["detail"])
		}
	}
	return scans
}

// problems returns "check: status detail" for each finding of the named
// checks that is not a pass or a skip, from validate's JSON report, and
// fails the test for a check that could not run.
func problems(t *testing.T, report string, ids []string) []string {
	t.Helper()
	// the JSON report comes first; drain's one-line verdict follows it
	var rep validator.Report
	if err := json.NewDecoder(strings.NewReader(report)).Decode(&rep); err != nil {
		t.Fatalf("validate's report: %v\n%s", err, report)
	}
	var out []string
	for _, r := range rep.Results {
		if !slices.Contains(ids, r.ID) {
			continue
		}
		if r.Status == validator.Error {
			t.Fatalf("%s could not run: %s", r.ID, r.Error)
		}
		for _, f := range r.Findings {
			if f.Status != validator.Pass && f.Status != validator.Skip {
				out = append(out, r.ID+": "+string(f.Status)+" "+f.Detail)
			}
		}
	}
	return out
}
