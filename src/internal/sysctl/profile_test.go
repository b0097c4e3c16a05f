package sysctl

import (
	"errors"
	"strings"
	"testing"
)

func TestBuiltinProfileIsDocumented(t *testing.T) {
	es, err := Builtin(ContainerHost)
	if err != nil {
		t.Fatal(err)
	}
	required := []string{
		"fs.pipe-user-pages-soft", "fs.pipe-user-pages-hard", "fs.pipe-max-size",
		"kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes", "kernel.keys.maxkeys", "kernel.keys.maxbytes",
		"kernel.pid_max", "fs.inotify.max_user_instances", "fs.inotify.max_user_watches", "user.max_user_namespaces",
	}
	seen := map[string]bool{}
	for _, e := range es {
		if seen[e.Key] {
			t.Errorf("%s listed twice", e.Key)
		}
		seen[e.Key] = true
		k, err := ParseKey(e.Key)
		if err != nil || k.Name() != e.Key {
			t.Errorf("%s: not a canonical key (%v)", e.Key, err)
		}
		if e.Why == "" || !strings.HasPrefix(e.Source, "https://") {
			t.Errorf("%s: every entry needs a why and a source URL", e.Key)
		}
		if e.Value != NormalizeValue(e.Value) || decimal(e.Value) != nil {
			t.Errorf("%s: value %q is not a normalized decimal", e.Key, e.Value)
		}
	}
	for _, k := range required {
		if !seen[k] {
			t.Errorf("profile %s lacks %s", ContainerHost, k)
		}
	}
	// Every entry states its mode, and its why says it. Capacity limits are
	// floors; 0-means-unlimited limits and switches are exact ("at least 0"
	// would accept any limit at all).
	modes := map[string]Mode{
		"fs.pipe-user-pages-soft": ModeExact, "fs.pipe-user-pages-hard": ModeExact,
		"vm.panic_on_oom": ModeExact, "net.ipv4.ip_forward": ModeExact, "kernel.dmesg_restrict": ModeExact,
		"fs.pipe-max-size": ModeAtLeast, "kernel.keys.root_maxkeys": ModeAtLeast, "kernel.keys.root_maxbytes": ModeAtLeast,
		"kernel.keys.maxkeys": ModeAtLeast, "kernel.keys.maxbytes": ModeAtLeast, "kernel.pid_max": ModeAtLeast,
		"fs.inotify.max_user_instances": ModeAtLeast, "fs.inotify.max_user_watches": ModeAtLeast,
		"user.max_user_namespaces": ModeAtLeast,
	}
	for _, e := range es {
		want, ok := modes[e.Key]
		if !ok {
			t.Errorf("%s: decide its mode in this test", e.Key)
		}
		if e.Mode != want {
			t.Errorf("%s: mode %q, want %q", e.Key, e.Mode, want)
		}
		if e.Mode == ModeAtLeast && !strings.Contains(e.Why, "at least") || e.Mode == ModeExact && !strings.Contains(e.Why, "exact") {
			t.Errorf("%s: why does not justify mode %s: %q", e.Key, e.Mode, e.Why)
		}
	}
	if v := valueOf(es, "fs.pipe-user-pages-soft"); v != "0" {
		t.Errorf("fs.pipe-user-pages-soft = %q, want 0 (disables the soft limit behind the runc rc93 hang)", v)
	}
}

func valueOf(es []Entry, key string) string {
	for _, e := range es {
		if e.Key == key {
			return e.Value
		}
	}
	return ""
}

