package snapshot

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

func garden(id string) fakehost.Container {
	return fakehost.Container{RuntimeRoot: "/run/runc", ID: id, Cgroup: "/garden/" + id}
}

// One read holds what the checks judge: processes by pid, what each
// container's cgroups listed, and who owns a process no cgroup lists.
func TestReadIndexesTheHost(t *testing.T) {
	h := fakehost.New(t, cgroup.Hybrid)
	h.RunContainer(garden("c1"), 100, 3, 500)
	h.RunContainer(garden("c2"), 200, 2, 600)
	// 102 leaves c1's cgroups in every hierarchy: only its pid namespace
	// ties it to c1.
	for _, hier := range h.Hierarchies() {
		h.Move(102, hier, "/")
	}
	v, err := Read(Spec{Root: h.Root})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(v.Discovery().Containers); n != 2 {
		t.Fatalf("%d containers", n)
	}
	ps := v.Procs()
	for i := 1; i < len(ps); i++ {
		if ps[i-1].PID >= ps[i].PID {
			t.Fatalf("procs not sorted by pid: %d before %d", ps[i-1].PID, ps[i].PID)
		}
	}
	if p := v.Find(201); p == nil || p.Stat.StartTime != h.Get(201).Start {
		t.Fatalf("Find(201) = %+v", p)
	}
	if v.Find(999) != nil {
		t.Fatal("Find of a pid never read")
	}
	c1 := -1
	for i, c := range v.Discovery().Containers {
		if c.Name() == "c1" {
			c1 = i
		}
	}
	if i, ok := v.ListedBy(101); !ok || i != c1 {
		t.Fatalf("ListedBy(101) = %d %v, want c1 (%d)", i, ok, c1)
	}
	if _, ok := v.ListedBy(102); ok {
		t.Fatal("102 left every cgroup but is listed")
	}
	m := v.Members(c1)
	if len(m.Exps) != len(h.Hierarchies()) || !m.InAll(101) || m.InAll(102) {
		t.Fatalf("c1 members %+v", m)
	}
	if got := v.UnlistedOwners()[c1]; len(got) != 1 || got[0] != 102 {
		t.Fatalf("unlisted of c1: %v", got)
	}
	if v.HostNS() != fakehost.HostNS {
		t.Fatalf("host ns %d", v.HostNS())
	}
}

// A Source reads once, however many checks ask.
func TestSourceReadsOnce(t *testing.T) {
	n := 0
	s := From(func() (*Host, error) { n++; return &Host{}, nil })
	a, _ := s.Get()
	b, _ := s.Get()
	if n != 1 || a != b {
		t.Fatalf("read %d times", n)
	}
}

// The snapshot holds /proc/<pid>/cgroup of the processes whose place
// cgroup.procs does not tell (listed in some hierarchies, or in none), and
// not of those listed in every one.
func TestReadHoldsTheCgroupOfProcessesNotListedEverywhere(t *testing.T) {
	h := fakehost.New(t, cgroup.Hybrid)
	h.RunContainer(garden("c1"), 100, 3, 500)
	h.Move(101, "blkio", "/system.slice/garden.service")
	v, err := Read(Spec{Root: h.Root})
	if err != nil {
		t.Fatal(err)
	}
	b, err := v.Cgroup(101)
	if err != nil || !strings.Contains(string(b), "blkio:/system.slice/garden.service") {
		t.Fatalf("cgroup of 101: %q, %v", b, err)
	}
	if _, err := v.Cgroup(102); !errors.Is(err, ErrNotRead) {
		t.Fatalf("cgroup of 102, listed everywhere: %v", err)
	}
}

// With Spec.Procs, Read takes each process's stat from it and reads the
// stat files only of the pids it lacks; a pid it has but /proc does not
// list is no process. When it fails, every stat file is read.
func TestReadTakesStatsFromProcs(t *testing.T) {
	h := fakehost.New(t, cgroup.Hybrid)
	h.RunContainer(garden("c1"), 100, 3, 500)
	given := []procfs.Stat{
		{PID: 102, Comm: "from-procs", State: 'S', PPID: 100, StartTime: 500},
		{PID: 100, Comm: "from-procs", State: 'S', PPID: 1, StartTime: 500}, // out of order: sorted
		{PID: 777, Comm: "gone", State: 'S', PPID: 1, StartTime: 9},
	}
	v, err := Read(Spec{Root: h.Root, Procs: func() ([]procfs.Stat, error) { return given, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if v.StatsErr() != nil {
		t.Fatalf("StatsErr %v", v.StatsErr())
	}
	for pid, want := range map[int]string{100: "from-procs", 102: "from-procs", 101: h.Get(101).Comm} {
		if p := v.Find(pid); p == nil || p.Stat.Comm != want {
			t.Errorf("Find(%d) = %+v, want comm %q", pid, p, want)
		}
	}
	if v.Find(777) != nil {
		t.Error("a pid only Procs had is a process")
	}
	if p := v.Find(100); p == nil || p.NS == 0 {
		t.Errorf("init 100 without its pid namespace: %+v", p)
	}

	v, err = Read(Spec{Root: h.Root, Procs: func() ([]procfs.Stat, error) { return nil, errors.New("no BTF") }})
	if err != nil {
		t.Fatal(err)
	}
	if v.StatsErr() == nil || v.Find(100) == nil || v.Find(100).Stat.Comm != h.Get(100).Comm {
		t.Errorf("Procs failing: StatsErr %v, Find(100) %+v", v.StatsErr(), v.Find(100))
	}
}

// A container without a pid namespace of its own runs in the host's: a
// child of its init that left every cgroup is still its process when it
// shares the init's mount namespace (issue 37: such an escapee survives
// runc kill --all). A host process that only descends from the init, from
// another mount namespace (nsenter'd out), and one that does not descend
// from it are no container's.
func TestReadOwnsHostPidNSEscapees(t *testing.T) {
	for _, mode := range []cgroup.Mode{cgroup.Hybrid, cgroup.Unified} {
		t.Run(mode.String(), func(t *testing.T) {
			h := fakehost.New(t, mode)
			c := garden("pea")
			c.SharedPidNS = true
			h.RunContainer(c, 100, 2, 500)
			for _, hier := range h.Hierarchies() {
				h.Move(101, hier, "/escape")
			}
			h.Add(fakehost.Proc{PID: 102, PPID: 100, Comm: "helper", State: 'S', Start: 510, NS: fakehost.HostNS,
				MntNS: fakehost.HostMntNS, Cgroup: "/system.slice/helper.service"})
			h.Add(fakehost.Proc{PID: 300, PPID: 1, Comm: "sshd", State: 'S', Start: 10, NS: fakehost.HostNS,
				MntNS: fakehost.HostMntNS, Cgroup: "/system.slice/ssh.service"})
			v, err := Read(Spec{Root: h.Root})
			if err != nil {
				t.Fatal(err)
			}
			if got := v.UnlistedOwners()[0]; !slices.Equal(got, []int{101}) {
				t.Fatalf("unlisted processes of the host-pid-ns container: %v, want [101]", got)
			}
			if b, err := v.Cgroup(101); err != nil || !strings.Contains(string(b), "/escape") {
				t.Fatalf("cgroup of the escapee: %q, %v", b, err)
			}
		})
	}
}
