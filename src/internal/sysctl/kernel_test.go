package sysctl

import (
	"errors"
	"os"
	"strconv"
	"syscall"
	"testing"
)

// requireKernel skips loudly when the test cannot write the real /proc/sys,
// and fails instead in CI (CI=true), where a skip would hide the only test
// against a real kernel.
func requireKernel(t *testing.T, k Key) {
	t.Helper()
	if os.Getenv("CELLGUARD_SKIP_INTEGRATION") == "1" {
		t.Skip("SKIP (real kernel): CELLGUARD_SKIP_INTEGRATION=1")
	}
	why := ""
	if os.Geteuid() != 0 {
		why = "needs root to write /proc/sys"
	} else if f, err := os.OpenFile("/proc/sys/"+k.Path(), os.O_WRONLY, 0); err != nil {
		why = "cannot open /proc/sys/" + k.Path() + " for writing: " + err.Error()
	} else {
		f.Close()
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("real-kernel sysctl test cannot run in CI: %s", why)
	}
	t.Skipf("SKIP (real kernel): %s; run as root to cover apply against the kernel", why)
}

// TestApplyOnRealKernel raises kernel.keys.maxkeys (the non-root key quota;
// global, and one more key allowed harms nothing) by one, checks the
// read-back, idempotence and check, then makes the kernel itself reject
// kernel.keys.maxbytes=0 (its minimum is 1) to prove the rollback. The
// original values come back whatever happens: t.Cleanup and defer both
// restore, so a panic or t.Fatal midway leaves the host as it was.
func TestApplyOnRealKernel(t *testing.T) {
	keys, bytes := MustKey("kernel.keys.maxkeys"), MustKey("kernel.keys.maxbytes")
	requireKernel(t, keys)
	live := Proc{Dir: "/proc/sys"}
	orig := map[Key]string{}
	for _, k := range []Key{keys, bytes} {
		v, err := live.Read(k)
		if err != nil {
			t.Fatal(err)
		}
		orig[k] = NormalizeValue(v)
	}
	restore := func() {
		for k, v := range orig {
			if cur, err := live.Read(k); err == nil && NormalizeValue(cur) == v {
				continue
			}
			if err := live.Write(k, v); err != nil {
				t.Errorf("RESTORE FAILED: %s=%s: %v", k, v, err)
			}
		}
	}
	t.Cleanup(restore)
	defer restore()

	n, err := strconv.Atoi(orig[keys])
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.Itoa(n + 1)
	h := Host{Root: t.TempDir(), Live: live} // real /proc/sys, sysctl.d in a temp tree
	p := Profile{Name: "test", File: DefaultFile, Entries: []Entry{{Key: keys.Name(), Value: want}}}

	rep, err := h.Apply(p)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	kr := rep.Keys[0]
	if kr.Before != orig[keys] || kr.After != want || !kr.Changed || rep.Changed != 1 || !rep.FileChanged {
		t.Fatalf("first apply: %+v (report %+v)", kr, rep)
	}
	if v, _ := live.Read(keys); NormalizeValue(v) != want {
		t.Fatalf("kernel holds %q, want %s", v, want)
	}

	rep, err = h.Apply(p)
	if err != nil || rep.Changed != 0 || rep.FileChanged || rep.Keys[0].Result != ResultUnchanged {
		t.Fatalf("second apply not idempotent: %v %+v", err, rep)
	}
	chk, err := h.Check(p)
	if err != nil || !chk.InForce {
		t.Fatalf("check after apply: %v %+v", err, chk)
	}

	bad := Profile{Name: "test", File: DefaultFile, Entries: []Entry{
		{Key: keys.Name(), Value: strconv.Itoa(n + 2)},
		{Key: bytes.Name(), Value: "0"},
	}}
	rep, err = h.Apply(bad)
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Apply(maxbytes=0): %v, want the kernel's EINVAL as bad input", err)
	}
	if rep.Keys[0].Result != ResultRolledBack || rep.Keys[1].Result != ResultRejected {
		t.Fatalf("results %+v", rep.Keys)
	}
	if v, _ := live.Read(keys); NormalizeValue(v) != want {
		t.Fatalf("maxkeys %q after rollback, want %s", v, want)
	}
	if v, _ := live.Read(bytes); NormalizeValue(v) != orig[bytes] {
		t.Fatalf("maxbytes %q, want untouched %s", v, orig[bytes])
	}
	if f, err := os.ReadFile(hostJoin(h.Root, DefaultFile)); err != nil || string(f) != string(Render(p)) {
		t.Fatalf("persisted file changed by the rejected apply: %q %v", f, err)
	}
}
