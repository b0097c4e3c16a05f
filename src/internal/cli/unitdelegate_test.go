package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unit delegate refuses what is not a service, before touching anything;
// with no unit given or configured it says so; where systemd is not init
// it has nothing to do.
func TestUnitDelegate(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"concourse.scope", "a/b.service", ".service"} {
		code, _, errOut := runCLI(t, "unit", "delegate", name, "--root", root, "--dbus-address", "unix:path=/nonexistent")
		if code != ExitCantRun || !strings.Contains(errOut, "cellguard: error:") {
			t.Errorf("%s: exit %d\n%s", name, code, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "etc/systemd/system")); !os.IsNotExist(err) {
		t.Fatalf("a refused name wrote something: %v", err)
	}
	code, out, _ := runCLI(t, "unit", "delegate", "--root", root)
	if code != ExitOK || !strings.Contains(out, "no unit to delegate") {
		t.Fatalf("nothing to delegate: exit %d %q", code, out)
	}
	code, out, _ = runCLI(t, "unit", "delegate", "concourse.service", "--root", root)
	if code != ExitOK || !strings.Contains(out, "systemd is not init here") {
		t.Fatalf("no systemd: exit %d %q", code, out)
	}
}
