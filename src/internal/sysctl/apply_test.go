package sysctl

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// baseTree has the keys the tests' profiles name, at kernel defaults.
func baseTree(t *testing.T) *tree {
	tr := newTree(t)
	tr.key("fs.pipe-user-pages-soft", "16384", 0o644)
	tr.key("fs.inotify.max_user_watches", "8192", 0o644)
	tr.key("kernel.keys.maxkeys", "200", 0o644)
	tr.key("net.ipv4.ip_local_port_range", "32768\t60999", 0o644)
	tr.key("kernel.sem", "32000\t1024000000\t500\t32000", 0o644)
	tr.key("kernel.osrelease", "6.1.0", 0o444)
	tr.key("vm.drop_caches", "", 0o200)
	tr.key("kernel.core_pattern", "core", 0o644)
	return tr
}

func TestApplyWritesPersistsAndIsIdempotent(t *testing.T) {
	tr := baseTree(t)
	p := profileOf("fs.pipe-user-pages-soft=0", "fs.inotify.max_user_watches=524288",
		"net.ipv4.ip_local_port_range=1024 65000", "kernel.core_pattern=|/bin/false %p")
	h := Host{Root: tr.Root}

	rep, err := h.Apply(p)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if rep.Changed != 4 || !rep.Persisted || !rep.FileChanged {
		t.Fatalf("first apply: changed %d persisted %v file changed %v", rep.Changed, rep.Persisted, rep.FileChanged)
	}
	want := map[string][3]string{ // before, after, live file
		"fs.pipe-user-pages-soft":      {"16384", "0", "0\n"},
		"fs.inotify.max_user_watches":  {"8192", "524288", "524288\n"},
		"net.ipv4.ip_local_port_range": {"32768 60999", "1024 65000", "1024 65000\n"},
		"kernel.core_pattern":          {"core", "|/bin/false %p", "|/bin/false %p\n"},
	}
	for _, kr := range rep.Keys {
		w := want[kr.Key]
		if kr.Before != w[0] || kr.After != w[1] || !kr.Changed || kr.Result != ResultChanged {
			t.Errorf("%s: %+v, want before %q after %q changed", kr.Key, kr, w[0], w[1])
		}
		if got := tr.live(kr.Key); got != w[2] {
			t.Errorf("%s live = %q, want %q", kr.Key, got, w[2])
		}
	}
	file, ok := tr.Read(DefaultFile)
	if !ok || string(Render(p)) != file {
		t.Fatalf("persisted file:\n%s\nwant:\n%s", file, Render(p))
	}
	info, err := os.Stat(tr.Path(DefaultFile))
	if err != nil || info.Mode().Perm() != 0o644 {
		t.Fatalf("persisted file mode: %v %v", info, err)
	}

	// The kernel prints the range with a tab; the second run must still see
	// it as set, and touch neither the keys nor the file.
	tr.key("net.ipv4.ip_local_port_range", "1024\t65000", 0o644)
	fk := &fakeKernel{Proc: Proc{Dir: tr.Path("/proc/sys")}}
	rep, err = Host{Root: tr.Root, Live: fk}.Apply(p)
	if err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	if rep.Changed != 0 || rep.FileChanged || !rep.Persisted || len(fk.writes) != 0 {
		t.Fatalf("second apply changed things: %+v, writes %v", rep, fk.writes)
	}
	for _, kr := range rep.Keys {
		if kr.Result != ResultUnchanged || kr.Changed || kr.Before != kr.After {
			t.Errorf("second apply %s: %+v", kr.Key, kr)
		}
	}
	if s := rep.Summary(); !strings.Contains(s, "nothing changed") || !strings.Contains(s, "unchanged") {
		t.Errorf("summary %q should say nothing changed", s)
	}
}

