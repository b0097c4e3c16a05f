package limits

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// BenchmarkRead is what limits-intact adds to each of watch's event scans
// on the reference cell (250 containers of 20 processes, state files
// shaped like Garden's: 26 KB each): Read over the scan's snapshot, next
// to the shared scan itself (snapshot). It reports; it never asserts a
// time.
func BenchmarkRead(b *testing.B) {
	w, err := fakehost.Generate(filepath.Join(b.TempDir(), "cell"), fakehost.Cell(1))
	if err != nil {
		b.Fatal(err)
	}
	benchRead(b, w.Root, 250, 5000)
}

// BenchmarkReadV2 is the same on a v2 cell of 250 Garden-like containers
// (/garden/<id>, 20 processes each, memory, pids, cpu and io recorded and
// in force).
func BenchmarkReadV2(b *testing.B) {
	h := fakehost.New(b, cgroup.Unified)
	h.Write("sys/fs/cgroup/cgroup.subtree_control", "cpuset cpu io memory pids\n")
	h.Write("sys/fs/cgroup/garden/cgroup.subtree_control", "cpuset cpu io memory pids\n")
	res := map[string]any{"memory": 134217728, "memory_swap": 201326592, "pids_limit": 100, "cpu_shares": 512, "cpu_weight": 59, "blkio_weight": 300}
	for i := range 250 {
		id := fmt.Sprintf("c%03d", i)
		h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: id, Cgroup: "/garden/" + id, Resources: res}, 10000+20*i, 20, 500)
		for f, v := range map[string]string{"memory.max": "134217728", "memory.swap.max": "67108864", "pids.max": "100", "cpu.weight": "59", "io.weight": "default 2930"} {
			h.Write("sys/fs/cgroup/garden/"+id+"/"+f, v+"\n")
		}
	}
	b.ResetTimer()
	benchRead(b, h.Root, 250, 5000)
}

func benchRead(b *testing.B, root string, containers, procs int) {
	spec := snapshot.Spec{Root: root, RuntimeRoots: []string{"/run/runc"}}
	v, err := snapshot.Read(spec)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("limits", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if f := Read(v); f.Containers != containers || len(f.Processes) != procs {
				b.Fatal(f.Containers, len(f.Processes), f.Problems)
			}
		}
	})
	b.Run("snapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := snapshot.Read(spec); err != nil {
				b.Fatal(err)
			}
		}
	})
}
