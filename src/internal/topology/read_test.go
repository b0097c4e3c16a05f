package topology

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// A unified host with Garden's layout: c1 healthy in /garden/c1/init; c2
// whose init is still in a cgroup that enables pids below it (allowed by
// the kernel for threaded controllers); c3 below a threaded parent; a
// daemon in its unit and the agent outside bosh-agent.service.
func TestReadV2(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	cg := "sys/fs/cgroup"
	h.Write(cg+"/garden/cgroup.subtree_control", "cpu io memory pids\n")
	h.Write(cg+"/garden/cgroup.type", "domain\n")
	for _, c := range []struct {
		id, cg string
		pid    int
	}{{"c1", "/garden/c1/init", 100}, {"c2", "/garden/c2", 110}, {"c3", "/garden/c3/init", 120}} {
		h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: c.id, Cgroup: c.cg}, c.pid, 1, 500)
		h.Write(cg+c.cg+"/cgroup.type", "domain\n")
		h.Write(cg+c.cg+"/cgroup.subtree_control", "\n")
	}
	h.Write(cg+"/garden/c1/cgroup.type", "domain\n")
	h.Write(cg+"/garden/c1/cgroup.subtree_control", "memory pids\n")
	h.Write(cg+"/garden/c2/cgroup.subtree_control", "pids\n")
	h.Write(cg+"/garden/c3/cgroup.type", "domain threaded\n")
	h.Write(cg+"/garden/c3/init/cgroup.type", "threaded\n")
	h.Write(cg+"/garden/c3/cgroup.subtree_control", "pids\n")
	// A container not running is not read.
	h.State(fakehost.Container{RuntimeRoot: "/run/runc", ID: "ghost", Cgroup: "/garden/ghost", Init: 999, InitStart: 5})
	h.Add(fakehost.Proc{PID: 50, Comm: "gdn", Cgroup: "/system.slice/cellguard-garden.service", Start: 10})
	h.Write("var/vcap/sys/run/garden/garden.pid", "50\n")
	h.Add(fakehost.Proc{PID: 60, Comm: "bosh-agent", Cgroup: "/system.slice/runit.service", Start: 10})
	h.Mkdir("var/vcap/bosh")

	f := Read(snap(t, h.Root, "/run/runc"),
		[]DaemonSpec{{"garden", "/var/vcap/sys/run/garden/garden.pid"}, {"containerd", "/var/vcap/sys/run/containerd/containerd.pid"}})
	if f.Mode != cgroup.Unified || len(f.Problems) != 0 {
		t.Fatalf("mode %v, problems %q", f.Mode, f.Problems)
	}
	var got []string
	for _, c := range f.Containers {
		got = append(got, fmt.Sprintf("%s %s %v", c.Name, c.Cgroup, c.Types))
	}
	want := []string{
		"c1 /garden/c1/init [{/garden/c1/init domain} {/garden/c1 domain} {/garden domain}]",
		"c2 /garden/c2 [{/garden/c2 domain} {/garden domain}]",
		"c3 /garden/c3/init [{/garden/c3/init threaded} {/garden/c3 domain threaded} {/garden domain}]",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("containers =\n%q\nwant\n%q", got, want)
	}
	if !reflect.DeepEqual(f.Trees, []string{"/garden"}) {
		t.Errorf("trees = %q", f.Trees)
	}
	if w := []Internal{{Cgroup: "/garden/c2", SubtreeControl: "pids", PIDs: []int{110}}}; !reflect.DeepEqual(f.Internal, w) {
		t.Errorf("internal = %+v, want %+v", f.Internal, w)
	}
	wd := []Daemon{
		{Name: "garden", PIDFile: "/var/vcap/sys/run/garden/garden.pid", PID: 50, Cgroup: "/system.slice/cellguard-garden.service"},
		{Name: "containerd", PIDFile: "/var/vcap/sys/run/containerd/containerd.pid",
			Err: "read pidfile /var/vcap/sys/run/containerd/containerd.pid: open " + h.Root + "/var/vcap/sys/run/containerd/containerd.pid: no such file or directory"},
	}
	if !reflect.DeepEqual(f.Daemons, wd) {
		t.Errorf("daemons =\n%+v\nwant\n%+v", f.Daemons, wd)
	}
	if f.Agent == nil || !reflect.DeepEqual(f.Agent.Processes, []AgentProcess{{60, "/system.slice/runit.service"}}) {
		t.Errorf("agent = %+v", f.Agent)
	}
}

