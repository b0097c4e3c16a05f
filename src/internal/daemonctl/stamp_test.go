package daemonctl

import (
	"os"
	"path/filepath"
	"testing"

	"code.cloudfoundry.org/lager/v3/lagertest"

	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
)

// TestVerifiedThisBoot: the start shortcut is trusted only for the exact
// unit file Install would write, stamped in this boot; every other case
// (no stamp, another boot, another file, no boot id, a stamp for other
// content) means a full Install. The shortcut's read-back on a real
// systemd is TestStartShortcutStillVerifies (src/tests/integration).
func TestVerifiedThisBoot(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string, mode os.FileMode) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("/usr/bin/daemon", "#!/bin/sh\n", 0o755)
	write("/proc/sys/kernel/random/boot_id", "boot-1\n", 0o444)
	m := &Manager{Logger: lagertest.NewTestLogger("stamp"), Root: root, Delegate: unitfile.DelegateV1}
	d := Daemon{Name: "x", Start: []string{"/usr/bin/daemon", "start"}}
	unitPath := filepath.Join(PersistentUnitDir, d.UnitName())
	render := func(killMode string) []byte {
		s, err := m.spec(d, killMode)
		if err != nil {
			t.Fatal(err)
		}
		b, err := unitfile.Render(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	none, process := render(unitfile.KillModeNone), render(unitfile.KillModeProcess)

	write(unitPath, string(none), 0o644)
	if m.verifiedThisBoot(d) {
		t.Fatal("trusted without a stamp")
	}
	m.writeStamp(d.UnitName(), none)
	if !m.verifiedThisBoot(d) {
		t.Fatal("not trusted with this boot's stamp of this file")
	}
	write(unitPath, string(none)+"# edited\n", 0o644)
	if m.verifiedThisBoot(d) {
		t.Fatal("trusted a unit file that differs from the stamped one")
	}
	m.writeStamp(d.UnitName(), []byte(string(none)+"# edited\n"))
	if m.verifiedThisBoot(d) {
		t.Fatal("trusted a stamped file that differs from what Install writes")
	}
	write(unitPath, string(process), 0o644)
	m.writeStamp(d.UnitName(), process)
	if !m.verifiedThisBoot(d) {
		t.Fatal("not trusted with the KillMode=process fallback an earlier install settled on")
	}
	write("/proc/sys/kernel/random/boot_id", "boot-2\n", 0o444)
	if m.verifiedThisBoot(d) {
		t.Fatal("trusted a stamp of another boot")
	}
	m.writeStamp(d.UnitName(), process)
	m.dropStamp(d.UnitName())
	if m.verifiedThisBoot(d) {
		t.Fatal("trusted after the stamp was dropped")
	}
	m.writeStamp(d.UnitName(), process)
	if err := os.Remove(filepath.Join(root, "/proc/sys/kernel/random/boot_id")); err != nil {
		t.Fatal(err)
	}
	if m.verifiedThisBoot(d) {
		t.Fatal("trusted without a boot id")
	}
}
