package facts

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// overSnapshot is a Host of root over src (runtime root /run/runc) that
// has read kind.
func overSnapshot(t testing.TB, root string, src *snapshot.Source, kind Kind) *Host {
	t.Helper()
	h := New(Spec{Root: root, Snapshot: src, RuntimeRoots: []string{"/run/runc"}})
	if err := h.Wait(context.Background(), kind); err != nil {
		t.Fatal(err)
	}
	return h
}

// limitsOf waits for the limits facts of a Host over src and fails the
// test when they could not be read.
func limitsOf(t *testing.T, root string, src *snapshot.Source) LimitsFacts {
	t.Helper()
	lf := overSnapshot(t, root, src, Limits).Limits()
	if lf.Err != nil {
		t.Fatalf("limits facts: %v", lf.Err)
	}
	return lf
}

// The limits facts are the run's snapshot's: which containers exist and
// which run come from its one read of the runtime states and of each
// init's stat, not from a second discovery. Removing the runtime root and
// the init's stat after the snapshot was read proves it.
func TestLimitsComeFromTheSnapshot(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.Write("sys/fs/cgroup/cgroup.subtree_control", "memory pids\n")
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/c1", Resources: map[string]any{"memory": 1 << 30}}, 100, 2, 500)
	h.Write("sys/fs/cgroup/c1/memory.max", "1073741824\n")
	src := snapshot.Lazy(snapshot.Spec{Root: h.Root, RuntimeRoots: []string{"/run/runc"}})
	if _, err := src.Get(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"run/runc", "proc/100/stat"} {
		if err := os.RemoveAll(filepath.Join(h.Root, p)); err != nil {
			t.Fatal(err)
		}
	}
	f := limitsOf(t, h.Root, src).Facts
	if f.Containers != 1 || len(f.Processes) != 2 || len(f.Problems) != 0 {
		t.Fatalf("facts: %d containers, %d processes, problems %q; want the snapshot's 1 container of 2", f.Containers, len(f.Processes), f.Problems)
	}
	for _, p := range f.Processes {
		if leaf := p.Paths[0].Leaf(); p.Err != "" || leaf == nil || leaf.Files["memory.max"] != "1073741824" {
			t.Errorf("pid %d: err %q, paths %+v", p.PID, p.Err, p.Paths)
		}
	}
}

// Only the files of limits the runtime recorded are read: a container
// that recorded memory alone is not judged by cpu.max, even one that
// cannot be read (here a directory, EISDIR), and its levels hold no file
// of another limit.
func TestLimitsReadOnlyTheRecordedLimitsFiles(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.Write("sys/fs/cgroup/cgroup.subtree_control", "cpu memory pids\n")
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/c1", Resources: map[string]any{"memory": 1 << 30}}, 100, 1, 500)
	h.Write("sys/fs/cgroup/c1/memory.max", "1073741824\n")
	h.Write("sys/fs/cgroup/c1/pids.max", "max\n")
	h.Mkdir("sys/fs/cgroup/c1/cpu.max")
	f := limitsOf(t, h.Root, snapshot.Lazy(snapshot.Spec{Root: h.Root, RuntimeRoots: []string{"/run/runc"}})).Facts
	if len(f.Processes) != 1 {
		t.Fatalf("facts: %+v", f)
	}
	p := f.Processes[0]
	if p.Err != "" {
		t.Fatalf("pid %d: %s", p.PID, p.Err)
	}
	var read []string
	for name := range p.Paths[0].Leaf().Files {
		read = append(read, name)
	}
	if !slices.Equal(read, []string{"memory.max"}) {
		t.Errorf("files read at the leaf: %q, want only memory.max", read)
	}
}
