package limits

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// A v2 host as systemd leaves it after a daemon-reload strip: c7 directly
// below the root (no cpu, io), c8 below system.slice (idem), c9 in a
// /garden whose subtree_control has everything. The facts say what each
// recorded and what each level has; they judge nothing.
func TestReadV2(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	cg := "sys/fs/cgroup"
	h.Write(cg+"/cgroup.subtree_control", "memory pids\n")
	h.Write(cg+"/system.slice/cgroup.subtree_control", "memory pids\n")
	h.Write(cg+"/system.slice/memory.max", "max\n")
	h.Write(cg+"/garden/cgroup.subtree_control", "cpuset cpu io memory pids\n")
	h.Write(cg+"/garden/memory.max", "max\n")
	res := map[string]any{"memory": 134217728, "memory_swap": 134217728, "pids_limit": 100, "cpu_shares": 512, "cpu_weight": 59, "blkio_weight": 300}
	for i, c := range []struct{ id, cgroup string }{{"c7", "/c7"}, {"c8", "/system.slice/c8"}, {"c9", "/garden/c9"}} {
		h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: c.id, Cgroup: c.cgroup, Resources: res}, 100+10*i, 2, 500)
		h.Write(cg+c.cgroup+"/memory.max", "134217728\n")
		h.Write(cg+c.cgroup+"/memory.swap.max", "0\n")
		h.Write(cg+c.cgroup+"/pids.max", "100\n")
	}
	h.Write(cg+"/garden/c9/cpu.weight", "59\n")
	h.Write(cg+"/garden/c9/io.weight", "default 2930\n")
	// A container without recorded limits, and one not running.
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "plain", Cgroup: "/garden/plain"}, 200, 1, 500)
	h.State(fakehost.Container{RuntimeRoot: "/run/runc", ID: "ghost", Cgroup: "/garden/ghost", Init: 999, InitStart: 5, Resources: res})

	f := readRoot(t, h.Root)
	if !f.Unified || f.Containers != 4 || len(f.Problems) != 0 {
		t.Fatalf("facts: unified %v, containers %d, problems %q", f.Unified, f.Containers, f.Problems)
	}
	var got []string
	for _, p := range f.Processes {
		if p.Err != "" {
			t.Errorf("pid %d: %s", p.PID, p.Err)
		}
		var lvls []string
		for _, lv := range p.Paths[0].Levels {
			lvls = append(lvls, lv.Cgroup+"{"+strings.Join(lv.ParentEnables, " ")+"}"+files(lv.Files))
		}
		got = append(got, p.Container+" "+itoa(p.PID)+" "+p.Expected+" "+strings.Join(lvls, " "))
	}
	leaf := "{memory pids}memory.max=134217728,memory.swap.max=0,pids.max=100"
	want := []string{
		"c7 100 /c7 /c7" + leaf,
		"c7 101 /c7 /c7" + leaf,
		"c8 110 /system.slice/c8 /system.slice{memory pids}memory.max=max /system.slice/c8" + leaf,
		"c8 111 /system.slice/c8 /system.slice{memory pids}memory.max=max /system.slice/c8" + leaf,
		"c9 120 /garden/c9 /garden{memory pids}memory.max=max /garden/c9{cpuset cpu io memory pids}cpu.weight=59,io.weight=default 2930,memory.max=134217728,memory.swap.max=0,pids.max=100",
		"c9 121 /garden/c9 /garden{memory pids}memory.max=max /garden/c9{cpuset cpu io memory pids}cpu.weight=59,io.weight=default 2930,memory.max=134217728,memory.swap.max=0,pids.max=100",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("processes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wants := f.Processes[0].Wants
	var ws []string
	for _, w := range wants {
		ws = append(ws, w.File+"="+w.Value)
	}
	if s := strings.Join(ws, ","); s != "memory.max=134217728,memory.swap.max=0,pids.max=100,cpu.weight=59,io.weight=2930" {
		t.Errorf("wants = %s", s)
	}
}

// A process moved out of the recorded cgroup (Garden's throttling moves
// them to bad/<h>) is read where it is, and so is the container's other
// process moved with it (its pid namespace makes it the container's); a
// host process that shares the new cgroup is not the container's.
func TestReadFollowsTheInit(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.Write("sys/fs/cgroup/cgroup.subtree_control", "cpu memory pids\n")
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "h1", Cgroup: "/garden/good/h1/init", Resources: map[string]any{"memory": 1 << 30}}, 300, 2, 500)
	h.Move(300, "", "/garden/bad/h1")
	h.Move(301, "", "/garden/bad/h1")
	h.Add(fakehost.Proc{PID: 302, Cgroup: "/garden/bad/h1", Start: 600})
	h.Write("sys/fs/cgroup/garden/bad/h1/memory.max", "max\n")
	f := readRoot(t, h.Root)
	var got []string
	for _, p := range f.Processes {
		got = append(got, itoa(p.PID)+"@"+p.Paths[0].Cgroup+" "+files(p.Paths[0].Leaf().Files))
	}
	if s := strings.Join(got, ";"); s != "300@/garden/bad/h1 memory.max=max;301@/garden/bad/h1 memory.max=max" {
		t.Errorf("processes = %s", s)
	}
}

