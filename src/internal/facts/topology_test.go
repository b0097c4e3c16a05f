package facts

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/topology"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// readSnapshot reads the run's snapshot of root (runtime root /run/runc).
func readSnapshot(t testing.TB, root string) *snapshot.Source {
	t.Helper()
	src := snapshot.Lazy(snapshot.Spec{Root: root, RuntimeRoots: []string{"/run/runc"}})
	if _, err := src.Get(); err != nil {
		t.Fatal(err)
	}
	return src
}

// topologyOf waits for the topology facts of a Host over src and fails
// the test when they could not be read.
func topologyOf(t testing.TB, root string, src *snapshot.Source) *topology.Facts {
	t.Helper()
	tf := overSnapshot(t, root, src, Topology).Topology()
	if tf.Err != nil {
		t.Fatalf("topology facts: %v", tf.Err)
	}
	return tf.Facts
}

// The topology facts are the run's snapshot's: which containers exist,
// which run and which processes are bosh-agent come from its one read of
// the runtime states and of every process's stat, not from a second
// discovery. Removing the runtime root and the stat files after the
// snapshot was read proves it: the topology still sees the container, its
// cgroup's types and the agent.
func TestTopologyComesFromTheSnapshot(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.Write("sys/fs/cgroup/garden/cgroup.type", "domain\n")
	h.Write("sys/fs/cgroup/garden/cgroup.subtree_control", "memory pids\n")
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/garden/c1"}, 100, 2, 500)
	h.Write("sys/fs/cgroup/garden/c1/cgroup.type", "domain\n")
	h.Write("sys/fs/cgroup/garden/c1/cgroup.subtree_control", "\n")
	h.Add(fakehost.Proc{PID: 60, Comm: "bosh-agent", Cgroup: "/system.slice/bosh-agent.service", Start: 10})
	h.Mkdir("var/vcap/bosh")
	src := readSnapshot(t, h.Root)
	for _, p := range []string{"run/runc", "proc/100/stat", "proc/60/stat"} {
		if err := os.RemoveAll(filepath.Join(h.Root, p)); err != nil {
			t.Fatal(err)
		}
	}
	f := topologyOf(t, h.Root, src)
	if len(f.Containers) != 1 || len(f.Problems) != 0 || len(f.Containers[0].Types) != 2 {
		t.Fatalf("containers %+v, problems %q; want the snapshot's c1 in /garden/c1, both cgroups typed", f.Containers, f.Problems)
	}
	if f.Agent == nil || len(f.Agent.Processes) != 1 || f.Agent.Processes[0].PID != 60 {
		t.Fatalf("agent %+v; want the snapshot's bosh-agent, pid 60", f.Agent)
	}
}

// A cgroup of the runtime's tree that the snapshot listed (a container's
// own, here one enabling pids below it with its processes still in it) is
// judged by that listing, not listed again: its cgroup.procs, unreadable
// after the snapshot (a directory: EISDIR), is never opened.
func TestTopologyTakesTheSnapshotsListings(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.Write("sys/fs/cgroup/garden/cgroup.type", "domain\n")
	h.Write("sys/fs/cgroup/garden/cgroup.subtree_control", "pids\n")
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c2", Cgroup: "/garden/c2"}, 110, 2, 500)
	h.Write("sys/fs/cgroup/garden/c2/cgroup.type", "domain\n")
	h.Write("sys/fs/cgroup/garden/c2/cgroup.subtree_control", "pids\n")
	src := readSnapshot(t, h.Root)
	procs := filepath.Join(h.Root, "sys/fs/cgroup/garden/c2/cgroup.procs")
	if err := os.Remove(procs); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(procs, 0o755); err != nil {
		t.Fatal(err)
	}
	f := topologyOf(t, h.Root, src)
	if len(f.Problems) != 0 || len(f.Internal) != 1 || f.Internal[0].Cgroup != "/garden/c2" || !slices.Equal(f.Internal[0].PIDs, []int{110, 111}) {
		t.Fatalf("internal %+v, problems %q; want /garden/c2 with the snapshot's pids 110,111", f.Internal, f.Problems)
	}
}
