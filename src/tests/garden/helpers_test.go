package garden

import (
	"context"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/testkit/garden"
	"github.com/cloudfoundry/cellguard/src/internal/testkit/sdbox"
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
