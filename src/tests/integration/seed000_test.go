package integration

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// controllerMoved reports whether a hierarchy holding controller c moved.
func controllerMoved(d map[string][2]string, c string) bool {
	for h := range d {
		for _, part := range strings.Split(h, ",") {
			if part == c {
				return true
			}
		}
	}
	return false
}

func describe(d map[string][2]string) string {
	var parts []string
	for h, ba := range d {
		parts = append(parts, fmt.Sprintf("%s: %s -> %s", h, ba[0], ba[1]))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "nothing moved"
	}
	return strings.Join(parts, "; ")
}

// seed000Scenario starts a Garden stand-in (it moves a child into <own
// cgroup>/garden/c1 in every hierarchy) under some unit, then a brand-new
// unit with CPU and IO accounting, as systemd-tmpfiles-clean does 15 minutes
// after boot. It returns what moved. Each scenario gets a fresh box: once a
// controller is realized in a slice, a second trigger moves nothing.
func seed000Scenario(t *testing.T, box *sdbox.Box, start func(ctl, pidfile string)) map[string][2]string {
	t.Helper()
	ctl, pidfile := installFakeGarden(t, box, "garden")
	start(ctl, pidfile)
	child := readPID(t, box, "/var/vcap/sys/run/garden/child.pid")
	before := cgroups(t, box, child)
	for h, p := range before {
		if !strings.Contains(p, "/garden/c1") {
			t.Fatalf("child %d not placed in garden/c1 in %s (%s): the stand-in failed", child, h, p)
		}
	}
	startTrigger(t, box)
	d := moved(before, cgroups(t, box, child))
	t.Logf("child %d: %s", child, describe(d))
	return d
}

// plainUnit writes and starts garden.service as a release would.
func plainUnit(t *testing.T, box *sdbox.Box, extra string) func(ctl, pidfile string) {
	return func(ctl, _ string) {
		writeFile(t, box, "/etc/systemd/system/garden.service",
			"[Service]\nExecStart="+ctl+" start\nExecStop="+ctl+" stop\n"+extra, 0o644)
		box.Run(t, "systemctl", "daemon-reload")
		box.Run(t, "systemctl", "start", "garden.service")
	}
}

// TestSeed000 is the story cellguard exists for. systemd 252 moves a plain
// unit's container child back (cpu, blkio), still moves blkio under
// Delegate=yes, and moves nothing under the unit `cellguard start` installs.
// Remove the Delegate= option from unitfile.Render and the cellguard case fails.
func TestSeed000(t *testing.T) {
	t.Run("plain unit: cpu and blkio move", func(t *testing.T) {
		box := bootBox(t, "seed-plain")
		d := seed000Scenario(t, box, plainUnit(t, box, ""))
		for _, c := range []string{"cpu", "blkio"} {
			if !controllerMoved(d, c) {
				t.Errorf("%s did not move; the trigger no longer reproduces seed-000 (%s)", c, describe(d))
			}
		}
	})
	t.Run("Delegate=yes: v1 blkio still moves", func(t *testing.T) {
		box := bootBox(t, "seed-yes")
		d := seed000Scenario(t, box, plainUnit(t, box, "Delegate=yes\n"))
		if !controllerMoved(d, "blkio") || controllerMoved(d, "cpu") {
			t.Errorf("want only blkio moved under Delegate=yes (why cellguard lists controllers), got %s", describe(d))
		}
	})
	t.Run("cellguard start: nothing moves", func(t *testing.T) {
		box := bootBox(t, "seed-cg")
		cellguard := box.InstallCellguard(t)
		d := seed000Scenario(t, box, func(ctl, pidfile string) {
			out := box.Run(t, cellguard, "start", "garden", "--start", ctl+" start", "--stop", ctl+" stop", "--pidfile", pidfile)
			t.Logf("cellguard start: %s", strings.TrimSpace(out))
		})
		if len(d) != 0 {
			t.Errorf("under cellguard's unit the child moved: %s", describe(d))
		}
	})
}