// On v1 and hybrid nothing but the mode is read; without /var/vcap/bosh
// there is no agent to judge.
func TestReadNotUnified(t *testing.T) {
	for _, mode := range []cgroup.Mode{cgroup.Legacy, cgroup.Hybrid} {
		h := fakehost.New(t, mode)
		h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/garden/c1"}, 100, 1, 500)
		f := Read(snap(t, h.Root, "/run/runc"), nil)
		if f.Mode != mode || f.Containers != nil || f.Agent != nil {
			t.Errorf("%v: %+v", mode, f)
		}
	}
}

// Could not read: a missing cgroup.type is a problem, not a silent pass.
// (A host with no cgroup layout has no snapshot: facts says so.)
func TestReadCouldNotRead(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/garden/c1"}, 100, 1, 500)
	f := Read(snap(t, h.Root, "/run/runc"), nil)
	if len(f.Problems) != 2 || f.Agent != nil {
		t.Errorf("problems = %q, agent %+v", f.Problems, f.Agent)
	}
}

// A record naming a cgroup that does not exist (guardian's CPU throttler
// rewrites a privileged container's to /garden/good/<h>; runc put it at
// /system.slice/<h>) is no read problem: the cgroup the init is in is
// judged instead, and the false record is kept for what it is.
func TestReadFalseRecord(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	cg := "sys/fs/cgroup"
	h.Cgroup("/garden/good")
	h.Write(cg+"/garden/good/cgroup.type", "domain\n")
	h.Write(cg+"/garden/cgroup.type", "domain\n")
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/containerd/runc", Namespace: "garden", ID: "p2",
		Cgroup: "/system.slice/p2", Recorded: "/garden/good/p2"}, 1445, 1, 900)
	h.Write(cg+"/system.slice/p2/cgroup.type", "domain\n")
	f := Read(snap(t, h.Root), nil)
	if len(f.Problems) != 0 {
		t.Fatalf("problems = %q", f.Problems)
	}
	want := []Container{{Name: "garden/p2", StatePath: h.Root + "/run/containerd/runc/garden/p2/state.json",
		Cgroup: "/system.slice/p2", Absent: "/garden/good/p2", Types: []Type{{"/system.slice/p2", "domain"}}}}
	if !reflect.DeepEqual(f.Containers, want) {
		t.Fatalf("containers =\n%+v\nwant\n%+v", f.Containers, want)
	}
	if !reflect.DeepEqual(f.Trees, []string{"/system.slice/p2"}) {
		t.Errorf("trees = %q", f.Trees)
	}
}

// snap reads the snapshot of the host under root, as a run does.
func snap(t *testing.T, root string, runtimeRoots ...string) *snapshot.Host {
	t.Helper()
	v, err := snapshot.Read(snapshot.Spec{Root: root, RuntimeRoots: runtimeRoots})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestTree(t *testing.T) {
	for cg, want := range map[string]string{
		"/garden/h/init":                "/garden",
		"/garden/c1":                    "/garden",
		"/c7":                           "/c7",
		"/system.slice/c8":              "/system.slice/c8",
		"/system.slice/garden/c2":       "/system.slice/garden",
		"/system.slice/runc-abc.scope":  "/system.slice/runc-abc.scope",
		"/system.slice/x.service/a/b/c": "/system.slice/x.service/a",
	} {
		if got := Tree(cg); got != want {
			t.Errorf("Tree(%s) = %s, want %s", cg, got, want)
		}
	}
}