// Every kind of bad input stops Apply before anything is written: no live
// key changes and an existing persisted file keeps its content.
func TestApplyBadInputWritesNothing(t *testing.T) {
	testCases := []struct {
		name  string
		entry string // the bad "key=value"; a good entry is always listed first
		want  string
	}{
		{"unknown key", "kernel.no_such_key=1", "unknown key"},
		{"unknown key below a file", "kernel.sem.x=1", "unknown key"},
		{"traversal dotted", "../../etc/passwd=1", "path traversal"},
		{"traversal slashes", "kernel/../../../etc/shadow=1", "path traversal"},
		{"directory", "fs.inotify=1", "is a directory"},
		{"glob", "fs.inotify.*=1", "not allowed"},
		{"non-numeric", "kernel.keys.maxkeys=lots", "not a decimal number"},
		{"hex", "kernel.keys.maxkeys=0x10", "not a decimal number"},
		{"leading zero", "kernel.keys.maxkeys=010", "leading zero"},
		{"float", "kernel.keys.maxkeys=1.5", "not a decimal number"},
		{"out of 64 bits", "kernel.keys.maxkeys=99999999999999999999999", "out of range"},
		{"two numbers for one", "kernel.keys.maxkeys=1 2", "has 2 number(s), the key holds 1"},
		{"one number for a range", "net.ipv4.ip_local_port_range=1024", "has 1 number(s), the key holds 2"},
		{"text in a vector", "kernel.sem=250 32000 32 lots", "not a decimal number"},
		{"read-only", "kernel.osrelease=7.0", "read-only key"},
		{"write-only", "vm.drop_caches=3", "write-only key"},
		{"empty value", "kernel.keys.maxkeys= ", "value is empty"},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			tr := baseTree(t)
			tr.Write(DefaultFile, "# previous profile\nkernel.keys.maxkeys = 300\n")
			p := profileOf("fs.pipe-user-pages-soft=0", tc.entry)
			fk := &fakeKernel{Proc: Proc{Dir: tr.Path("/proc/sys")}}
			rep, err := Host{Root: tr.Root, Live: fk}.Apply(p)
			if !errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotApplied) {
				t.Fatalf("Apply: %v, want ErrInvalid only", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
			if len(fk.writes) != 0 {
				t.Fatalf("wrote %v despite invalid input", fk.writes)
			}
			if got := tr.live("fs.pipe-user-pages-soft"); got != "16384\n" {
				t.Fatalf("valid key written anyway: %q", got)
			}
			if f, _ := tr.Read(DefaultFile); f != "# previous profile\nkernel.keys.maxkeys = 300\n" {
				t.Fatalf("persisted file replaced: %q", f)
			}
			if rep.Persisted || rep.Keys[0].Result != ResultSkipped || rep.Keys[1].Result != ResultInvalid || rep.Keys[1].Error == "" {
				t.Fatalf("report %+v", rep)
			}
		})
	}
}

