package checks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// fakeSystemd is a SystemdVersioner with a fixed answer.
type fakeSystemd struct {
	v   int
	err error
}

func (f fakeSystemd) SystemdVersion(context.Context) (int, error) { return f.v, f.err }

// sdTree builds a fixture root: a fake host of the given cgroup mode,
// optionally with /run/systemd/system, and a kernel command line.
func sdTree(t *testing.T, mode cgroup.Mode, booted bool, cmdline string) string {
	t.Helper()
	h := fakehost.New(t, mode)
	if booted {
		h.Mkdir("/run/systemd/system")
	}
	h.Write("proc/cmdline", cmdline+"\n")
	return h.Root
}

func TestSystemdCgroupMode(t *testing.T) {
	testCases := []struct {
		name      string
		mode      cgroup.Mode
		running   int // 0: not asked
		installed int
		cmdline   string
		want      []validator.Status // per source finding, in order
		detail    string
	}{
		{"252 on hybrid (this host's shape)", cgroup.Hybrid, 252, 252, "", []validator.Status{validator.Pass}, "running and installed"},
		{"256 installed on hybrid, 252 running", cgroup.Hybrid, 252, 256, "", []validator.Status{validator.Pass, validator.Fail}, "refuses to boot"},
		{"256 on legacy with the force flag", cgroup.Legacy, 256, 256, "root=/dev/sda " + legacyForceArg, []validator.Status{validator.Warn}, "boots only because"},
		{"258 on hybrid even with the force flag", cgroup.Hybrid, 0, 258, legacyForceArg, []validator.Status{validator.Fail}, "no cgroup v1 support"},
		{"257 on unified", cgroup.Unified, 257, 257, "", []validator.Status{validator.Pass}, "supports the unified"},
		{"255 on legacy", cgroup.Legacy, 0, 255, "", []validator.Status{validator.Pass}, "supports the legacy"},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			root := sdTree(t, tc.mode, tc.running != 0, tc.cmdline)
			c := &systemdCase{Root: root, Installed: fakeSystemd{v: tc.installed}}
			if tc.running != 0 {
				c.Running = fakeSystemd{v: tc.running}
			}
			fs, err := c.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var got []validator.Status
			var details []string
			for _, f := range fs {
				if strings.HasPrefix(f.Subject, "systemd ") {
					got = append(got, f.Status)
					details = append(details, f.Detail)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("findings %v, want %v: %q", got, tc.want, details)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("finding %d: %s, want %s: %s", i, got[i], tc.want[i], details[i])
				}
			}
			if !strings.Contains(strings.Join(details, "\n"), tc.detail) {
				t.Errorf("details lack %q: %q", tc.detail, details)
			}
		})
	}
}

func TestSystemdCgroupModeNotBootedBySystemd(t *testing.T) {
	root := sdTree(t, cgroup.Hybrid, false, "")
	c := &systemdCase{Root: root, Running: fakeSystemd{err: errors.New("must not be asked")}, Installed: fakeSystemd{v: 256}}
	fs, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !containsStatus(fs, "systemd", validator.Skip) || !containsStatus(fs, "systemd installed", validator.Fail) {
		t.Errorf("want a Skip for the running manager and a Fail for installed 256: %+v", fs)
	}
	// no systemctl at all in the tree: skip, not fail
	c = &systemdCase{Root: root}
	fs, err = c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Status != validator.Skip || !strings.Contains(fs[0].Detail, "no systemctl") {
		t.Errorf("no systemctl: %+v", fs)
	}
}

func TestSystemdCgroupModeRunningVersionError(t *testing.T) {
	root := sdTree(t, cgroup.Hybrid, true, "")
	c := &systemdCase{Root: root, Running: fakeSystemd{err: errors.New("dbus: connection refused")}, Installed: fakeSystemd{v: 252}}
	if _, err := c.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err = %v, want the D-Bus error", err)
	}
}