func TestResolve(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		p, err := Resolve(Settings{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Name != ContainerHost || p.File != DefaultFile || len(p.Entries) != len(containerHost) {
			t.Fatalf("got %s %s with %d entries", p.Name, p.File, len(p.Entries))
		}
	})
	t.Run("override, addition and removal", func(t *testing.T) {
		p, err := Resolve(Settings{
			Set: map[string]string{
				"fs/inotify/max_user_watches":  "1048576", // slash form of a profile key
				"net.ipv4.ip_local_port_range": "32768\t60999",
				"kernel.sem":                   "250 32000 32 128",
			},
			Remove: []string{"kernel.dmesg_restrict"},
			File:   "/run/sysctl.d/61-cellguard.conf",
		})
		if err != nil {
			t.Fatal(err)
		}
		if p.File != "/run/sysctl.d/61-cellguard.conf" {
			t.Errorf("file %s", p.File)
		}
		if v := valueOf(p.Entries, "fs.inotify.max_user_watches"); v != "1048576" {
			t.Errorf("override not applied: %q", v)
		}
		if v := valueOf(p.Entries, "net.ipv4.ip_local_port_range"); v != "32768 60999" {
			t.Errorf("addition not normalized: %q", v)
		}
		if valueOf(p.Entries, "kernel.dmesg_restrict") != "" {
			t.Error("removed key still present")
		}
		last := p.Entries[len(p.Entries)-2:]
		if last[0].Key != "kernel.sem" || last[1].Key != "net.ipv4.ip_local_port_range" || last[0].From != "config" {
			t.Errorf("additions should follow the profile, sorted: %+v", last)
		}
	})
	t.Run("profile none", func(t *testing.T) {
		p, err := Resolve(Settings{Profile: NoProfile, Set: map[string]string{"kernel.pid_max": "4194304"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Entries) != 1 || p.Entries[0].Key != "kernel.pid_max" {
			t.Fatalf("entries %+v", p.Entries)
		}
	})

	bad := []struct {
		name string
		cfg  Settings
		want string
	}{
		{"unknown profile", Settings{Profile: "gpu-host"}, "unknown sysctl profile"},
		{"traversal in set", Settings{Set: map[string]string{"../../etc/shadow": "x"}}, "path traversal"},
		{"glob in set", Settings{Set: map[string]string{"net.ipv4.conf.*.rp_filter": "1"}}, "not allowed"},
		{"empty value", Settings{Set: map[string]string{"kernel.pid_max": " "}}, "value is empty"},
		{"newline in value", Settings{Set: map[string]string{"kernel.pid_max": "1\nkernel.panic = 1"}}, "line break"},
		{"remove unknown", Settings{Remove: []string{"kernel.panic"}}, "not in profile"},
		{"remove traversal", Settings{Remove: []string{"fs/../x"}}, "path traversal"},
		{"set and remove", Settings{Set: map[string]string{"kernel.pid_max": "1"}, Remove: []string{"kernel.pid_max"}}, "also listed in remove"},
		{"same key twice", Settings{Set: map[string]string{"kernel.pid_max": "1", "kernel/pid_max": "2"}}, "twice"},
		{"file outside sysctl.d", Settings{File: "/etc/cellguard.conf"}, "not in a directory systemd-sysctl reads"},
		{"file without .conf", Settings{File: "/etc/sysctl.d/60-cellguard"}, "*.conf"},
		{"hidden file", Settings{File: "/etc/sysctl.d/.60-cellguard.conf"}, "*.conf"},
		{"relative file", Settings{File: "etc/sysctl.d/60-cellguard.conf"}, "clean absolute"},
		{"unclean file", Settings{File: "/etc/sysctl.d/../60-cellguard.conf"}, "clean absolute"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(tc.cfg)
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Resolve: %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
}

// The persisted file must mean to systemd-sysctl exactly what the profile
// says: parse it with the boot model and compare.
func TestRenderRoundTrip(t *testing.T) {
	p, err := Resolve(Settings{Set: map[string]string{"kernel.sem": "250\t32000 32 128"}})
	if err != nil {
		t.Fatal(err)
	}
	tr := newTree(t)
	tr.Write(DefaultFile, string(Render(p)))
	if a, b := Render(p), Render(p); string(a) != string(b) {
		t.Fatal("Render is not deterministic")
	}
	boot, err := LoadBoot(tr.Root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range p.Entries {
		w := boot.Winner(MustKey(e.Key))
		if w == nil || w.Value != e.Value || boot.File(*w).Path != DefaultFile {
			t.Errorf("%s: boot winner %+v, want %q from %s", e.Key, w, e.Value, DefaultFile)
		}
	}
}
