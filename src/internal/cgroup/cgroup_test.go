package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	cgroups "github.com/containerd/cgroups/v3"
)

func TestParseProcCgroup(t *testing.T) {
	testCases := []struct {
		name string
		in   string
		want map[string]string // key -> path; "" is v2
		miss []string
	}{
		{
			name: "v1 co-mounted and named",
			in:   "9:name=systemd:/system.slice/garden.service\n4:cpu,cpuacct:/garden/c1\n3:memory:/garden/c1\n",
			want: map[string]string{"cpu": "/garden/c1", "cpuacct": "/garden/c1", "memory": "/garden/c1", "name=systemd": "/system.slice/garden.service"},
			miss: []string{"", "pids", "cpu,cpuacct", "systemd"},
		},
		{
			name: "hybrid",
			in:   "2:blkio:/system.slice\n1:name=systemd:/garden/c1\n0::/garden/c1\n",
			want: map[string]string{"blkio": "/system.slice", "name=systemd": "/garden/c1", "": "/garden/c1"},
		},
		{
			name: "v2",
			in:   "0::/system.slice/containerd.service/garden/c1\n",
			want: map[string]string{"": "/system.slice/containerd.service/garden/c1"},
			miss: []string{"memory"},
		},
		{
			name: "path with colon",
			in:   "0::/a:b\n",
			want: map[string]string{"": "/a:b"},
		},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			var m Membership
			if err := ParseProcCgroup([]byte(tc.in), &m); err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.want {
				got, ok := m.Lookup(k)
				if !ok || string(got) != want {
					t.Errorf("Lookup(%q) = %q, %v; want %q", k, got, ok, want)
				}
			}
			for _, k := range tc.miss {
				if got, ok := m.Lookup(k); ok {
					t.Errorf("Lookup(%q) = %q, want not found", k, got)
				}
			}
			// Agree with containerd's parser on every key it reports.
			legacy, unified, err := cgroups.ParseCgroupFromReaderUnified(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			for k, want := range legacy {
				if got, _ := m.Lookup(k); string(got) != want {
					t.Errorf("containerd says %s=%q, we say %q", k, want, got)
				}
			}
			if got, ok := m.Lookup(""); ok && string(got) != unified {
				t.Errorf("containerd says unified=%q, we say %q", unified, got)
			}
		})
	}
}

func TestParseProcCgroupRejectsGarbage(t *testing.T) {
	var m Membership
	for _, in := range []string{"garbage\n", "1:cpu\n"} {
		if err := ParseProcCgroup([]byte(in), &m); err == nil {
			t.Errorf("ParseProcCgroup(%q) succeeded", in)
		}
	}
}