// On v1 each limit is read in its own hierarchy, and no subtree_control.
func TestReadV1(t *testing.T) {
	h := fakehost.New(t, cgroup.Hybrid)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/garden/c1", Resources: map[string]any{"memory": 1 << 30, "cpu_shares": 512}}, 100, 1, 500)
	h.Write("sys/fs/cgroup/memory/garden/c1/memory.limit_in_bytes", "1073741824\n")
	h.Write("sys/fs/cgroup/cpu,cpuacct/garden/c1/cpu.shares", "1024\n")
	f := readRoot(t, h.Root)
	if f.Unified || len(f.Processes) != 1 {
		t.Fatalf("facts = %+v", f)
	}
	var got []string
	for _, p := range f.Processes[0].Paths {
		leaf := p.Leaf()
		got = append(got, p.Key+":"+p.Cgroup+" "+files(leaf.Files)+" "+itoa(len(p.Levels)))
		if leaf.ParentEnables != nil {
			t.Errorf("v1 level has ParentEnables %q", leaf.ParentEnables)
		}
	}
	if s := strings.Join(got, ";"); s != "memory:/garden/c1 memory.limit_in_bytes=1073741824 2;cpu:/garden/c1 cpu.shares=1024 2" {
		t.Errorf("paths = %s", s)
	}
}

// On v1 too, a process that the recorded cgroup's cgroup.procs lists in
// every hierarchy its limits need is in that cgroup there: its
// /proc/<pid>/cgroup is not read (a cell has thousands). One missing here
// proves it; a process listed in only some is read as before.
func TestReadV1TakesListedProcessesFromTheListing(t *testing.T) {
	h := fakehost.New(t, cgroup.Hybrid)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/garden/c1", Resources: map[string]any{"memory": 1 << 30, "cpu_shares": 512}}, 100, 3, 500)
	h.Write("sys/fs/cgroup/memory/garden/c1/memory.limit_in_bytes", "1073741824\n")
	h.Write("sys/fs/cgroup/cpu,cpuacct/garden/c1/cpu.shares", "512\n")
	if err := os.Remove(filepath.Join(h.Root, "proc/101/cgroup")); err != nil {
		t.Fatal(err)
	}
	// 102 is missing from the cpu cgroup's listing: its /proc/<pid>/cgroup
	// is read, as before.
	h.Write("sys/fs/cgroup/cpu,cpuacct/garden/c1/cgroup.procs", "100\n101\n")
	f := readRoot(t, h.Root)
	var got []string
	for _, p := range f.Processes {
		var ps []string
		for _, path := range p.Paths {
			ps = append(ps, path.Key+":"+path.Cgroup+" "+itoa(len(path.Levels)))
		}
		got = append(got, itoa(p.PID)+" "+strings.Join(ps, ",")+" "+p.Err)
	}
	want := "100 memory:/garden/c1 2,cpu:/garden/c1 2 ;101 memory:/garden/c1 2,cpu:/garden/c1 2 ;102 memory:/garden/c1 2,cpu:/garden/c1 2 "
	if s := strings.Join(got, ";"); s != want {
		t.Errorf("processes:\n%s\nwant\n%s", s, want)
	}
}

