package checks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// peaRace is a host where Garden made pea p1 of sandbox c1 while the
// snapshot was read: the snapshot read the states before p1's existed and
// the processes after its init ran (`sleep`, pid 200, in p1's own cgroup,
// in c1's pid namespace, its runc gone). created says whether p1's state
// is there by the time the judges ask again. c1 records a memory limit
// that p1's cgroup does not have; hierarchies is how many the host has.
func peaRace(t *testing.T, mode cgroup.Mode, created bool) (d testDeps, hierarchies int) {
	t.Helper()
	h := fakehost.New(t, mode)
	memoryLimit := memoryLimits(h, mode)
	c1 := garden("c1")
	c1.Resources = map[string]any{"memory": 1 << 30}
	h.RunContainer(c1, 100, 2, 500)
	h.Write(memoryLimit(c1.Cgroup), "1073741824\n")
	p1 := garden("p1")
	p1.JoinPidNS = fakehost.NSOf(100)
	h.RunContainer(p1, 200, 1, 600)
	h.Write(memoryLimit(p1.Cgroup), "max\n")
	d = deps(h)
	if created {
		d.Snapshot = snapshotWithout(t, h, p1)
	} else {
		if err := os.RemoveAll(filepath.Join(h.Root, p1.RuntimeRoot, p1.ID)); err != nil {
			t.Fatal(err)
		}
	}
	return d, len(h.Hierarchies())
}

// snapshotWithout is the snapshot of h read while c's state was not there
// yet; it is there again when snapshotWithout returns.
func snapshotWithout(t *testing.T, h *fakehost.Host, c fakehost.Container) *snapshot.Source {
	t.Helper()
	state := filepath.Join(h.Root, c.RuntimeRoot, c.Namespace, c.ID)
	hidden := filepath.Join(h.Root, "hidden-"+c.ID)
	if err := os.Rename(state, hidden); err != nil {
		t.Fatal(err)
	}
	snap := snapshot.Lazy(snapshot.Spec{Root: h.Root})
	if _, err := snap.Get(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(hidden, state); err != nil {
		t.Fatal(err)
	}
	return snap
}

// A pea made while the snapshot was read is not its sandbox's escapee, nor
// a process of the sandbox without the sandbox's limits, once its state
// exists: both judges ask the runtime states again before they report.
// While no state claims its cgroup, it is still reported: only a record
// of another container excuses it.
func TestPeaMadeDuringTheSnapshotIsNotItsSandboxs(t *testing.T) {
	for _, mode := range allModes {
		for _, id := range []string{"cgroup-integrity", "limits-intact"} {
			for _, created := range []bool{true, false} {
				name := mode.String() + "/" + id + "/state written"
				if !created {
					name = mode.String() + "/" + id + "/no state"
				}
				t.Run(name, func(t *testing.T) {
					d, hierarchies := peaRace(t, mode, created)
					var got []string
					for _, f := range failures(run(t, d, id)) {
						got = append(got, f.Subject+":"+f.Data["pid"])
					}
					want := ""
					if !created {
						want = "c1:200"
						if id == "cgroup-integrity" { // one escape per hierarchy
							want = strings.TrimSpace(strings.Repeat("c1:200 ", hierarchies))
						}
					}
					if g := strings.Join(got, " "); g != want {
						t.Fatalf("findings %q, want %q", g, want)
					}
				})
			}
		}
	}
}

// A record of the root claims nothing: a sandbox's process moved to / is
// its escapee even when a container whose state the snapshot missed names
// /.
func TestLateStatesRootClaimsNothing(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			h := fakehost.New(t, mode)
			h.RunContainer(garden("c1"), 100, 2, 500)
			odd := fakehost.Container{RuntimeRoot: "/run/runc", ID: "odd", Cgroup: "/"}
			h.RunContainer(odd, 300, 1, 700)
			p := h.Get(101)
			p.Cgroup = "/"
			h.Update(p)
			d := deps(h)
			d.Snapshot = snapshotWithout(t, h, odd)
			n := 0
			for _, f := range failures(run(t, d, "cgroup-integrity")) {
				if f.Subject == "c1" && f.Data["pid"] == "101" {
					n++
				}
			}
			if n != len(h.Hierarchies()) {
				t.Fatalf("c1's pid 101 at /: %d findings, want one per hierarchy (%d)", n, len(h.Hierarchies()))
			}
		})
	}
}
