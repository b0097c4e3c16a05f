package sysctl

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/fuzzseed"
)

// FuzzBootParse: a sysctl.d file anyone with root (or a package) dropped on
// the host. The boot model must not panic on it, and every assignment it
// keeps must name a key that stays inside /proc/sys.
func FuzzBootParse(f *testing.F) {
	for _, b := range fuzzseed.Files(f, "testdata/seeds/sysctld/*") {
		f.Add(b, "kernel.pid_max")
	}
	p, err := Resolve(Settings{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(Render(p), "fs.inotify.max_user_watches")
	f.Add([]byte("-net.ipv4.conf.*.rp_filter\nnet.ipv4.conf.*.rp_filter = 2\n-kernel.x=1\n /a/../b = 3\n[=\n"), "net.ipv4.conf.eno2/100.rp_filter")
	f.Fuzz(func(t *testing.T, data []byte, key string) {
		b := &BootConfig{Files: []ConfFile{{Path: "/etc/sysctl.d/60-fuzz.conf", Name: "60-fuzz.conf"}}}
		b.parse(0, data)
		for _, a := range b.order {
			if strings.HasPrefix(a.Key, "/") || a.Key == ".." || strings.HasPrefix(a.Key, "../") {
				t.Fatalf("key %q escapes /proc/sys", a.Key)
			}
			if strings.ContainsAny(a.Value, "\n\r") {
				t.Fatalf("value %q of %s holds a line break", a.Value, a.Key)
			}
		}
		k, err := ParseKey(key)
		if err != nil {
			return
		}
		if w := b.Winner(k); w != nil && !w.HasValue {
			t.Fatalf("winner for %s without a value: %+v", k, w)
		}
		b.History(k)
	})
}

// FuzzParseKey: keys come from the job config. Whatever ParseKey accepts
// must name exactly one file below /proc/sys and survive a round trip
// through its dotted name (what the persisted file holds).
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"net.ipv4.ip_forward", "net/ipv4/ip_forward", "net.ipv4.conf.eno2/100.rp_filter",
		"../../etc/passwd", "kernel..x", "-kernel.x", "a/./b", "kernel.*", " vm.swappiness "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if err != nil {
			return
		}
		p := k.Path()
		if p == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "-") {
			t.Fatalf("ParseKey(%q) = path %q", s, p)
		}
		for _, c := range strings.Split(p, "/") {
			if c == "" || c == "." || c == ".." {
				t.Fatalf("ParseKey(%q) = path %q with component %q", s, p, c)
			}
		}
		if j := filepath.Join("/proc/sys", p); !strings.HasPrefix(j, "/proc/sys/") {
			t.Fatalf("ParseKey(%q): %s is outside /proc/sys", s, j)
		}
		back, err := ParseKey(k.Name())
		if err != nil || back.Path() != p {
			t.Fatalf("ParseKey(%q) = %q, but its name %q parses to %q (%v)", s, p, k.Name(), back.Path(), err)
		}
	})
}

// FuzzRenderRoundTrip: an operator's sysctl.set entry that Resolve accepts
// must render to a file systemd-sysctl reads back as exactly that key and
// value: no extra line, no comment swallowing it, no other key.
func FuzzRenderRoundTrip(f *testing.F) {
	f.Add("kernel.sem", "250\t32000 32 128")
	f.Add("net.ipv4.conf.eno2/100.rp_filter", "2")
	f.Add("vm.x", "1\nkernel.core_pattern = |/tmp/evil")
	f.Add("vm.x", "1 # not a comment")
	f.Add("vm.x", "= 5")
	f.Add("vm.x", ">= 5")
	f.Add("vm.x", ">=5 # at least")
	f.Fuzz(func(t *testing.T, key, value string) {
		p, err := Resolve(Settings{Profile: NoProfile, Set: map[string]string{key: value}})
		if err != nil {
			return
		}
		b := &BootConfig{Files: []ConfFile{{Path: p.File, Name: filepath.Base(p.File)}}}
		b.parse(0, Render(p))
		if len(b.order) != 1 {
			t.Fatalf("set %q = %q rendered %d assignments:\n%s", key, value, len(b.order), Render(p))
		}
		// A floor ">=N" persists N; anything else persists as written.
		want := NormalizeValue(value)
		if p.Entries[0].IsAtLeast() {
			want = NormalizeValue(strings.TrimPrefix(strings.TrimSpace(value), AtLeastPrefix))
			if decimal(want) != nil {
				t.Fatalf("set %q = %q: accepted floor %q is not a number", key, value, want)
			}
		}
		k := MustKey(p.Entries[0].Key)
		w := b.Winner(k)
		if w == nil || w.Value != want || w.Key != k.Path() {
			t.Fatalf("set %q = %q: boot reads %+v:\n%s", key, value, w, Render(p))
		}
	})
}