func TestReadSaysWhatCouldNotBeRead(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/c1", Resources: map[string]any{"memory": 1 << 30}}, 100, 1, 500)
	h.Write("run/runc/c1/state.json", `{"id":"c1","init_process_pid":100,"init_process_start":500,"config":{"cgroups":{"memory":"lots"}},"cgroup_paths":{"":"/sys/fs/cgroup/c1"}}`)
	f := readRoot(t, h.Root)
	// The limits are decoded with the rest of the state (runcstate): a
	// file whose limits are not runc's types is unreadable, as to runc.
	if len(f.Problems) != 1 || !strings.Contains(f.Problems[0], "run/runc/c1/state.json") || !strings.Contains(f.Problems[0], "memory") || len(f.Processes) != 0 {
		t.Errorf("facts = %+v", f)
	}
}

// readRoot reads the facts of a fixture root as a run does: the run's one
// snapshot, then Read over it.
func readRoot(t testing.TB, root string) *Facts {
	t.Helper()
	v, err := snapshot.Read(snapshot.Spec{Root: root, RuntimeRoots: []string{"/run/runc"}})
	if err != nil {
		t.Fatal(err)
	}
	return Read(v)
}

func TestAncestry(t *testing.T) {
	for in, want := range map[string]string{"/": "", "/c7": "/c7", "/a/b/c": "/a,/a/b,/a/b/c"} {
		if got := strings.Join(ancestry(in), ","); got != want {
			t.Errorf("ancestry(%q) = %q, want %q", in, got, want)
		}
	}
}

func files(m map[string]string) string {
	var ks []string
	for k, v := range m {
		ks = append(ks, k+"="+v)
	}
	sortStrings(ks)
	return strings.Join(ks, ",")
}

func itoa(n int) string { return strconv.Itoa(n) }

func sortStrings(s []string) { sort.Strings(s) }

// A state file rewritten (runc update renames a new one into place) is
// decoded again: what runc recorded now is what is judged.
func TestReadSeesARewrittenState(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.Write("sys/fs/cgroup/cgroup.subtree_control", "memory pids\n")
	c := fakehost.Container{RuntimeRoot: "/run/runc", ID: "c1", Cgroup: "/c1", Resources: map[string]any{"memory": 1 << 30}}
	h.RunContainer(c, 100, 1, 500)
	wants := func() string {
		t.Helper()
		f := readRoot(t, h.Root)
		if len(f.Processes) != 1 {
			t.Fatalf("read: %+v", f)
		}
		var ws []string
		for _, w := range f.Processes[0].Wants {
			ws = append(ws, w.File+"="+w.Value)
		}
		return strings.Join(ws, ",")
	}
	if got := wants(); got != "memory.max=1073741824" {
		t.Fatalf("first read: %s", got)
	}
	if got := wants(); got != "memory.max=1073741824" {
		t.Fatalf("unchanged: %s", got)
	}
	c.Init, c.InitStart = 100, 500
	c.Resources = map[string]any{"memory": 1 << 29, "pids_limit": 10}
	h.State(c)
	if got := wants(); got != "memory.max=536870912,pids.max=10" {
		t.Fatalf("after the rewrite: %s", got)
	}
}
