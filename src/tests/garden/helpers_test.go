package garden

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/boxwatch"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/garden"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// bootBox boots a fresh box that can run Garden and stops it when the test
// ends. A fresh box per scenario matters: once systemd has realized a
// controller for a slice, a second trigger moves nothing.
func bootBox(t *testing.T, name string, opts ...sdbox.Option) *sdbox.Box {
	t.Helper()
	sdbox.RequireRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	box, err := sdbox.Start(ctx, name, append(garden.BoxOptions(), opts...)...)
	if err != nil {
		t.Fatalf("boot systemd box %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := box.Stop(); err != nil {
			t.Errorf("stop box %s: %v", name, err)
		}
	})
	return box
}

// xenialOptions boot xenial (systemd 229), which runs only in the legacy
// layout under this host's nspawn.
func xenialOptions() []sdbox.Option {
	return []sdbox.Option{sdbox.WithSuite("xenial"), sdbox.WithCgroupMode(cgroup.Legacy), sdbox.WithBootTimeout(180 * time.Second)}
}

// triggerNamed fires the seed-000 trigger with c running and watch w on, and
// requires controller want among those that moved, then that watch logs c's
// escape within 10 s and that the drain blocks naming it.
func triggerNamed(t *testing.T, box *sdbox.Box, g *garden.Garden, cellguard string, w *boxwatch.Watch, c garden.Container, want string) {
	t.Helper()
	fired := time.Now()
	garden.FireSeed000Trigger(t, box)
	moved := g.Moved(t, c)
	t.Logf("systemd %d, Garden in %s: the trigger moved %v", garden.SystemdVersion(t, box), g.Shape.Unit, moved)
	if !slices.Contains(garden.Controllers(moved), want) {
		t.Fatalf("%s of %s did not move (moved: %v): the escape this test documents did not happen; fix docs/garden.md", want, c.Handle, garden.Controllers(moved))
	}
	l := w.MustLog(t, "finding", boxwatch.Subject("garden/"+c.Handle), 10*time.Second)
	t.Logf("watch logged %s %.2fs after the trigger's start was asked for", l.Data["detail"], l.Timestamp.Sub(fired).Seconds())
	code, report := validateDrain(t, box, cellguard)
	if code == 0 || !strings.Contains(report, c.Handle) {
		t.Fatalf("validate --phase drain exited %d without naming %s:\n%s", code, c.Handle, report)
	}
}

// gardenConfig is the config watch and validate read in Garden's boxes.
// Garden's runc is the box's patched copy in garden.RuntimeDir, outside
// PATH and BOSH's runc package: named as an operator would name it, so
// cellguard knows the binary whose children are runc's own
// (checks/runcvouch.go), not by what they call themselves.
var gardenConfig = `{"validator":{"runtime_binaries":{"runc":"` + garden.RuntimeDir + `/bin/runc"}}}`

// startWatch runs cellguard watch in box and returns once it follows
// systemd: a trigger fired before that would go unseen until the next
// period (a race seen once under load: no event, no finding within 10 s).
func startWatch(t *testing.T, box *sdbox.Box, cellguard string, args ...string) *boxwatch.Watch {
	t.Helper()
	w := boxwatch.StartWithConfig(t, box, cellguard, "/var/log/watch.log", gardenConfig, args...)
	if _, ok := w.WaitLog("systemd-connected", nil, 30*time.Second); !ok {
		t.Fatal("cellguard watch did not connect to systemd within 30 s")
	}
	return w
}
