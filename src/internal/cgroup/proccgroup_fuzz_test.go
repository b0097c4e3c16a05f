package cgroup

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/fuzzseed"
)

// FuzzParseProcCgroup: /proc/<pid>/cgroup of any process on the host. Every
// accepted entry must be a line of the input, split at its first two
// colons (paths may hold colons), and lookups must not panic.
func FuzzParseProcCgroup(f *testing.F) {
	for _, b := range fuzzseed.Files(f, "testdata/seeds/proccgroup/*") {
		f.Add(b)
	}
	f.Add([]byte("4:cpu,cpuacct:/garden/a:b\n\n0::/\n"))
	f.Add([]byte(strings.Repeat("1:pids:/\n", 33)))
	f.Add([]byte("::\n:"))
	var m Membership
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := ParseProcCgroup(b, &m); err != nil {
			return
		}
		lines := bytes.Split(b, []byte("\n"))
		for _, e := range m.Entries() {
			if bytes.IndexByte(e.ID, ':') >= 0 || bytes.IndexByte(e.Controllers, ':') >= 0 || bytes.IndexByte(e.Path, '\n') >= 0 {
				t.Fatalf("entry %q %q %q from %q", e.ID, e.Controllers, e.Path, b)
			}
			line := bytes.Join([][]byte{e.ID, e.Controllers, e.Path}, []byte(":"))
			found := false
			for _, l := range lines {
				if bytes.Equal(l, line) {
					found = true
				}
			}
			if !found {
				t.Fatalf("entry %q is not a line of %q", line, b)
			}
		}
		for _, key := range []string{"", "memory", "cpu", "cpuacct", "name=systemd", "blkio"} {
			if p, ok := m.Lookup(key); ok && bytes.IndexByte(p, '\n') >= 0 {
				t.Fatalf("Lookup(%q) = %q", key, p)
			}
		}
	})
}

// FuzzSplit: a cgroup_paths value from a state.json on disk maps to a
// hierarchy and a cgroup path whose directory never leaves that hierarchy.
func FuzzSplit(f *testing.F) {
	l := &Layout{Root: "/fixture", Mode: Hybrid, Hierarchies: []*Hierarchy{
		{Name: "cpu,cpuacct", Controllers: []string{"cpu", "cpuacct"}, Dir: MountDir + "/cpu,cpuacct"},
		{Name: "memory", Controllers: []string{"memory"}, Dir: MountDir + "/memory"},
		{Name: "name=systemd", Controllers: []string{"name=systemd"}, Dir: MountDir + "/systemd"},
		{Name: "unified", Dir: MountDir + "/unified", Unified: true},
	}}
	for _, s := range []string{"/sys/fs/cgroup/memory/garden/c1", "/sys/fs/cgroup/cpu,cpuacct/../../../../etc",
		"/sys/fs/cgroup/unified", "sys/fs/cgroup/memory/x", "/sys/fs/cgroup/memoryx/y", "/sys/fs/cgroup/memory/../memory/./a//b/"} {
		f.Add(s, "/garden")
	}
	f.Fuzz(func(t *testing.T, abs, dir string) {
		h, rel, ok := l.Split(abs)
		if ok {
			base := filepath.Join(l.Root, h.Dir)
			if p := l.Path(h, rel); p != base && !strings.HasPrefix(p, base+"/") {
				t.Fatalf("Split(%q) = %s %q: directory %s is outside %s", abs, h.Name, rel, p, base)
			}
			if !strings.HasPrefix(rel, "/") {
				t.Fatalf("Split(%q): relative cgroup path %q", abs, rel)
			}
		}
		if Under(abs, dir) && dir != "/" && abs != dir && !strings.HasPrefix(abs, dir+"/") {
			t.Fatalf("Under(%q, %q) without a separator after the prefix", abs, dir)
		}
	})
}
