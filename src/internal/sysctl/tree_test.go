package sysctl

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// tree is a fixture host: a fake /proc/sys and sysctl.d directories below
// one temporary root.
type tree struct {
	t    *testing.T
	root string
}

func newTree(t *testing.T) *tree {
	t.Helper()
	tr := &tree{t: t, root: t.TempDir()}
	tr.mkdir("/proc/sys")
	return tr
}

func (tr *tree) path(p string) string { return filepath.Join(tr.root, filepath.FromSlash(p)) }

func (tr *tree) mkdir(p string) {
	tr.t.Helper()
	if err := os.MkdirAll(tr.path(p), 0o755); err != nil {
		tr.t.Fatal(err)
	}
}

// key creates /proc/sys/<path of name> holding value plus a newline, the
// way the kernel prints it.
func (tr *tree) key(name, value string, mode os.FileMode) {
	tr.t.Helper()
	p := "/proc/sys/" + MustKey(name).Path()
	tr.mkdir(filepath.Dir(p))
	if err := os.WriteFile(tr.path(p), []byte(value+"\n"), mode); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.Chmod(tr.path(p), mode); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *tree) live(name string) string {
	tr.t.Helper()
	b, err := os.ReadFile(tr.path("/proc/sys/" + MustKey(name).Path()))
	if err != nil {
		tr.t.Fatal(err)
	}
	return string(b)
}

func (tr *tree) write(p, content string) {
	tr.t.Helper()
	tr.mkdir(filepath.Dir(p))
	if err := os.WriteFile(tr.path(p), []byte(content), 0o644); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *tree) symlink(p, target string) {
	tr.t.Helper()
	tr.mkdir(filepath.Dir(p))
	if err := os.Symlink(target, tr.path(p)); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *tree) read(p string) (string, bool) {
	b, err := os.ReadFile(tr.path(p))
	if err != nil {
		return "", false
	}
	return string(b), true
}

// profileOf builds a profile with "key=value" entries.
func profileOf(kvs ...string) Profile {
	p := Profile{Name: "test", File: DefaultFile}
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		p.Entries = append(p.Entries, Entry{Key: k, Value: v, From: "test"})
	}
	return p
}

// fakeKernel wraps Proc with the kernel behaviours a file tree cannot show:
// values it rejects with an errno and values it rounds.
type fakeKernel struct {
	Proc
	reject map[string]syscall.Errno // "key=value" -> errno on write
	round  map[string]string        // "key=value" -> value stored instead
	writes []string                 // every "key=value" written, in order
}

func (f *fakeKernel) Write(k Key, v string) error {
	f.writes = append(f.writes, k.Name()+"="+v)
	if errno, ok := f.reject[k.Name()+"="+v]; ok {
		return &os.PathError{Op: "write", Path: f.file(k), Err: errno}
	}
	if r, ok := f.round[k.Name()+"="+v]; ok {
		v = r
	}
	return f.Proc.Write(k, v)
}
