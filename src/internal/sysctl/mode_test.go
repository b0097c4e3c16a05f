package sysctl

import (
	"errors"
	"strings"
	"testing"
)

// persistedValue is the value our file gives key at boot, read back with
// the boot model.
func persistedValue(t *testing.T, tr *tree, key string) string {
	t.Helper()
	boot, err := LoadBoot(tr.Root)
	if err != nil {
		t.Fatal(err)
	}
	var v string
	for _, a := range boot.History(MustKey(key)) {
		if boot.File(a).Path == DefaultFile {
			v = a.Value
		}
	}
	return v
}

// TestApplyModes runs apply for one entry per case on a fake tree, then
// again: the second run must write nothing, live or to the file. W is a
// capacity limit (a floor in the profile), P a limit where 0 is
// unlimited (exact).
func TestApplyModes(t *testing.T) {
	const (
		W = "fs.inotify.max_user_watches"
		P = "fs.pipe-user-pages-soft"
	)
	floor := Entry{Key: W, Value: "524288", Mode: ModeAtLeast}
	testCases := []struct {
		name    string
		entry   Entry
		live    string
		files   map[string]string // host path -> content
		round   map[string]string // kernel stores another value
		result  string
		after   string // live value after apply
		persist string // what our file sets
		note    []string
		bootNot string // substring of the boot note, "" for none
	}{
		{
			name: "floor raises a lower value", entry: floor, live: "8192",
			result: ResultChanged, after: "524288", persist: "524288",
		},
		{
			name: "floor equal to the live value", entry: floor, live: "524288",
			result: ResultUnchanged, after: "524288", persist: "524288",
		},
		{
			// The reported bug: user.max_user_namespaces went from the
			// kernel's 96365 to 63359. Above the floor nothing is written,
			// and the file keeps the live value so a reboot does not lower it.
			name: "live value above the floor stays untouched", entry: floor, live: "1048576",
			result: ResultUnchanged, after: "1048576", persist: "1048576",
			note: []string{"already at least 524288 (1048576), left alone",
				"60-cellguard.conf keeps 1048576 so a reboot does not lower it: the live value when cellguard applied it (no other sysctl.d file sets the key)"},
		},
		{
			// Ours is read after 50-vendor.conf: writing the bare floor
			// would lower the vendor's value at boot.
			name: "earlier file sets it higher", entry: floor, live: "2097152",
			files:  map[string]string{"/usr/lib/sysctl.d/50-vendor.conf": W + " = 2097152\n"},
			result: ResultUnchanged, after: "2097152", persist: "2097152",
			note: []string{"already at least 524288 (2097152), left alone",
				"60-cellguard.conf keeps 2097152 so a reboot does not lower it: what /usr/lib/sysctl.d/50-vendor.conf:1 sets"},
		},
		{
			// A runtime raise over a file that sets less than the floor: the
			// floor is what beats that file at boot; the live value is
			// left alone now.
			name: "earlier file below the floor, live raised at runtime", entry: floor, live: "1048576",
			files:  map[string]string{"/etc/sysctl.d/50-ops.conf": W + " = 8192\n"},
			result: ResultUnchanged, after: "1048576", persist: "524288",
			note: []string{"already at least 524288 (1048576), left alone"},
		},
		{
			name: "later file sets it higher", entry: floor, live: "4194304",
			files:  map[string]string{"/etc/sysctl.d/70-ops.conf": W + " = 4194304\n"},
			result: ResultUnchanged, after: "4194304", persist: "4194304",
			note: []string{"what /etc/sysctl.d/70-ops.conf:1 sets"},
		},
		{
			name: "later file below the floor wins at boot", entry: floor, live: "16384",
			files:  map[string]string{"/etc/sysctl.d/70-ops.conf": W + " = 16384\n"},
			result: ResultChanged, after: "524288", persist: "524288",
			bootNot: "/etc/sysctl.d/70-ops.conf:1 sets it back to 16384, below the floor 524288, after ours (60-cellguard.conf)",
		},
		{
			// A floor is met by a kernel that rounds up (pipe sizes are
			// page counts); the file then holds what the kernel holds, so
			// the second run writes the same file.
			name: "kernel rounds a floor up", entry: Entry{Key: W, Value: "1000000", Mode: ModeAtLeast}, live: "8192",
			round:  map[string]string{W + "=1000000": "1048576"},
			result: ResultChanged, after: "1048576", persist: "1048576",
			note: []string{"60-cellguard.conf keeps 1048576", "the live value when cellguard applied it"},
		},
		{
			name: "exact lowers a higher value", entry: Entry{Key: P, Value: "0", Mode: ModeExact}, live: "16384",
			result: ResultChanged, after: "0", persist: "0",
		},
		{
			name: "exact equal", entry: Entry{Key: P, Value: "0", Mode: ModeExact}, live: "0",
			result: ResultUnchanged, after: "0", persist: "0",
		},
		{
			name: "empty mode is exact", entry: Entry{Key: W, Value: "524288"}, live: "1048576",
			result: ResultChanged, after: "524288", persist: "524288",
		},
		{
			name: "exact ignores a higher earlier file", entry: Entry{Key: W, Value: "524288", Mode: ModeExact}, live: "2097152",
			files:  map[string]string{"/usr/lib/sysctl.d/50-vendor.conf": W + " = 2097152\n"},
			result: ResultChanged, after: "524288", persist: "524288",
		},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTree(t)
			tr.key(tc.entry.Key, tc.live, 0o644)
			for p, c := range tc.files {
				tr.Write(p, c)
			}
			p := Profile{Name: "test", File: DefaultFile, Entries: []Entry{tc.entry}}
			fk := &fakeKernel{Proc: Proc{Dir: tr.Path("/proc/sys")}, round: tc.round}
			rep, err := Host{Root: tr.Root, Live: fk}.Apply(p)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			kr := rep.Keys[0]
			if kr.Result != tc.result || kr.After != tc.after || kr.Before != tc.live {
				t.Fatalf("result %s before %q after %q, want %s %q %q (%+v)", kr.Result, kr.Before, kr.After, tc.result, tc.live, tc.after, kr)
			}
			if got := tr.live(tc.entry.Key); got != tc.after+"\n" {
				t.Fatalf("live %q, want %q", got, tc.after)
			}
			if (tc.result == ResultUnchanged) != (len(fk.writes) == 0) {
				t.Fatalf("writes %v for result %s", fk.writes, tc.result)
			}
			if got := persistedValue(t, tr, tc.entry.Key); got != tc.persist || kr.Persisted != tc.persist {
				t.Fatalf("persisted %q (report %q), want %q", got, kr.Persisted, tc.persist)
			}
			if kr.Mode != tc.entry.Mode.OrExact() {
				t.Errorf("mode %q", kr.Mode)
			}
			rest := kr.Note
			for _, w := range tc.note {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("note %q\nlacks %q", kr.Note, w)
				}
				rest = rest[i+len(w):]
			}
			if len(tc.note) == 0 && kr.Note != "" {
				t.Errorf("unexpected note %q", kr.Note)
			}
			if tc.bootNot == "" && kr.BootNote != "" || !strings.Contains(kr.BootNote, tc.bootNot) {
				t.Errorf("boot note %q, want %q", kr.BootNote, tc.bootNot)
			}
			file, _ := tr.Read(DefaultFile)

			// Second run: nothing written, live or on disk.
			fk2 := &fakeKernel{Proc: Proc{Dir: tr.Path("/proc/sys")}, round: tc.round}
			rep2, err := Host{Root: tr.Root, Live: fk2}.Apply(p)
			if err != nil {
				t.Fatalf("second Apply: %v", err)
			}
			if len(fk2.writes) != 0 || rep2.Changed != 0 || rep2.FileChanged || rep2.Keys[0].Result != ResultUnchanged {
				t.Fatalf("second apply not idempotent: writes %v, %+v", fk2.writes, rep2)
			}
			if again, _ := tr.Read(DefaultFile); again != file {
				t.Fatalf("file changed on the second run:\n%s\nwas:\n%s", again, file)
			}
			// What apply leaves is what check calls in force, unless a later
			// file wins at boot.
			chk, err := Check(tr.Root, p)
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.bootNot == ""; chk.InForce != want {
				t.Fatalf("check in force %v, want %v: %+v", chk.InForce, want, chk.Keys[0])
			}
		})
	}
}

