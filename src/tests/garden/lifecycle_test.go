package garden

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/garden"
)

// TestGardenLifecycle drives each pinned Garden through its API in a
// bookworm box: create from a raw rootfs, run a process, list, destroy,
// and nothing of the container is left in containerd's runc root.
func TestGardenLifecycle(t *testing.T) {
	for _, v := range []garden.Variant{garden.SeedEra, garden.Today} {
		t.Run(string(v), func(t *testing.T) { lifecycle(t, v) })
	}
}

func lifecycle(t *testing.T, v garden.Variant) {
	box := bootBox(t, "garden-life")
	g := garden.Start(t, box, v, garden.GardenService)

	created := g.Create(t, "c1")
	t.Logf("create c1: %.2fs", created.Seconds)
	out := g.RunWait(t, "c1", "sh", "-c", "echo hello from $(cat /proc/self/cgroup | wc -l) cgroups")
	if out.ExitCode == nil || *out.ExitCode != 0 || !strings.HasPrefix(out.Stdout, "hello from") {
		t.Fatalf("run in c1: %+v", out)
	}
	g.Run(t, "c1", "sleep", "3600")
	c := g.Inspect(t, "c1")
	if len(c.PIDs) < 2 {
		t.Fatalf("want c1's init and its sleep, got pids %v", c.PIDs)
	}
	if h := g.List(t); !slices.Equal(h, []string{"c1"}) {
		t.Fatalf("Garden lists %v, want [c1]", h)
	}
	d := g.Destroy(t, "c1", 3*time.Minute)
	if d.Error != "" {
		t.Fatalf("destroy c1: %s", d.Error)
	}
	t.Logf("destroy c1: %.2fs", d.Seconds)
	if h := g.List(t); len(h) != 0 {
		t.Fatalf("after destroy Garden lists %v", h)
	}
	if _, err := box.ReadFile(garden.ShimRoot + "/c1/state.json"); err == nil {
		t.Fatalf("c1's state.json is still in %s after destroy", garden.ShimRoot)
	}
}
