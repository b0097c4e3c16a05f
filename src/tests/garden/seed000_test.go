package garden

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/boxwatch"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/garden"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// seedDestroyBound is how long a test waits for Garden's answer to a
// destroy: the 2020 Garden gives up on its own after about two minutes
// (rundmc/runcontainerd/nerd/nerd.go of guardian 28ddcdfa).
const seedDestroyBound = 5 * time.Minute

// TestSeed000AsItHappened is seed 000 with real Garden: xenial (systemd
// 229), Garden of 2020-01 in the unit that holds monit (no Delegate=), as
// releases up to v1.17 ran it. A brand-new unit with resource settings
// moves the container's processes out of the cgroups runc recorded,
// devices included; cellguard's watch names the escape, validate blocks the
// drain, and Garden's destroy fails with its own error. With
// protect-supervisor nothing moves and the destroy succeeds.
func TestSeed000AsItHappened(t *testing.T) {
	sdbox.RequireSuite(t, "xenial")
	t.Run("unprotected: Garden's destroy times out", func(t *testing.T) {
		box := bootBox(t, "gseed-without", xenialOptions()...)
		g := garden.Start(t, box, garden.SeedEra, garden.InMonitUnit)
		cellguard := box.InstallCellguard(t)
		c := containerWithProcess(t, g, "c1")
		w := startWatch(t, box, cellguard)

		triggerNamed(t, box, g, cellguard, w, c, "devices")

		d := g.Destroy(t, "c1", seedDestroyBound)
		t.Logf("Garden's destroy of c1 after %.1fs: %s", d.Seconds, d.Error)
		if !strings.Contains(d.Error, "timed out waiting for container kill") {
			t.Fatalf("want Garden's own error %q, got %+v", "timed out waiting for container kill", d)
		}
		logged := ""
		for _, line := range strings.Split(g.Log(t), "\n") {
			if strings.Contains(line, "destroy.failed") && strings.Contains(line, "timed out waiting for container kill") {
				logged = line
			}
		}
		if logged == "" {
			t.Fatal("gdn's log has no destroy.failed line with the timeout")
		}
		t.Logf("gdn's log: %s", logged)
		if alive := g.Inspect(t, "c1").PIDs; len(alive) == 0 {
			t.Fatal("c1's processes are gone although the destroy failed")
		}
		if h := g.List(t); !slices.Contains(h, "c1") {
			t.Fatalf("Garden no longer lists c1 (%v) although its destroy failed", h)
		}
	})

	t.Run("protect-supervisor: nothing moves, destroy succeeds", func(t *testing.T) {
		box := bootBox(t, "gseed-with", xenialOptions()...)
		g := garden.Start(t, box, garden.SeedEra, garden.InMonitUnit)
		cellguard := box.InstallCellguard(t)
		c := containerWithProcess(t, g, "c1")
		out := box.Run(t, cellguard, "unit", "protect-supervisor", "--pid", strconv.Itoa(g.MainPID(t)))
		t.Logf("protect-supervisor: %s", strings.TrimSpace(out))

		garden.FireSeed000Trigger(t, box)
		if moved := g.Moved(t, c); len(moved) != 0 {
			t.Fatalf("c1 moved although the supervisor's unit is protected: %v", moved)
		}
		d := g.Destroy(t, "c1", seedDestroyBound)
		if d.Error != "" {
			t.Fatalf("destroy c1: %s", d.Error)
		}
		t.Logf("Garden's destroy of c1: ok in %.2fs", d.Seconds)
		if h := g.List(t); len(h) != 0 {
			t.Fatalf("after destroy Garden lists %v", h)
		}
	})
}

// containerWithProcess creates handle through Garden and runs a sleep in it,
// and returns the container as runc recorded it.
func containerWithProcess(t *testing.T, g *garden.Garden, handle string) garden.Container {
	t.Helper()
	g.Create(t, handle)
	g.Run(t, handle, "sleep", "3600")
	c := g.Inspect(t, handle)
	if len(c.PIDs) < 2 {
		t.Fatalf("want %s's init and its sleep, got pids %v", handle, c.PIDs)
	}
	return c
}

// validateDrain runs cellguard validate as the job's drain does and returns
// its exit code and report (stderr: drain's stdout is BOSH's).
// escapesIn returns what cgroup-integrity reported as escaped in validate's
// JSON report: its failing and warning findings. (A search of the whole
// report for "escaped" also matched another check's fix text.)
func escapesIn(t *testing.T, report string) []string {
	t.Helper()
	var rep struct {
		Results []struct {
			ID       string
			Findings []struct{ Status, Detail string }
		}
	}
	if err := json.Unmarshal([]byte(report), &rep); err != nil {
		t.Fatalf("validate's report is not JSON: %v\n%s", err, report)
	}
	var out []string
	for _, r := range rep.Results {
		if r.ID != "cgroup-integrity" {
			continue
		}
		for _, f := range r.Findings {
			if f.Status == "fail" || f.Status == "warn" {
				out = append(out, f.Detail)
			}
		}
	}
	return out
}

func validateDrain(t *testing.T, box *sdbox.Box, cellguard string) (int, string) {
	t.Helper()
	// The config watch reads; a test without watch has none yet, and a
	// validate that could not load one would judge nothing.
	if err := box.WriteFile(boxwatch.Config, []byte(gardenConfig), 0o644); err != nil {
		t.Fatalf("write %s: %v", boxwatch.Config, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := box.Command(ctx, cellguard, "validate", "--phase", "drain", "--config", boxwatch.Config,
		"--log-file", "/var/log/validate.log", "--format", "json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stderr.String()
	}
	t.Fatalf("cellguard validate: %v", err)
	return 0, ""
}
