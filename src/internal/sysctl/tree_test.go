package sysctl

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// tree is a fixture host: a fake /proc/sys and sysctl.d directories below
// one temporary root (fakehost.Tree), keys named as sysctl names them.
type tree struct{ *fakehost.Tree }

func newTree(t *testing.T) *tree {
	t.Helper()
	tr := &tree{Tree: fakehost.NewTree(t)}
	tr.Mkdir(fakehost.SysctlDir)
	return tr
}

// key creates /proc/sys/<path of name> holding value plus a newline.
func (tr *tree) key(name, value string, mode os.FileMode) {
	tr.SetSysctl(MustKey(name).Path(), value, mode)
}

// live is what the key holds now, newline included.
func (tr *tree) live(name string) string { return tr.Sysctl(MustKey(name).Path()) }

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