// The file follows other files rather than holding a snapshot: when the
// operator lowers their earlier file, the next apply lowers ours with it,
// never below the floor, and leaves the live value alone.
func TestApplyFloorFollowsOtherFiles(t *testing.T) {
	const W = "fs.inotify.max_user_watches"
	tr := newTree(t)
	tr.key(W, "2097152", 0o644)
	tr.Write("/etc/sysctl.d/50-ops.conf", W+" = 2097152\n")
	p := Profile{Name: "test", File: DefaultFile, Entries: []Entry{{Key: W, Value: "524288", Mode: ModeAtLeast}}}
	h := Host{Root: tr.Root}
	if _, err := h.Apply(p); err != nil {
		t.Fatal(err)
	}
	if got := persistedValue(t, tr, W); got != "2097152" {
		t.Fatalf("persisted %q, want the earlier file's 2097152", got)
	}
	for _, step := range []struct{ ops, persist string }{{"1048576", "1048576"}, {"4096", "524288"}} {
		tr.Write("/etc/sysctl.d/50-ops.conf", W+" = "+step.ops+"\n")
		rep, err := h.Apply(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := persistedValue(t, tr, W); got != step.persist || !rep.FileChanged {
			t.Fatalf("ops file %s: persisted %q (file changed %v), want %s", step.ops, got, rep.FileChanged, step.persist)
		}
		if tr.live(W) != "2097152\n" || rep.Keys[0].Result != ResultUnchanged {
			t.Fatalf("live value touched: %q %+v", tr.live(W), rep.Keys[0])
		}
	}
}

// A floor only makes sense for a key holding one number; the mode must be
// known. Bad input stops apply before anything is written.
func TestApplyFloorBadInput(t *testing.T) {
	testCases := []struct {
		name  string
		entry Entry
		want  string
	}{
		{"floor on a vector", Entry{Key: "kernel.sem", Value: "250", Mode: ModeAtLeast}, `a floor (>=250) needs a key holding one number; the kernel holds "32000 1024000000 500 32000"`},
		{"floor on a range", Entry{Key: "net.ipv4.ip_local_port_range", Value: "1024", Mode: ModeAtLeast}, "a floor (>=1024) needs a key holding one number"},
		{"floor on text", Entry{Key: "kernel.core_pattern", Value: "5", Mode: ModeAtLeast}, "a floor (>=5) needs a key holding one number"},
		{"floor not a number", Entry{Key: "kernel.keys.maxkeys", Value: "lots", Mode: ModeAtLeast}, `floor "lots": "lots" is not a decimal number`},
		{"unknown mode", Entry{Key: "kernel.keys.maxkeys", Value: "5", Mode: "at-most"}, `unknown mode "at-most"`},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			tr := baseTree(t)
			fk := &fakeKernel{Proc: Proc{Dir: tr.Path("/proc/sys")}}
			p := Profile{Name: "test", File: DefaultFile, Entries: []Entry{{Key: "fs.pipe-user-pages-soft", Value: "0"}, tc.entry}}
			_, err := Host{Root: tr.Root, Live: fk}.Apply(p)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Apply: %v, want ErrInvalid saying %q", err, tc.want)
			}
			if len(fk.writes) != 0 {
				t.Fatalf("wrote %v", fk.writes)
			}
			if _, ok := tr.Read(DefaultFile); ok {
				t.Fatal("file persisted despite invalid input")
			}
		})
	}
}

