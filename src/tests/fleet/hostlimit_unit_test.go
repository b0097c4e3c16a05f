package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/sysctl"
)

// TestHostSysctl: the first user raises a low value; a second process (here
// a second hostSysctl on the same lock, as flock locks belong to each open
// file) keeps it raised after the first ends, and the last one puts it back;
// a value already high enough is left alone; a value a killed process left
// raised is put back by the next last one.
func TestHostSysctl(t *testing.T) {
	dir := t.TempDir()
	proc, key := sysctl.Proc{Dir: filepath.Join(dir, "sys")}, sysctl.MustKey("fs.inotify.max_user_instances")
	p := filepath.Join(proc.Dir, "fs/inotify/max_user_instances")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	read := func() string { b, _ := os.ReadFile(p); return strings.TrimSpace(string(b)) }
	os.WriteFile(p, []byte("128\n"), 0o644)
	a := &hostSysctl{proc: proc, key: key, atLeast: 2048, stateDir: dir}
	b := &hostSysctl{proc: proc, key: key, atLeast: 2048, stateDir: dir}
	ra, said, err := a.raise()
	if err != nil || read() != "2048" || !strings.Contains(said, "128 -> 2048") {
		t.Fatalf("first raise: %v, value %s, said %q", err, read(), said)
	}
	ra2, _, _ := a.raise() // a second fleet of the same process
	rb, saidB, err := b.raise()
	if err != nil || saidB != "" {
		t.Fatalf("the other process's raise: %v, said %q", err, saidB)
	}
	ra()
	ra() // once
	ra2()
	if read() != "2048" {
		t.Fatalf("put back while another process's fleets run: %s", read())
	}
	rb()
	if read() != "128" {
		t.Fatalf("after the last release: %s, want 128", read())
	}

	os.WriteFile(p, []byte("8192\n"), 0o644)
	r, said, err := a.raise()
	if err != nil || said != "" || read() != "8192" {
		t.Fatalf("already high: %v %q %s", err, said, read())
	}
	r()
	if read() != "8192" {
		t.Fatalf("a value not raised was changed: %s", read())
	}

	// A killed process: raised, never released (its lock is gone with it).
	os.WriteFile(p, []byte("128\n"), 0o644)
	k := &hostSysctl{proc: proc, key: key, atLeast: 2048, stateDir: dir}
	if _, _, err := k.raise(); err != nil {
		t.Fatal(err)
	}
	k.held.Close() // its locks go with it
	r, _, _ = a.raise()
	r()
	if read() != "128" {
		t.Fatalf("the value a killed process raised: %s, want 128 put back", read())
	}
}
