package checks

import (
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
)

// TestOwnedByMatchesUnder holds ownedBy to what it replaced: any owned path
// o with cgroup.Under(rel, o).
func TestOwnedByMatchesUnder(t *testing.T) {
	sets := [][]string{
		{},
		{"/garden/c1"},
		{"/garden/c1", "/garden/c10", "/garden/x/c2"},
		{"/garden"},
		{"/"},
		{"/system.slice/garden.service/garden/c1"},
	}
	rels := []string{"/", "/garden", "/garden/c1", "/garden/c1/sub", "/garden/c10", "/garden/c100",
		"/garden/c2", "/garden/x", "/garden/x/c2", "/garden/x/c2/y", "/gardenx", "/system.slice",
		"/system.slice/garden.service/garden/c1/init"}
	for _, set := range sets {
		owned := map[string]bool{}
		for _, o := range set {
			owned[o] = true
		}
		for _, rel := range rels {
			want := false
			for _, o := range set {
				want = want || cgroup.Under(rel, o)
			}
			if got := ownedBy(owned, rel); got != want {
				t.Errorf("owned %v, rel %s: ownedBy %v, Under says %v", set, rel, got, want)
			}
		}
	}
}