func TestParseProcCgroupAllocatesNothing(t *testing.T) {
	in := []byte("9:name=systemd:/x\n8:pids:/x\n4:cpu,cpuacct:/garden/c1\n0::/x\n")
	var m Membership
	allocs := testing.AllocsPerRun(100, func() {
		_ = ParseProcCgroup(in, &m)
		_, _ = m.Lookup("cpuacct")
		_, _ = m.Lookup("")
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per parse", allocs)
	}
}

func mkLayout(t *testing.T, mode string) string {
	t.Helper()
	root := t.TempDir()
	base := filepath.Join(root, MountDir)
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(base, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	touch := func(p string) {
		if err := os.WriteFile(filepath.Join(base, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	switch mode {
	case "unified":
		mk("")
		touch("cgroup.controllers")
	default:
		for _, h := range []string{"cpu,cpuacct", "memory", "systemd", "pids"} {
			mk(h)
		}
		if err := os.Symlink("cpu,cpuacct", filepath.Join(base, "cpu")); err != nil {
			t.Fatal(err)
		}
		if mode == "hybrid" {
			mk("unified")
			touch("unified/cgroup.controllers")
		}
	}
	return root
}

func TestDiscover(t *testing.T) {
	testCases := []struct {
		mode  string
		want  Mode
		names []string
	}{
		{"legacy", Legacy, []string{"cpu,cpuacct", "memory", "name=systemd", "pids"}},
		{"hybrid", Hybrid, []string{"cpu,cpuacct", "memory", "name=systemd", "pids", "unified"}},
		{"unified", Unified, []string{"unified"}},
	}
	for _, tc := range testCases {
		t.Run(tc.mode, func(t *testing.T) {
			l, err := Discover(mkLayout(t, tc.mode))
			if err != nil {
				t.Fatal(err)
			}
			if l.Mode != tc.want {
				t.Fatalf("mode %v, want %v", l.Mode, tc.want)
			}
			var names []string
			for _, h := range l.Hierarchies {
				names = append(names, h.Name)
			}
			if strings.Join(names, " ") != strings.Join(tc.names, " ") {
				t.Fatalf("hierarchies %v, want %v", names, tc.names)
			}
		})
	}
}

func TestSplitAndForKey(t *testing.T) {
	l, err := Discover(mkLayout(t, "hybrid"))
	if err != nil {
		t.Fatal(err)
	}
	testCases := []struct {
		abs, hier, rel string
		ok             bool
	}{
		{"/sys/fs/cgroup/cpu,cpuacct/garden/c1", "cpu,cpuacct", "/garden/c1", true},
		{"/sys/fs/cgroup/unified/garden/c1", "unified", "/garden/c1", true},
		{"/sys/fs/cgroup/systemd/garden/c1/", "name=systemd", "/garden/c1", true},
		{"/sys/fs/cgroup/memory", "memory", "/", true},
		{"/sys/fs/cgroup/hugetlb/garden/c1", "", "", false}, // not mounted here
		{"/sys/fs/cgroup/memoryx/a", "", "", false},
	}
	for _, tc := range testCases {
		h, rel, ok := l.Split(tc.abs)
		if ok != tc.ok || (ok && (h.Name != tc.hier || rel != tc.rel)) {
			t.Errorf("Split(%q) = %v %q %v", tc.abs, h, rel, ok)
		}
	}
	for key, want := range map[string]string{"cpuacct": "cpu,cpuacct", "": "unified", "name=systemd": "name=systemd", "blkio": ""} {
		h := l.ForKey(key)
		if (h == nil) != (want == "") || (h != nil && h.Name != want) {
			t.Errorf("ForKey(%q) = %v, want %q", key, h, want)
		}
	}
}

func TestUnder(t *testing.T) {
	for _, tc := range []struct {
		p, dir string
		want   bool
	}{
		{"/garden/c1", "/garden/c1", true},
		{"/garden/c1/sub", "/garden/c1", true},
		{"/garden/c10", "/garden/c1", false},
		{"/garden", "/garden/c1", false},
		{"/anything", "/", true},
	} {
		if got := Under(tc.p, tc.dir); got != tc.want {
			t.Errorf("Under(%q, %q) = %v", tc.p, tc.dir, got)
		}
	}
}

// On the live host, the layout reading must agree with containerd's statfs.
func TestDetectModeLiveMatchesLayout(t *testing.T) {
	if cgroups.Mode() == cgroups.Unavailable {
		t.Skip("no cgroup mount on this host")
	}
	live, err := DetectMode("/")
	if err != nil {
		t.Fatal(err)
	}
	fromFiles, err := detectFromLayout("/")
	if err != nil {
		t.Fatal(err)
	}
	if live != fromFiles {
		t.Fatalf("statfs says %v, layout says %v", live, fromFiles)
	}
}

func TestReadProcsAndMoveValidation(t *testing.T) {
	root := mkLayout(t, "unified")
	l, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, MountDir, "garden/c1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("12\n7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, pids, err := ReadProcs(dir, nil, nil)
	if err != nil || len(pids) != 2 || pids[0] != 12 || pids[1] != 7 {
		t.Fatalf("ReadProcs = %v, %v", pids, err)
	}
	if _, _, err := ReadProcs(filepath.Join(dir, "gone"), nil, nil); !errors.Is(err, ErrNoCgroup) {
		t.Fatalf("ReadProcs(missing) = %v, want ErrNoCgroup", err)
	}
	h := l.Hierarchies[0]
	for _, bad := range []string{"garden/c1", "/garden/../../etc", "/garden//c1"} {
		if err := l.Move(h, bad, 12); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("Move(%q) = %v, want ErrInvalidPath", bad, err)
		}
	}
	if err := l.Move(h, "/garden/nope", 12); !errors.Is(err, ErrNoCgroup) {
		t.Errorf("Move(missing cgroup) = %v, want ErrNoCgroup", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A check that fails writes nothing and is returned as is.
	notSame := errors.New("not the process")
	if err := l.MoveChecked(h, "/garden/c1", 12, func() error { return notSame }); err != notSame {
		t.Errorf("MoveChecked with a failing check = %v, want its error", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs")); len(b) != 0 {
		t.Fatalf("a failed check wrote %q", b)
	}
	if err := l.Move(h, "/garden/c1", 12); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs")); string(b) != "12" {
		t.Fatalf("cgroup.procs got %q", b)
	}
}

func TestWalk(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"garden/c1/sub", "garden/c2", "garden/leak"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	err := Walk(filepath.Join(root, "garden"), "/garden", func(dir, rel string) error {
		seen = append(seen, rel)
		if rel == "/garden/c1" {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(seen, " "); got != "/garden /garden/c1 /garden/c2 /garden/leak" {
		t.Fatalf("walked %s", got)
	}
}

// TestProcsReader reads cgroup.procs relative to each hierarchy's open
// directory: the root cgroup, a nested one, one that is gone, and one
// larger than a read buffer, with the same results as ReadProcs.
func TestProcsReader(t *testing.T) {
	root := mkLayout(t, "hybrid")
	l, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	mem := l.ForKey("memory")
	var big []byte
	var bigWant []int
	for pid := 100000; len(big) < 3*4096; pid++ {
		big = strconv.AppendInt(big, int64(pid), 10)
		big = append(big, '\n')
		bigWant = append(bigWant, pid)
	}
	for rel, content := range map[string][]byte{"/": []byte("1\n2\n"), "/garden/c1": []byte("12\n7\n"), "/garden/big": big} {
		dir := l.Path(mem, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := l.NewProcsReader()
	defer r.Close()
	for rel, want := range map[string][]int{"/": {1, 2}, "/garden/c1": {12, 7}, "/garden/big": bigWant} {
		got, err := r.Read(mem, rel)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("Read(memory, %s) = %d pids, %v; want %d", rel, len(got), err, len(want))
		}
		_, viaPath, err := ReadProcs(l.Path(mem, rel), nil, nil)
		if err != nil || !slices.Equal(viaPath, got) {
			t.Errorf("ReadProcs(%s) differs from the reader: %v", rel, err)
		}
	}
	if _, err := r.Read(mem, "/garden/gone"); !errors.Is(err, ErrNoCgroup) {
		t.Errorf("Read(gone) = %v, want ErrNoCgroup", err)
	}
	if _, err := r.Read(&Hierarchy{Name: "nope", Dir: MountDir + "/nope"}, "/"); !errors.Is(err, ErrNoCgroup) {
		t.Errorf("Read(unmounted hierarchy) = %v, want ErrNoCgroup", err)
	}
}
