package checks

import (
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// Seed 002 with real Garden: a ghost in Garden's containerd namespace says
// what Garden's restart cleans (the container, if gdn cannot restore it)
// and leaves (its network); a ghost of another owner says nothing of
// Garden, and the fix no longer tells the operator to let Garden destroy a
// container Garden may have forgotten.
func TestRuntimeGhostSaysWhatGardenRestartCleans(t *testing.T) {
	const cleans = "gdn's next start destroys it only if it cannot restore it (a gdn killed rather than stopped saved no properties and restores none), and then leaves its bridge and iptables rules"
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			h := fakehost.New(t, mode)
			h.RunContainer(fakehost.Container{RuntimeRoot: "/run/containerd/runc", Namespace: "garden", ID: "g2", Cgroup: "/garden/g2"}, 100, 1, 500)
			h.RunContainer(fakehost.Container{RuntimeRoot: "/run/containerd/runc", Namespace: "concourse", ID: "b1", Cgroup: "/concourse/b1"}, 200, 1, 500)
			h.Kill(100)
			h.Kill(200)
			bad := failures(run(t, deps(h), "runtime-ghosts"))
			if len(bad) != 2 {
				t.Fatalf("want the two ghosts, got %+v", bad)
			}
			for _, f := range bad {
				switch f.Subject {
				case "garden/g2":
					if !strings.HasPrefix(f.Detail, "init pid 100 is gone") || !strings.HasSuffix(f.Detail, "; Garden's restart: "+cleans) {
						t.Errorf("Garden's ghost: %q", f.Detail)
					}
				case "concourse/b1":
					if strings.Contains(f.Detail, "Garden's restart") || strings.Contains(f.Detail, "gdn") {
						t.Errorf("concourse's ghost speaks of Garden: %q", f.Detail)
					}
				default:
					t.Errorf("unexpected subject %q", f.Subject)
				}
			}
		})
	}
	fix := (&RuntimeGhosts{}).Meta().Fix
	if strings.Contains(fix, "let Garden") || !strings.Contains(fix, "what gdn's next start cleans and leaves") {
		t.Errorf("fix: %q", fix)
	}
}