// TestCheckModes: a floor is in force when live and boot values are at
// least it; drift names the file that sets it lower. Exact keys drift on
// any other value, higher too.
func TestCheckModes(t *testing.T) {
	const (
		W = "fs.inotify.max_user_watches"
		P = "fs.pipe-user-pages-soft"
	)
	floor := Entry{Key: W, Value: "524288", Mode: ModeAtLeast}
	exact := Entry{Key: P, Value: "0", Mode: ModeExact}
	testCases := []struct {
		name   string
		entry  Entry
		files  map[string]string
		live   string
		status string
		want   []string // substrings of the explanation, in order
	}{
		{
			name: "floor: live and boot above", entry: floor, live: "1048576",
			files:  map[string]string{DefaultFile: W + " = 1048576\n"},
			status: InForce,
		},
		{
			name: "floor: live above, boot at the floor", entry: floor, live: "2097152",
			files:  map[string]string{DefaultFile: W + " = 524288\n"},
			status: InForce,
		},
		{
			name: "floor: later file sets it higher", entry: floor, live: "524288",
			files: map[string]string{
				DefaultFile:                 W + " = 524288\n",
				"/etc/sysctl.d/70-ops.conf": W + " = 1048576\n",
			},
			status: InForce,
		},
		{
			name: "floor: live below", entry: floor, live: "8192",
			files:  map[string]string{DefaultFile: "# x\n" + W + " = 524288\n"},
			status: LiveDrift,
			want: []string{"the live value is 8192, below the floor 524288, although /etc/sysctl.d/60-cellguard.conf:2 sets 524288 at boot: " +
				"systemd-sysctl has not run since"},
		},
		{
			name: "floor: later file sets it lower", entry: floor, live: "1048576",
			files: map[string]string{
				DefaultFile:                 W + " = 1048576\n",
				"/etc/sysctl.d/70-ops.conf": W + " = 16384\n",
			},
			status: BootDrift,
			want:   []string{"/etc/sysctl.d/70-ops.conf:1 sets it back to 16384, below the floor 524288, after ours (60-cellguard.conf), so it wins at boot"},
		},
		{
			name: "floor: both below, the live value is the later file's", entry: floor, live: "16384",
			files: map[string]string{
				DefaultFile:                 W + " = 524288\n",
				"/etc/sysctl.d/70-ops.conf": W + " = 16384\n",
			},
			status: Drift,
			want: []string{
				"/etc/sysctl.d/70-ops.conf:1 sets it back to 16384, below the floor 524288, after ours",
				"the live value 16384, below the floor 524288, is what /etc/sysctl.d/70-ops.conf:1 sets",
			},
		},
		{
			name: "floor: /etc/sysctl.conf read last sets it lower", entry: floor, live: "524288",
			files: map[string]string{
				DefaultFile:        W + " = 524288\n",
				"/etc/sysctl.conf": W + " = 16384\n",
			},
			status: BootDrift,
			want:   []string{"/etc/sysctl.conf:1 sets it to 16384, below the floor 524288, and is read last, after ours"},
		},
		{
			name: "floor: our file is stale", entry: floor, live: "524288",
			files:  map[string]string{DefaultFile: W + " = 8192\n"},
			status: BootDrift,
			want:   []string{"/etc/sysctl.d/60-cellguard.conf:1 sets 8192, below the floor 524288: the file is stale"},
		},
		{
			name: "floor: glob sets it lower, ours missing", entry: floor, live: "524288",
			files:  map[string]string{"/usr/lib/sysctl.d/70-glob.conf": "fs/inotify/max_user_* = 1\n"},
			status: BootDrift,
			want:   []string{"sets it to 1 (glob fs.inotify.max_user_*), below the floor 524288, at boot and ours does not set it"},
		},
		{
			name: "floor: a live value that is no number", entry: floor, live: "lots",
			files:  map[string]string{DefaultFile: W + " = 524288\n"},
			status: LiveDrift,
			want:   []string{"the live value is lots, below the floor 524288"},
		},
		{
			name: "exact: live above is drift", entry: exact, live: "16384",
			files:  map[string]string{DefaultFile: P + " = 0\n"},
			status: LiveDrift,
			want:   []string{"the live value is 16384 although /etc/sysctl.d/60-cellguard.conf:1 sets 0 at boot"},
		},
		{
			name: "exact: later file higher is drift", entry: exact, live: "0",
			files: map[string]string{
				DefaultFile:                 P + " = 0\n",
				"/etc/sysctl.d/70-ops.conf": P + " = 16384\n",
			},
			status: BootDrift,
			want:   []string{"/etc/sysctl.d/70-ops.conf:1 sets it back to 16384 after ours (60-cellguard.conf), so it wins at boot"},
		},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTree(t)
			tr.key(tc.entry.Key, tc.live, 0o644)
			for p, c := range tc.files {
				tr.Write(p, c)
			}
			fk := &fakeKernel{Proc: Proc{Dir: tr.Path("/proc/sys")}}
			rep, err := Host{Root: tr.Root, Live: fk}.Check(Profile{Name: "test", File: DefaultFile, Entries: []Entry{tc.entry}})
			if err != nil {
				t.Fatal(err)
			}
			kc := rep.Keys[0]
			if kc.Status != tc.status || rep.InForce != (tc.status == InForce) || kc.Mode != tc.entry.Mode {
				t.Fatalf("status %s mode %s, want %s %s; %+v", kc.Status, kc.Mode, tc.status, tc.entry.Mode, kc)
			}
			rest := kc.Explanation
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("explanation %q\nlacks %q", kc.Explanation, w)
				}
				rest = rest[i+len(w):]
			}
			if tc.status == InForce && kc.Explanation != "" {
				t.Errorf("in force but explained: %q", kc.Explanation)
			}
			if tc.entry.Mode == ModeExact && strings.Contains(kc.Explanation, "floor") {
				t.Errorf("exact key explained as a floor: %q", kc.Explanation)
			}
			if len(fk.writes) != 0 {
				t.Fatalf("check wrote %v", fk.writes)
			}
		})
	}
}