// The kernel's own refusal (EINVAL) is found only by writing: every key
// this run wrote is put back and the file is not replaced.
func TestApplyKernelRejectionRollsBack(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EINVAL, syscall.ERANGE} {
		t.Run(errno.Error(), func(t *testing.T) {
			tr := baseTree(t)
			tr.Write(DefaultFile, "old\n")
			fk := &fakeKernel{
				Proc:   Proc{Dir: tr.Path("/proc/sys")},
				reject: map[string]syscall.Errno{"kernel.keys.maxkeys=0": errno},
			}
			p := profileOf("fs.pipe-user-pages-soft=0", "kernel.keys.maxkeys=0", "fs.inotify.max_user_watches=524288")
			rep, err := Host{Root: tr.Root, Live: fk}.Apply(p)
			if !errors.Is(err, ErrInvalid) || !errors.Is(err, errno) {
				t.Fatalf("Apply: %v, want ErrInvalid wrapping %v", err, errno)
			}
			if !strings.Contains(err.Error(), `kernel.keys.maxkeys: the kernel rejected "0"`) {
				t.Fatalf("error %q should name the key and value", err)
			}
			for key, want := range map[string]string{"fs.pipe-user-pages-soft": "16384\n", "kernel.keys.maxkeys": "200\n", "fs.inotify.max_user_watches": "8192\n"} {
				if got := tr.live(key); got != want {
					t.Errorf("%s = %q after rollback, want %q", key, got, want)
				}
			}
			if f, _ := tr.Read(DefaultFile); f != "old\n" {
				t.Fatalf("file replaced after a rejection: %q", f)
			}
			results := map[string]string{}
			for _, kr := range rep.Keys {
				results[kr.Key] = kr.Result
			}
			if results["fs.pipe-user-pages-soft"] != ResultRolledBack || results["kernel.keys.maxkeys"] != ResultRejected ||
				results["fs.inotify.max_user_watches"] != ResultRolledBack {
				t.Fatalf("results %v", results)
			}
			// Rollback runs newest first.
			wantWrites := []string{"fs.pipe-user-pages-soft=0", "kernel.keys.maxkeys=0", "fs.inotify.max_user_watches=524288",
				"fs.inotify.max_user_watches=8192", "fs.pipe-user-pages-soft=16384"}
			if strings.Join(fk.writes, ",") != strings.Join(wantWrites, ",") {
				t.Fatalf("writes %v, want %v", fk.writes, wantWrites)
			}
		})
	}
}

// Refusals that are not the value's fault (EPERM in a container) and values
// the kernel stores differently are apply failures: exit 1, not 2. The file
// is still written because every value is valid for boot.
func TestApplyFailuresAreNotBadInput(t *testing.T) {
	tr := baseTree(t)
	fk := &fakeKernel{
		Proc:   Proc{Dir: tr.Path("/proc/sys")},
		reject: map[string]syscall.Errno{"kernel.keys.maxkeys=1000000": syscall.EPERM},
		round:  map[string]string{"fs.inotify.max_user_watches=1000000": "1048576"},
	}
	p := profileOf("fs.pipe-user-pages-soft=0", "kernel.keys.maxkeys=1000000", "fs.inotify.max_user_watches=1000000")
	rep, err := Host{Root: tr.Root, Live: fk}.Apply(p)
	if !errors.Is(err, ErrNotApplied) || errors.Is(err, ErrInvalid) {
		t.Fatalf("Apply: %v, want ErrNotApplied only", err)
	}
	got := map[string]KeyResult{}
	for _, kr := range rep.Keys {
		got[kr.Key] = kr
	}
	if r := got["kernel.keys.maxkeys"]; r.Result != ResultFailed || r.After != "200" || !strings.Contains(r.Error, "operation not permitted") {
		t.Errorf("EPERM key: %+v", r)
	}
	if r := got["fs.inotify.max_user_watches"]; r.Result != ResultUnverified || r.After != "1048576" || !strings.Contains(r.Error, `the kernel holds "1048576"`) {
		t.Errorf("rounded key: %+v", r)
	}
	if r := got["fs.pipe-user-pages-soft"]; r.Result != ResultChanged || tr.live(r.Key) != "0\n" {
		t.Errorf("good key: %+v", r)
	}
	if f, ok := tr.Read(DefaultFile); !ok || f != string(Render(p)) || !rep.Persisted {
		t.Errorf("file not persisted: %v %q", rep.Persisted, f)
	}
}

func TestApplyRefusesSymlinkedFile(t *testing.T) {
	tr := baseTree(t)
	tr.Symlink(DefaultFile, "/dev/null") // an administrator masked it
	rep, err := Host{Root: tr.Root}.Apply(profileOf("fs.pipe-user-pages-soft=0"))
	if !errors.Is(err, ErrNotApplied) || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("Apply: %v, want ErrNotApplied about the symlink", err)
	}
	if rep.Persisted {
		t.Fatal("reported persisted")
	}
	if n := rep.Keys[0].BootNote; !strings.Contains(n, "symlink to /dev/null") {
		t.Fatalf("boot note %q should explain the mask", n)
	}
}

