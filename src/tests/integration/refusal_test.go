package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
)

// TestInstallRefusalsOnRealSystemd: a real systemd reads a unit as its
// file and then its drop-ins say, and a drop-in cellguard did not write
// (an operator's, another release's) wins. Where it sets KillMode (stopping
// the unit would then kill every container below it) or Delegate=no
// (systemd would move them on v1, strip their controllers on v2), `unit
// install` fails, and its error names the setting, what systemd read back,
// the drop-in and what to remove from it. Removed, the next install
// succeeds with KillMode=none. The pure cases (a systemd that takes no
// KillMode at all): daemonctl's TestInstallRefusalsNameTheFix.
func TestInstallRefusalsOnRealSystemd(t *testing.T) {
	box := bootBox(t, "refusal")
	m, d := fakeGardenUnit(t, box, "garden")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const dropIn = "/etc/systemd/system/cellguard-garden.service.d/90-operator.conf"
	for _, tc := range []struct {
		name, setting string
		want          []string
	}{
		{"KillMode", "KillMode=control-group", []string{"KillMode=none", "read back KillMode=control-group", dropIn, "remove KillMode="}},
		{"Delegate", "Delegate=no", []string{"Delegate=" + unitfile.DelegateV1, "read back Delegate=no", dropIn, "remove Delegate="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeFile(t, box, dropIn, "[Service]\n"+tc.setting+"\n", 0o644)
			defer func() {
				if err := os.Remove(filepath.Join(box.Root, dropIn)); err != nil {
					t.Fatal(err)
				}
			}()
			res, err := m.Install(ctx, d)
			u, serr := m.Status(ctx, d.UnitName())
			if serr != nil {
				t.Fatal(serr)
			}
			t.Logf("systemd read back KillMode=%s Delegate=%v DelegateControllers=%v DropInPaths=%v", u.KillMode, u.Delegate, u.DelegateControllers, u.DropInPaths)
			if err == nil {
				t.Fatalf("install succeeded (%+v) with %s in a drop-in: a refused setting was taken as installed", res, tc.setting)
			}
			t.Logf("install: %v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q", w)
				}
			}
		})
	}
	res, err := m.Install(ctx, d)
	if err != nil || res.KillMode != unitfile.KillModeNone {
		t.Fatalf("install with the drop-in gone: %+v %v, want KillMode none", res, err)
	}
}
