package safefile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// TestOpenTrustedPlantedTrees plants each unsafe case on disk, where the
// file itself is fine and only the way to it is not, and checks that the
// refusal names the path at fault and why. Chown needs root.
func TestOpenTrustedPlantedTrees(t *testing.T) {
	testkit.RequireRoot(t, "chown planted directories to another user")
	const nobody = 65534
	type tree struct {
		file string            // relative to the base; created 0600
		dirs map[string]uint32 // relative dir -> mode bits to set (after creation)
		own  []string          // relative dirs chowned to nobody
		link [2]string         // symlink (relative) -> target (relative or absolute)
	}
	for _, tc := range []struct {
		name  string
		tree  tree
		check string // relative path handed to OpenTrusted; "" means tree.file
		fault string // relative path the refusal must name; "" means trusted
		why   string
	}{
		{name: "all root, 0755", tree: tree{file: "a/b/lift.json"}},
		{name: "group-writable parent", tree: tree{file: "a/b/lift.json", dirs: map[string]uint32{"a/b": 0o775}},
			fault: "a/b", why: "group-writable"},
		{name: "group-writable grandparent", tree: tree{file: "a/b/lift.json", dirs: map[string]uint32{"a": 0o775}},
			fault: "a", why: "group-writable"},
		{name: "world-writable grandparent", tree: tree{file: "a/b/lift.json", dirs: map[string]uint32{"a": 0o777}},
			fault: "a", why: "world-writable"},
		{name: "sticky world-writable grandparent", tree: tree{file: "a/b/lift.json", dirs: map[string]uint32{"a": 0o777 | uint32(os.ModeSticky)}}},
		{name: "parent owned by nobody", tree: tree{file: "a/b/lift.json", own: []string{"a/b"}},
			fault: "a/b", why: "owned by uid 65534"},
		{name: "grandparent owned by nobody", tree: tree{file: "a/b/lift.json", own: []string{"a"}},
			fault: "a", why: "owned by uid 65534"},
		{name: "file owned by nobody", tree: tree{file: "a/b/lift.json", own: []string{"a/b/lift.json"}},
			fault: "a/b/lift.json", why: "owned by uid 65534"},
		{name: "symlink to a trusted file", tree: tree{file: "real/lift.json", link: [2]string{"jobs/cellguard", "../real"}},
			check: "jobs/cellguard/lift.json"},
		{name: "symlink into a group-writable directory", tree: tree{file: "real/lift.json", dirs: map[string]uint32{"real": 0o775}, link: [2]string{"jobs/cellguard", "../real"}},
			check: "jobs/cellguard/lift.json", fault: "real", why: "group-writable"},
		{name: "symlink in a directory owned by nobody", tree: tree{file: "real/lift.json", own: []string{"jobs"}, link: [2]string{"jobs/cellguard", "../real"}},
			check: "jobs/cellguard/lift.json", fault: "jobs", why: "owned by uid 65534"},
		{name: "dot-dot after a symlink resolves physically", tree: tree{file: "x/lift.json", dirs: map[string]uint32{"deep": 0o777}, link: [2]string{"l", "deep/y"}},
			check: "l/../../x/lift.json", fault: "deep", why: "world-writable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			j := func(r string) string { return filepath.Join(base, r) }
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(os.MkdirAll(filepath.Dir(j(tc.tree.file)), 0o755))
			must(os.WriteFile(j(tc.tree.file), []byte("{}"), 0o600))
			if l := tc.tree.link; l[0] != "" {
				must(os.MkdirAll(filepath.Dir(j(l[0])), 0o755))
				if tc.name == "dot-dot after a symlink resolves physically" {
					must(os.MkdirAll(j("deep/y"), 0o755))
				}
				must(os.Symlink(l[1], j(l[0])))
			}
			for d, m := range tc.tree.dirs {
				must(os.Chmod(j(d), fs.FileMode(m&0o777)|fs.FileMode(m)&os.ModeSticky))
			}
			for _, o := range tc.tree.own {
				must(os.Chown(j(o), nobody, nobody))
			}
			check := tc.check
			if check == "" {
				check = tc.tree.file
			}
			err := openAndClose(base + "/" + check) // not Join: it would clean "l/.." away
			if tc.fault == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, safefile.ErrUntrusted) || !strings.Contains(err.Error(), j(tc.fault)+" ") || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("OpenTrusted = %v\nwant safefile.ErrUntrusted naming %s and %q", err, j(tc.fault), tc.why)
			}
		})
	}
}

// TestOpenTrustedSymlinkLoop: a link cycle is an error, not a hang.
// openAndClose is OpenTrusted's verdict alone.
func openAndClose(path string) error {
	f, err := safefile.OpenTrusted(path)
	if f != nil {
		f.Close()
	}
	return err
}

func TestOpenTrustedSymlinkLoop(t *testing.T) {
	base := t.TempDir()
	if err := os.Symlink("b", filepath.Join(base, "a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(base, "b")); err != nil {
		t.Fatal(err)
	}
	if err := openAndClose(filepath.Join(base, "a")); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("OpenTrusted of a loop = %v, want ELOOP", err)
	}
}
