package hostroot

import "testing"

func TestRoots(t *testing.T) {
	for _, tc := range []struct {
		root, dir string
		live      bool
		join      string // of /proc/sys
	}{
		{"", "/", true, "/proc/sys"},
		{"/", "/", true, "/proc/sys"},
		{"/tmp/cell", "/tmp/cell", false, "/tmp/cell/proc/sys"},
		{"/proc/123/root", "/proc/123/root", false, "/proc/123/root/proc/sys"},
	} {
		if Dir(tc.root) != tc.dir || IsLive(tc.root) != tc.live || Join(tc.root, "/proc/sys") != tc.join {
			t.Errorf("root %q: Dir %q IsLive %v Join %q", tc.root, Dir(tc.root), IsLive(tc.root), Join(tc.root, "/proc/sys"))
		}
	}
}
