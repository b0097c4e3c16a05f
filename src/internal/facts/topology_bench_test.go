package facts

import (
	"context"
	"fmt"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// BenchmarkTopologyV2 is what cgroup-topology's facts add to a run whose
// snapshot is read already, on a v2 BOSH cell of 250 Garden-like
// containers (/garden/<id>, 20 processes each), 1,000 host processes, the
// agent and a daemon: the topology kind alone, as validate and watch wait
// for it. It reports; it never asserts a time.
func BenchmarkTopologyV2(b *testing.B) {
	h := fakehost.New(b, cgroup.Unified)
	h.Write("sys/fs/cgroup/cgroup.subtree_control", "cpu io memory pids\n")
	h.Write("sys/fs/cgroup/garden/cgroup.subtree_control", "cpu io memory pids\n")
	h.Write("sys/fs/cgroup/garden/cgroup.type", "domain\n")
	h.Batch(func() { // one cgroup.procs write, not one per process
		for i := range 250 {
			id := fmt.Sprintf("c%03d", i)
			h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: id, Cgroup: "/garden/" + id}, 10000+20*i, 20, 500)
			h.Write("sys/fs/cgroup/garden/"+id+"/cgroup.type", "domain\n")
			h.Write("sys/fs/cgroup/garden/"+id+"/cgroup.subtree_control", "\n")
		}
		for pid := 100; pid < 1100; pid++ {
			h.Add(fakehost.Proc{PID: pid, Comm: "sh", Cgroup: "/system.slice/x.service", Start: 10})
		}
		h.Add(fakehost.Proc{PID: 60, Comm: "bosh-agent", Cgroup: "/system.slice/bosh-agent.service", Start: 10})
		h.Add(fakehost.Proc{PID: 50, Comm: "gdn", Cgroup: "/system.slice/cellguard-garden.service", Start: 10})
	})
	h.Write("var/vcap/sys/run/garden/garden.pid", "50\n")
	h.Mkdir("var/vcap/bosh")
	src := readSnapshot(b, h.Root)
	b.ReportAllocs()
	for b.Loop() {
		host := New(Spec{Root: h.Root, Snapshot: src, RuntimeRoots: []string{"/run/runc"},
			Daemons: []Daemon{{Name: "garden", PIDFile: "/var/vcap/sys/run/garden/garden.pid"}}})
		if err := host.Wait(context.Background(), Topology); err != nil {
			b.Fatal(err)
		}
		if tf := host.Topology(); tf.Err != nil || len(tf.Facts.Containers) != 250 || tf.Facts.Agent == nil || len(tf.Facts.Agent.Processes) != 1 {
			b.Fatalf("topology: %+v", tf)
		}
	}
}
