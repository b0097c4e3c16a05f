package sysctl

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// requireKernel skips loudly when the test cannot write the real /proc/sys,
// and fails instead in CI (CI=true), where a skip would hide the only test
// against a real kernel.
func requireKernel(t *testing.T, k Key) {
	t.Helper()
	testkit.SkipIntegration(t)
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
	testkit.Unavailable(t, "real-kernel sysctl test: "+why+"; run as root to cover apply against the kernel")
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
	orig, restore := saveKeys(t, live, keys, bytes)
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
	if f, err := os.ReadFile(hostroot.Join(h.Root, DefaultFile)); err != nil || string(f) != string(Render(p)) {
		t.Fatalf("persisted file changed by the rejected apply: %q %v", f, err)
	}
}

// TestApplyFloorOnRealKernel: on the real kernel a floor below the live
// value writes nothing and persists the live value, and a floor above it
// raises the key. kernel.keys.maxkeys gets a floor of half its value (must
// stay untouched), kernel.keys.maxbytes one above its value (raised by
// one, harmless). Both are restored whatever happens.
func TestApplyFloorOnRealKernel(t *testing.T) {
	keys, bytes := MustKey("kernel.keys.maxkeys"), MustKey("kernel.keys.maxbytes")
	requireKernel(t, bytes)
	live := Proc{Dir: "/proc/sys"}
	orig, restore := saveKeys(t, live, keys, bytes)
	defer restore()

	nk, err1 := strconv.Atoi(orig[keys])
	nb, err2 := strconv.Atoi(orig[bytes])
	if err1 != nil || err2 != nil || nk < 2 {
		t.Fatalf("unexpected kernel values %v", orig)
	}
	floorKeys, floorBytes := strconv.Itoa(nk/2), strconv.Itoa(nb+1)
	rec := &fakeKernel{Proc: live} // records writes, passes them to the kernel
	h := Host{Root: t.TempDir(), Live: rec}
	p := Profile{Name: "test", File: DefaultFile, Entries: []Entry{
		{Key: keys.Name(), Value: floorKeys, Mode: ModeAtLeast},
		{Key: bytes.Name(), Value: floorBytes, Mode: ModeAtLeast},
	}}
	rep, err := h.Apply(p)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if strings.Join(rec.writes, ",") != bytes.Name()+"="+floorBytes {
		t.Fatalf("writes %v, want only %s=%s", rec.writes, bytes, floorBytes)
	}
	if kr := rep.Keys[0]; kr.Result != ResultUnchanged || kr.After != orig[keys] || kr.Persisted != orig[keys] {
		t.Fatalf("maxkeys above its floor: %+v", kr)
	}
	if kr := rep.Keys[1]; kr.Result != ResultChanged || kr.After != floorBytes || kr.Persisted != floorBytes {
		t.Fatalf("maxbytes below its floor: %+v", kr)
	}
	if v, _ := live.Read(keys); NormalizeValue(v) != orig[keys] {
		t.Fatalf("maxkeys %q, want untouched %s", v, orig[keys])
	}
	if rep, err = h.Apply(p); err != nil || rep.Changed != 0 || rep.FileChanged || len(rec.writes) != 1 {
		t.Fatalf("second apply not idempotent: %v %+v writes %v", err, rep, rec.writes)
	}
	if chk, err := h.Check(p); err != nil || !chk.InForce {
		t.Fatalf("check after apply: %v %+v", err, chk)
	}
}

// saveKeys reads the live values of keys and returns them with a restore
// function, also registered with t.Cleanup: callers defer it too, so a
// panic or t.Fatal midway still leaves the host as it was.
func saveKeys(t *testing.T, live Proc, keys ...Key) (map[Key]string, func()) {
	t.Helper()
	orig := map[Key]string{}
	for _, k := range keys {
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
	return orig, restore
}
