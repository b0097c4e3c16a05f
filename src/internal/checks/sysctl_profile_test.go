package checks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/report"
	"github.com/cloudfoundry/cellguard/src/internal/sysctl"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// sysctlHost is a fixture root with a fake /proc/sys holding every key of
// the container-host profile at a kernel default, then the resolved
// profile applied to it the way pre-start does.
func sysctlHost(t *testing.T, cfg sysctl.Settings) string {
	t.Helper()
	root := t.TempDir()
	all, err := sysctl.Builtin(sysctl.ContainerHost)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		writeKey(t, root, e.Key, "12345")
	}
	p, err := sysctl.Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sysctl.Apply(root, p); err != nil {
		t.Fatal(err)
	}
	return root
}

func writeKey(t *testing.T, root, key, value string) {
	t.Helper()
	p := filepath.Join(root, "proc/sys", sysctl.MustKey(key).Path())
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(value+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runSysctl(t *testing.T, root string, cfg sysctl.Settings) []validator.Finding {
	t.Helper()
	return run(t, testDeps{Root: root, Sysctl: cfg}, "sysctl-profile")
}

// TestSysctlProfileReportNamesTheKeyOnce: the human report of a drifted
// key says the key once, then the live and wanted values.
func TestSysctlProfileReportNamesTheKeyOnce(t *testing.T) {
	root := sysctlHost(t, sysctl.Settings{})
	key := filepath.Join(root, "proc/sys/fs/pipe-user-pages-soft")
	if err := os.WriteFile(key, []byte("16384\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var c validator.Check
	for _, ch := range all(testDeps{Root: root}) {
		if ch.Meta().ID == "sysctl-profile" {
			c = ch
		}
	}
	var b strings.Builder
	if err := report.Human(&b, validator.Run(context.Background(), []validator.Check{c}, validator.Options{Phase: validator.PreStart})); err != nil {
		t.Fatal(err)
	}
	want := "  fs.pipe-user-pages-soft: live 16384, wanted 0 (live-drift): "
	if !strings.Contains(b.String(), want) || strings.Count(b.String(), "fs.pipe-user-pages-soft:") != 1 {
		t.Fatalf("report does not name the key once as %q:\n%s", want, b.String())
	}
}

func TestSysctlProfileInForceAfterApply(t *testing.T) {
	root := sysctlHost(t, sysctl.Settings{})
	fs := runSysctl(t, root, sysctl.Settings{})
	if bad := failures(fs); len(bad) != 0 {
		t.Fatalf("applied profile: %+v", bad)
	}
	last := fs[len(fs)-1]
	if last.Data["drifted"] != "0" || last.Data["profile"] != sysctl.ContainerHost || last.Data["file"] != sysctl.DefaultFile {
		t.Fatalf("summary %+v", last)
	}
}

func TestSysctlProfileDrift(t *testing.T) {
	testCases := []struct {
		name    string
		cfg     sysctl.Settings
		change  func(t *testing.T, root string)
		subject string
		status  validator.Status
		data    map[string]string
		detail  []string
	}{
		{
			name:    "live value changed at runtime",
			change:  func(t *testing.T, root string) { writeKey(t, root, "fs.pipe-user-pages-soft", "16384") },
			subject: "fs.pipe-user-pages-soft", status: validator.Fail,
			data:   map[string]string{"live": "16384", "wanted": "0", "status": sysctl.LiveDrift, "boot": "0"},
			detail: []string{"live 16384, wanted 0 (live-drift)", "although /etc/sysctl.d/60-cellguard.conf:", "systemd-sysctl has not run since", "cellguard sysctl apply"},
		},
		{
			name:    "live value below a floor",
			change:  func(t *testing.T, root string) { writeKey(t, root, "fs.inotify.max_user_watches", "8192") },
			subject: "fs.inotify.max_user_watches", status: validator.Fail,
			data:   map[string]string{"live": "8192", "wanted": "524288", "mode": string(sysctl.ModeAtLeast), "status": sysctl.LiveDrift},
			detail: []string{"live 8192, wanted >=524288 (live-drift)", "the live value is 8192, below the floor 524288, although"},
		},
		{
			name: "a later file wins at boot",
			change: func(t *testing.T, root string) {
				writeFile(t, root, "etc/sysctl.d/99-tuning.conf", "# ops\nkernel.pid_max = 32768\n")
			},
			subject: "kernel.pid_max", status: validator.Fail,
			data:   map[string]string{"live": "4194304", "wanted": "4194304", "status": sysctl.BootDrift, "boot": "32768"},
			detail: []string{"live 4194304 is as wanted, but not after a reboot", "/etc/sysctl.d/99-tuning.conf:2 sets it back to 32768, below the floor 4194304, after ours (60-cellguard.conf)"},
		},
		{
			name: "both wrong",
			change: func(t *testing.T, root string) {
				writeFile(t, root, "etc/sysctl.conf", "vm.panic_on_oom=2\n")
				writeFile(t, root, "etc/sysctl.d/99-sysctl.conf", "vm.panic_on_oom=2\n")
				writeKey(t, root, "vm.panic_on_oom", "2")
			},
			subject: "vm.panic_on_oom", status: validator.Fail,
			data:   map[string]string{"live": "2", "wanted": "0", "status": sysctl.Drift},
			detail: []string{"live 2, wanted 0 (drift)", "the live value 2 is what /etc/sysctl.d/99-sysctl.conf:1 sets"},
		},
		{
			name:    "operator override is what is wanted",
			cfg:     sysctl.Settings{Set: map[string]string{"kernel.pid_max": "1048576"}},
			change:  func(t *testing.T, root string) { writeKey(t, root, "kernel.pid_max", "4194304") },
			subject: "kernel.pid_max", status: validator.Fail,
			data:   map[string]string{"live": "4194304", "wanted": "1048576", "from": "override"},
			detail: []string{"live 4194304, wanted 1048576"},
		},
		{
			name: "key missing on this kernel",
			change: func(t *testing.T, root string) {
				if err := os.Remove(filepath.Join(root, "proc/sys/user/max_user_namespaces")); err != nil {
					t.Fatal(err)
				}
			},
			subject: "user.max_user_namespaces", status: validator.Fail,
			data:   map[string]string{"status": sysctl.Missing},
			detail: []string{"no /proc/sys/user/max_user_namespaces on this kernel"},
		},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			root := sysctlHost(t, tc.cfg)
			tc.change(t, root)
			fs := runSysctl(t, root, tc.cfg)
			bad := failures(fs)
			if len(bad) != 1 {
				t.Fatalf("want exactly one drifted key, got %+v", bad)
			}
			f := bad[0]
			if f.Subject != tc.subject || f.Status != tc.status {
				t.Fatalf("finding %s %s, want %s %s: %s", f.Subject, f.Status, tc.subject, tc.status, f.Detail)
			}
			for k, v := range tc.data {
				if f.Data[k] != v {
					t.Errorf("data[%s] = %q, want %q", k, f.Data[k], v)
				}
			}
			if f.Data["why"] == "" {
				t.Error("finding lacks the profile's reason")
			}
			for _, s := range tc.detail {
				if !strings.Contains(f.Detail, s) {
					t.Errorf("detail %q lacks %q", f.Detail, s)
				}
			}
		})
	}
}

func TestSysctlProfileConfig(t *testing.T) {
	t.Run("removed keys are not checked", func(t *testing.T) {
		cfg := sysctl.Settings{Remove: []string{"kernel.dmesg_restrict"}}
		root := sysctlHost(t, cfg)
		writeKey(t, root, "kernel.dmesg_restrict", "0")
		if bad := failures(runSysctl(t, root, cfg)); len(bad) != 0 {
			t.Fatalf("%+v", bad)
		}
	})
	t.Run("a host above a floor is in force", func(t *testing.T) {
		root := sysctlHost(t, sysctl.Settings{})
		writeKey(t, root, "user.max_user_namespaces", "96365")
		writeKey(t, root, "kernel.keys.maxkeys", "2000000")
		if bad := failures(runSysctl(t, root, sysctl.Settings{})); len(bad) != 0 {
			t.Fatalf("%+v", bad)
		}
	})
	t.Run("an exact key above its value drifts", func(t *testing.T) {
		root := sysctlHost(t, sysctl.Settings{})
		writeKey(t, root, "fs.pipe-user-pages-soft", "1")
		bad := failures(runSysctl(t, root, sysctl.Settings{}))
		if len(bad) != 1 || bad[0].Subject != "fs.pipe-user-pages-soft" || bad[0].Data["mode"] != string(sysctl.ModeExact) {
			t.Fatalf("%+v", bad)
		}
	})
	t.Run("keys the operator adds are checked", func(t *testing.T) {
		cfg := sysctl.Settings{Profile: sysctl.NoProfile, Set: map[string]string{"net.core.somaxconn": "4096"}}
		root := sysctlHost(t, sysctl.Settings{})
		writeKey(t, root, "net.core.somaxconn", "128")
		bad := failures(runSysctl(t, root, cfg))
		if len(bad) != 1 || bad[0].Subject != "net.core.somaxconn" || bad[0].Data["from"] != "config" {
			t.Fatalf("%+v", bad)
		}
	})
	t.Run("invalid config cannot be checked", func(t *testing.T) {
		root := sysctlHost(t, sysctl.Settings{})
		c := byID(t, all(testDeps{Root: root, Sysctl: sysctl.Settings{Set: map[string]string{"../etc/passwd": "1"}}}), "sysctl-profile")
		if _, err := c.Run(context.Background()); err == nil {
			t.Fatal("want an error for a path-traversing key")
		}
	})
	t.Run("no profile", func(t *testing.T) {
		fs := runSysctl(t, t.TempDir(), sysctl.Settings{Profile: sysctl.NoProfile})
		if len(fs) != 1 || fs[0].Status != validator.Skip {
			t.Fatalf("%+v", fs)
		}
	})
	t.Run("fixture without proc/sys", func(t *testing.T) {
		fs := runSysctl(t, t.TempDir(), sysctl.Settings{})
		if len(fs) != 1 || fs[0].Status != validator.Skip || !strings.Contains(fs[0].Detail, "no proc/sys") {
			t.Fatalf("%+v", fs)
		}
	})
}

func TestSysctlProfileSeverity(t *testing.T) {
	root := sysctlHost(t, sysctl.Settings{})
	writeKey(t, root, "fs.pipe-user-pages-soft", "16384")
	c := byID(t, all(testDeps{Root: root}), "sysctl-profile")
	for phase, blocked := range map[validator.Phase]bool{validator.PreStart: true, validator.Drain: false} {
		rep := validator.Run(context.Background(), []validator.Check{c}, validator.Options{Phase: phase})
		if rep.Blocked != blocked || rep.Results[0].Status == validator.Pass {
			t.Errorf("%s: blocked=%v status=%s, want blocked=%v", phase, rep.Blocked, rep.Results[0].Status, blocked)
		}
	}
}