// On cgroup v2 every systemd supports the mode, so a running manager that
// does not answer in time (D-Bus on a TCG-emulated noble VM under load, in
// make cell) changes no verdict: the installed version is judged, and the
// unanswered question is said, not turned into an error that blocks.
func TestSystemdCgroupModeRunningVersionErrorOnUnified(t *testing.T) {
	root := sdTree(t, cgroup.Unified, true, "")
	c := &systemdCase{Root: root, Running: fakeSystemd{err: context.DeadlineExceeded}, Installed: fakeSystemd{v: 255}}
	fs, err := c.Run(context.Background())
	if err != nil {
		t.Fatalf("err = %v, want findings", err)
	}
	if !containsStatus(fs, "systemd running", validator.Skip) || !containsStatus(fs, "systemd installed", validator.Pass) {
		t.Errorf("want a Skip for the unanswered running manager and a Pass for installed 255: %+v", fs)
	}
	for _, f := range fs {
		if f.Subject == "systemd running" && !strings.Contains(f.Detail, "deadline exceeded") {
			t.Errorf("the skip does not say why: %q", f.Detail)
		}
	}
}

func TestSystemdKillModeNone(t *testing.T) {
	root := sdTree(t, cgroup.Hybrid, true, "")
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/systemd/system/garden.service", "[Service]\nDelegate=yes\nKillMode=none\n")
	write("usr/lib/systemd/system/plymouth-start.service", "[Service]\nKillMode = none\n")
	write("usr/lib/systemd/system/ok.service", "[Service]\nKillMode=mixed\n# KillMode=none in a comment\n")
	write("run/systemd/system/containerd.service.d/50-cellguard.conf", "[Service]\nKillMode=none\n")
	// merged /usr: /lib -> usr/lib must not list plymouth twice
	if err := os.Symlink("usr/lib", filepath.Join(root, "lib")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		version int
		want    string
	}{{245, ""}, {246, "containerd.service garden.service plymouth-start.service"}} {
		c := &systemdCase{Root: root, Running: fakeSystemd{v: tc.version}, Installed: fakeSystemd{v: tc.version}}
		fs, err := c.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var units []string
		for _, f := range fs {
			if f.Data["kill_mode"] == "none" {
				if f.Status != validator.Pass || f.Data["level"] != "info" {
					t.Errorf("KillMode=none must be information: %+v", f)
				}
				units = append(units, f.Subject)
			}
		}
		sort.Strings(units)
		if got := strings.Join(units, " "); got != tc.want {
			t.Errorf("systemd %d: KillMode=none units %q, want %q", tc.version, got, tc.want)
		}
	}
}

// TestSystemctlVersionReal reads this host's installed systemd through
// the real systemctl and checks it against dpkg's idea of the package.
func TestSystemctlVersionReal(t *testing.T) {
	if _, err := os.Stat("/usr/bin/systemctl"); err != nil {
		t.Skip("SKIP: no systemctl on this host")
	}
	n, err := facts.SystemctlVersion{Root: "/"}.SystemdVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n < 200 || n > 1000 {
		t.Fatalf("systemd version %d is implausible", n)
	}
	// On the live host, the real mode detector and no D-Bus: must run.
	c := &systemdCase{Root: "/"}
	fs, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("systemd %d: %s", n, rvDescribe(fs))
}

// TestSystemctlVersionRunsOnlyTrustedBinary: `systemctl --version` runs as
// root, so a systemctl others could change is refused before the exec; the
// fake leaves a mark when run, and none is left.
func TestSystemctlVersionRunsOnlyTrustedBinary(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    os.FileMode
		refused bool
	}{
		{"root's 0755", 0o755, false},
		{"group-writable", 0o775, true},
		{"world-writable", 0o757, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			mark := filepath.Join(root, "ran")
			bin := filepath.Join(root, "usr/bin/systemctl")
			if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
				t.Fatal(err)
			}
			script := "#!/bin/sh\ntouch " + mark + "\necho 'systemd 252 (252.39-1~deb12u2)'\n"
			testkit.WriteExec(t, bin, script)
			if err := os.Chmod(bin, tc.mode); err != nil {
				t.Fatal(err)
			}
			n, err := facts.SystemctlVersion{Root: root}.SystemdVersion(context.Background())
			_, ran := os.Stat(mark)
			if !tc.refused {
				if err != nil || n != 252 || ran != nil {
					t.Fatalf("SystemdVersion = %d, %v (ran: %v)", n, err, ran)
				}
				return
			}
			if !errors.Is(err, safefile.ErrUntrusted) || !strings.Contains(err.Error(), bin+" ") || ran == nil {
				t.Fatalf("SystemdVersion = %d, %v (ran: %v), want a refusal naming %s and no exec", n, err, ran, bin)
			}
		})
	}
}