func TestResolveFloors(t *testing.T) {
	get := func(t *testing.T, p Profile, key string) Entry {
		t.Helper()
		for _, e := range p.Entries {
			if e.Key == key {
				return e
			}
		}
		t.Fatalf("no %s in %+v", key, p.Entries)
		return Entry{}
	}
	p, err := Resolve(Settings{Set: map[string]string{
		"kernel.pid_max":               ">=4194304", // the profile's own floor: no override
		"fs.inotify.max_user_watches":  "524288",    // the profile's number, now exact
		"kernel.keys.maxkeys":          ">= 2000000",
		"fs.pipe-user-pages-soft":      "0",
		"net.core.somaxconn":           ">=4096",
		"net.ipv4.ip_local_port_range": "1024 65000",
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		key, value string
		mode       Mode
		from       string
	}{
		{"kernel.pid_max", "4194304", ModeAtLeast, "profile " + ContainerHost},
		{"fs.inotify.max_user_watches", "524288", ModeExact, "override"},
		{"kernel.keys.maxkeys", "2000000", ModeAtLeast, "override"},
		{"fs.pipe-user-pages-soft", "0", ModeExact, "profile " + ContainerHost},
		{"net.core.somaxconn", "4096", ModeAtLeast, "config"},
		{"net.ipv4.ip_local_port_range", "1024 65000", ModeExact, "config"},
		{"user.max_user_namespaces", "63359", ModeAtLeast, "profile " + ContainerHost},
	} {
		e := get(t, p, w.key)
		if e.Value != w.value || e.Mode != w.mode || e.From != w.from {
			t.Errorf("%s: %q %s from %q, want %q %s from %q", w.key, e.Value, e.Mode, e.From, w.value, w.mode, w.from)
		}
	}
	if e := get(t, p, "fs.inotify.max_user_watches"); !strings.Contains(e.Why, "profile value >=524288") {
		t.Errorf("override why %q should name the profile's floor", e.Why)
	}
	f := string(Render(p))
	if !strings.Contains(f, "# at least 4096\nnet.core.somaxconn = 4096\n") ||
		!strings.Contains(f, "\nfs.inotify.max_user_watches = 524288\n") {
		t.Errorf("rendered file:\n%s", f)
	}
	for _, line := range strings.Split(f, "\n") {
		if !strings.HasPrefix(line, "#") && strings.Contains(line, ">=") {
			t.Errorf("the >= syntax reached an assignment: %q", line)
		}
	}

	for _, bad := range []struct{ key, value, want string }{
		{"net.ipv4.ip_local_port_range", ">=1024 65000", "takes one number"},
		{"kernel.pid_max", ">=lots", "must be a decimal number"},
		{"kernel.pid_max", ">=0x10", "must be a decimal number"},
		{"kernel.pid_max", ">=", "needs a number"},
		{"kernel.core_pattern", ">=1", "holds text"},
	} {
		_, err := Resolve(Settings{Set: map[string]string{bad.key: bad.value}})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("set %s=%q: %v, want ErrInvalid saying %q", bad.key, bad.value, err, bad.want)
		}
	}
}

func TestCompareDecimal(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		c    int
		ok   bool
	}{
		{"96365", "63359", 1, true},
		{"63359", "63359", 0, true},
		{"8192", "524288", -1, true},
		{"18446744073692774399", "4194304", 1, true}, // kernel.shmmax, above int64
		{"-1", "0", -1, true},
		{"", "1", 0, false},
		{"1 2", "1", 0, false},
		{"010", "1", 0, false},
	} {
		c, ok := compareDecimal(tc.a, tc.b)
		if c != tc.c || ok != tc.ok {
			t.Errorf("compareDecimal(%q, %q) = %d %v, want %d %v", tc.a, tc.b, c, ok, tc.c, tc.ok)
		}
	}
}

// TestEntrySatisfiedBy: a value read elsewhere (over bosh ssh, by the
// fleet) judged as check judges a live one: exact is equal after
// normalizing, a floor is met by that number or more, text never meets one.
func TestEntrySatisfiedBy(t *testing.T) {
	exact := Entry{Key: "fs.pipe-user-pages-soft", Value: "0", Mode: ModeExact}
	floor := Entry{Key: "kernel.pid_max", Value: "4194304", Mode: ModeAtLeast}
	vector := Entry{Key: "net.ipv4.ip_local_port_range", Value: "32768 60999"}
	for _, c := range []struct {
		e    Entry
		have string
		want bool
	}{
		{exact, "0\n", true}, {exact, "16384", false},
		{floor, "4194304\n", true}, {floor, "99999999", true}, {floor, "32768", false}, {floor, "many", false},
		{vector, "32768\t60999\n", true}, {vector, "32768 61000", false},
	} {
		if got := c.e.SatisfiedBy(c.have); got != c.want {
			t.Errorf("%s %s satisfied by %q = %t; want %t", c.e.Key, c.e.Wanted(), c.have, got, c.want)
		}
	}
}
