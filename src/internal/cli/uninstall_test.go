package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/sysctl"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
)

// cellguardFiles lays out, under root, everything cellguard writes on a
// VM, and returns the paths (as the VM sees them).
func cellguardFiles(t *testing.T, root string, now time.Time) []string {
	t.Helper()
	unit, err := unitfile.Render(unitfile.Spec{Name: "garden", Start: []string{"/bin/true"}, Type: unitfile.TypeExec,
		Delegate: unitfile.DelegateV1, KillMode: unitfile.KillModeNone})
	if err != nil {
		t.Fatal(err)
	}
	drop, err := unitfile.RenderSupervisorDropIn("runit.service", unitfile.DelegateV1)
	if err != nil {
		t.Fatal(err)
	}
	sysctlFile := sysctl.Render(sysctl.Profile{Name: "container-host", File: sysctl.DefaultFile})
	files := map[string]string{
		"/etc/systemd/system/cellguard-garden.service":                   string(unit),
		"/etc/systemd/system/runit.service.d/50-cellguard-delegate.conf": string(drop),
		sysctl.DefaultFile:                                   string(sysctlFile),
		"/etc/sysctl.d/.60-cellguard.conf.tmp-77":            "half a file",
		"/run/cellguard/verified/cellguard-garden.service":   "boot sum\n",
		"/var/vcap/data/node_exporter/cellguard.prom":        "# HELP cellguard_check_status x\n",
		"/var/vcap/data/cellguard-lift/drain-lift.json":      "{}",
		"/var/vcap/data/node_exporter/.cellguard.prom.tmp-5": "half",
		"/var/vcap/data/cellguard/metric_targets.yml":        "[]\n",
		"/var/vcap/data/node_exporter/cellguard_watch.prom":  "# HELP cellguard_watch_scans_total x\n",
	}
	var paths []string
	for p, content := range files {
		writeFile(t, filepath.Join(root, p), content)
		old := now.Add(-time.Hour)
		if err := os.Chtimes(filepath.Join(root, p), old, old); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// uninstall on a VM where systemd is not init (nothing can run under a
// unit): every file of cellguard's goes, the log dir and a foreign file
// stay, and a second run removes nothing. The running-unit and supervisor
// cases are proved on a real systemd (src/tests/integration,
// TestUninstall).
func TestUninstallRemovesWhatCellguardWrote(t *testing.T) {
	root := t.TempDir()
	d := newDrainHost(t, root, uninstallConfig)
	paths := cellguardFiles(t, root, d.now)
	writeFile(t, filepath.Join(root, "var/vcap/data/node_exporter/node.prom"), "# HELP node_x y\n")
	writeFile(t, filepath.Join(root, "etc/systemd/system/garden.service"), "[Service]\nExecStart=/bin/true\n")
	code, out, errOut := d.run(t, "uninstall", "--config", d.cfg, "--root", root, "--log-file", d.log)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", p, err)
		}
		if !strings.Contains(out, p) {
			t.Errorf("output does not list %s:\n%s", p, out)
		}
	}
	for _, p := range []string{"var/vcap/data/node_exporter/node.prom", "etc/systemd/system/garden.service"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	for _, dir := range []string{"run/cellguard", "var/vcap/data/cellguard"} {
		if _, err := os.Stat(filepath.Join(root, dir)); !os.IsNotExist(err) {
			t.Errorf("%s left (%v)", dir, err)
		}
	}
	mustContainAll(t, "output", out, "10 removed, 0 kept", "live values stay as they are until the next reboot")

	code, out, _ = d.run(t, "uninstall", "--config", d.cfg, "--root", root, "--log-file", d.log)
	if code != ExitOK || !strings.Contains(out, "0 removed, 0 kept") {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
	// A textfile at the configured path that cellguard did not write stays.
	writeFile(t, filepath.Join(root, "var/vcap/data/node_exporter/cellguard.prom"), "# HELP node_other z\n")
	_, out, _ = d.run(t, "uninstall", "--config", d.cfg, "--root", root, "--log-file", d.log)
	mustContainAll(t, "output", out, "KEPT", "cellguard.prom", "cellguard did not write it", "0 removed, 1 kept")
}

const uninstallConfig = `{"validator":{"prometheus_textfile":"/var/vcap/data/node_exporter/cellguard.prom"},
  "watch":{"textfile":"/var/vcap/data/node_exporter/cellguard_watch.prom"}}`

// While cellguard watch runs, its textfile and metric targets are in use:
// kept, with why. A pid in the pidfile that runs something else is no
// watch.
func TestUninstallKeepsWhatARunningWatchUses(t *testing.T) {
	root := t.TempDir()
	d := newDrainHost(t, root, uninstallConfig)
	cellguardFiles(t, root, d.now)
	writeFile(t, filepath.Join(root, "var/vcap/sys/run/cellguard/watch.pid"), "4242\n")
	writeFile(t, filepath.Join(root, "proc/4242/cmdline"), "/var/vcap/packages/cellguard/bin/cellguard\x00watch\x00--config\x00x\x00")
	code, out, errOut := d.run(t, "uninstall", "--config", d.cfg, "--root", root, "--log-file", d.log)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	mustContainAll(t, "output", out, "8 removed, 2 kept", "cellguard watch runs (pid 4242, monit job cellguard-watch)", "monit stop cellguard-watch")
	for _, p := range []string{"var/vcap/data/cellguard/metric_targets.yml", "var/vcap/data/node_exporter/cellguard_watch.prom"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s removed while watch runs: %v", p, err)
		}
	}
	writeFile(t, filepath.Join(root, "proc/4242/cmdline"), "/bin/sleep\x00300\x00")
	if _, out, _ = d.run(t, "uninstall", "--config", d.cfg, "--root", root, "--log-file", d.log); !strings.Contains(out, "2 removed, 0 kept") {
		t.Errorf("with the pid reused by another process:\n%s", out)
	}
}

// unit prune is pre-start's convergence: a daemon removed from the config
// loses its unit, a configured one keeps it, and protect false removes the
// drop-in (no systemd here: nothing runs it).
func TestUnitPruneFollowsTheConfig(t *testing.T) {
	root := t.TempDir()
	d := newDrainHost(t, root, `{"daemons":[{"name":"garden","start":"/bin/true"}],"supervisor":{"protect":true}}`)
	cellguardFiles(t, root, d.now)
	old, err := unitfile.Render(unitfile.Spec{Name: "old", Start: []string{"/bin/true"}, Type: unitfile.TypeExec,
		Delegate: unitfile.DelegateV1, KillMode: unitfile.KillModeNone})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "etc/systemd/system/cellguard-old.service"), string(old))
	code, out, errOut := d.run(t, "unit", "prune", "--config", d.cfg, "--root", root, "--log-file", d.log)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	mustContainAll(t, "output", out, "removed  unit", "/etc/systemd/system/cellguard-old.service", `daemon "old" is no longer in cellguard.daemons`)
	for p, want := range map[string]bool{
		"etc/systemd/system/cellguard-old.service":                      false,
		"etc/systemd/system/cellguard-garden.service":                   true,
		"etc/systemd/system/runit.service.d/50-cellguard-delegate.conf": true,
	} {
		if _, err := os.Stat(filepath.Join(root, p)); (err == nil) != want {
			t.Errorf("%s: present %v, want %v", p, err == nil, want)
		}
	}
	writeFile(t, d.cfg, `{"daemons":[{"name":"garden","start":"/bin/true"}],"supervisor":{"protect":false}}`)
	if code, out, _ := d.run(t, "unit", "prune", "--config", d.cfg, "--root", root, "--log-file", d.log); code != ExitOK || !strings.Contains(out, "supervisor-drop-in") {
		t.Fatalf("protect false: exit %d\n%s", code, out)
	}
	if code, out, _ := d.run(t, "unit", "prune", "--config", d.cfg, "--root", root, "--log-file", d.log); code != ExitOK || !strings.Contains(out, "nothing to remove") {
		t.Fatalf("third run: exit %d\n%s", code, out)
	}
}