// apply warns when a file later in the order will undo a value at boot.
func TestApplyBootNote(t *testing.T) {
	tr := baseTree(t)
	tr.Write("/etc/sysctl.d/70-other.conf", "fs.inotify.max_user_watches = 16384\n")
	rep, err := Host{Root: tr.Root}.Apply(profileOf("fs.inotify.max_user_watches=524288", "fs.pipe-user-pages-soft=0"))
	if err != nil {
		t.Fatal(err)
	}
	if n := rep.Keys[0].BootNote; !strings.Contains(n, "/etc/sysctl.d/70-other.conf:1 sets it back to 16384 after ours (60-cellguard.conf)") {
		t.Fatalf("boot note %q", n)
	}
	if n := rep.Keys[1].BootNote; n != "" {
		t.Fatalf("unexpected boot note %q", n)
	}
}

// profile none with nothing set, after a profile: the persisted file goes
// (a reboot must not bring the old values back), the live values stay, and
// a second run does nothing. A file at that path cellguard did not write
// is left alone, and the report says so.
func TestApplyNothingRemovesThePersistedFile(t *testing.T) {
	tr := baseTree(t)
	h := Host{Root: tr.Root}
	if _, err := h.Apply(profileOf("fs.pipe-user-pages-soft=0")); err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.Read(DefaultFile); !ok {
		t.Fatal("the profile was not persisted")
	}
	none, err := Resolve(Settings{Profile: NoProfile})
	if err != nil {
		t.Fatal(err)
	}
	for run, wantRemoved := range []bool{true, false} {
		rep, err := h.Apply(none)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if rep.Removed != wantRemoved || rep.Persisted {
			t.Fatalf("run %d: removed %v persisted %v", run, rep.Removed, rep.Persisted)
		}
		if _, ok := tr.Read(DefaultFile); ok {
			t.Fatalf("run %d: %s still there", run, DefaultFile)
		}
		if got := tr.live("fs.pipe-user-pages-soft"); got != "0\n" {
			t.Fatalf("run %d: live value changed to %q; it must be left alone", run, got)
		}
		if s := rep.Summary(); wantRemoved && !strings.Contains(s, "removed (nothing to persist; live values are left as they are)") {
			t.Errorf("summary %q", s)
		}
	}
	tr.Write(DefaultFile, "# the operator's own\nkernel.pid_max = 4194304\n")
	rep, err := h.Apply(none)
	if err != nil || rep.Removed || !strings.Contains(rep.FileNote, "not written by cellguard") {
		t.Fatalf("foreign file: %+v %v", rep, err)
	}
	if _, ok := tr.Read(DefaultFile); !ok {
		t.Fatal("a file cellguard did not write was removed")
	}
}

// A write killed before its rename leaves .60-cellguard.conf.tmp-N in
// /etc/sysctl.d; the next apply (pre-start) removes one a minute old, and
// leaves a writer's in flight and other files' alone.
func TestApplyRemovesAKilledWritesTempFile(t *testing.T) {
	tr := baseTree(t)
	dir := filepath.Join(tr.Root, filepath.Dir(DefaultFile))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	files := map[string]bool{ // name: removed
		"." + filepath.Base(DefaultFile) + ".tmp-123": true,
		"." + filepath.Base(DefaultFile) + ".tmp-456": false, // in flight
		".99-other.conf.tmp-1":                        false,
	}
	for name := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, "tmp-456") {
			continue
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Host{Root: tr.Root}.Apply(profileOf("fs.pipe-user-pages-soft=0"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.RemovedTemps != 1 || !strings.Contains(rep.Summary(), "1 temp file(s) a killed write left") {
		t.Errorf("removed %d temps, summary %q", rep.RemovedTemps, rep.Summary())
	}
	for name, removed := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		if removed != os.IsNotExist(err) {
			t.Errorf("%s: want removed %v, stat %v", name, removed, err)
		}
	}
}
