package fakehost

import (
	"os"
	"path/filepath"
	"testing"
)

// Tree is a bare fake root: file helpers that fail the test on error, and
// /proc/sys keys. Host builds on it.
type Tree struct {
	t    testing.TB
	Root string
}

// NewTree makes an empty root in a temporary directory.
func NewTree(t testing.TB) *Tree { return &Tree{t: t, Root: t.TempDir()} }

// Path is the host path p (slash-separated) below the root.
func (tr *Tree) Path(p string) string { return filepath.Join(tr.Root, filepath.FromSlash(p)) }

// Write writes a file relative to the root, making its directories.
func (tr *Tree) Write(rel, content string) { tr.writeAbs(tr.Path(rel), content) }

// Mkdir makes a directory relative to the root.
func (tr *Tree) Mkdir(rel string) { tr.mkdir(tr.Path(rel)) }

// Symlink makes rel a symlink to target (taken as is: an absolute target
// points into the root only for code that resolves it so).
func (tr *Tree) Symlink(rel, target string) {
	tr.t.Helper()
	tr.mkdir(filepath.Dir(tr.Path(rel)))
	if err := os.Symlink(target, tr.Path(rel)); err != nil {
		tr.t.Fatal(err)
	}
}

// Read returns the content of rel, and false when it cannot be read.
func (tr *Tree) Read(rel string) (string, bool) {
	b, err := os.ReadFile(tr.Path(rel))
	if err != nil {
		return "", false
	}
	return string(b), true
}

// SysctlDir is where the kernel's parameters live, below the root.
const SysctlDir = "/proc/sys"

// SetSysctl creates the key at path (relative to /proc/sys, e.g.
// "fs/inotify/max_user_watches") holding value and a newline, as the
// kernel prints it, with mode (0644 read-write, 0444 read-only, 0200
// write-only).
func (tr *Tree) SetSysctl(path, value string, mode os.FileMode) {
	tr.t.Helper()
	p := tr.Path(SysctlDir + "/" + path)
	tr.mkdir(filepath.Dir(p))
	if err := os.WriteFile(p, []byte(value+"\n"), mode); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		tr.t.Fatal(err)
	}
}

// Sysctl returns what the key at path holds, newline included.
func (tr *Tree) Sysctl(path string) string {
	tr.t.Helper()
	b, err := os.ReadFile(tr.Path(SysctlDir + "/" + path))
	if err != nil {
		tr.t.Fatal(err)
	}
	return string(b)
}

func (tr *Tree) writeAbs(path, content string) {
	tr.t.Helper()
	if err := writeFile(path, []byte(content)); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *Tree) mkdir(d string) {
	tr.t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		tr.t.Fatal(err)
	}
}
