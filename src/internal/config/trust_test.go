package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

const minimal = `{"daemons":[{"name":"garden","start":"/bin/true"}]}`

func writeConfig(t *testing.T, dir string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, "cellguard.json")
	if err := os.WriteFile(p, []byte(minimal), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoadRefusesConfigOthersCanWrite: whoever can edit the config decides
// what cellguard does as root, so a file or directory others can write is
// refused with the command that fixes it.
func TestLoadRefusesConfigOthersCanWrite(t *testing.T) {
	testCases := []struct {
		name    string
		mode    os.FileMode
		dirMode os.FileMode
		want    string // "" means accepted
	}{
		{"bosh rendered 0640", 0o640, 0o750, ""},
		{"0644", 0o644, 0o755, ""},
		{"world-writable", 0o666, 0o755, "chmod go-w"},
		{"group-writable", 0o660, 0o755, "chmod go-w"},
		{"world-writable dir", 0o644, 0o777, "chmod go-w"},
		{"group-writable dir", 0o644, 0o775, "chmod go-w"},
		{"sticky world-writable dir", 0o644, os.ModeSticky | 0o777, ""},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "config")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			p := writeConfig(t, dir, tc.mode)
			if err := os.Chmod(dir, tc.dirMode); err != nil {
				t.Fatal(err)
			}
			c, err := Load(p, testIDs)
			if tc.want == "" {
				if err != nil || len(c.Daemons) != 1 {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("Load = %v, want ErrUntrusted naming %s and %q", err, dir, tc.want)
			}
		})
	}
}

func TestLoadRefusesConfigOfAnotherOwner(t *testing.T) {
	testkit.RequireRoot(t, "chown the file to another user")
	p := writeConfig(t, t.TempDir(), 0o644)
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p, testIDs); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "owned by uid 65534") || !strings.Contains(err.Error(), "chown root") {
		t.Fatalf("Load = %v, want ErrUntrusted naming the owner and the fix", err)
	}
}

// BOSH reaches job files through the /var/vcap/jobs/<job> symlink: the
// target's ownership and mode count, not the link's.
func TestLoadFollowsJobSymlink(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "data/jobs/cellguard/abc123/config")
	if err := os.MkdirAll(real, 0o750); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, real, 0o640)
	if err := os.MkdirAll(filepath.Join(base, "jobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "data/jobs/cellguard/abc123"), filepath.Join(base, "jobs/cellguard")); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(filepath.Join(base, "jobs/cellguard/config/cellguard.json"), testIDs); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(filepath.Join(base, "jobs/cellguard/config/missing.json"), testIDs); err == nil || !strings.Contains(err.Error(), "read config") {
		t.Fatalf("missing config: %v", err)
	}
}

// TestLoadRefusesALinkAnotherUserOwns: a symlink its owner may replace (in
// a sticky directory) would choose the config root acts on; one not owned
// by root is refused, naming the link.
func TestLoadRefusesALinkAnotherUserOwns(t *testing.T) {
	p := writeConfig(t, t.TempDir(), 0o644)
	link := testkit.ForeignLink(t, p)
	if _, err := Load(link, testIDs); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "symlink "+link+" ") || !strings.Contains(err.Error(), "chown -h root") {
		t.Fatalf("Load through a link uid %d owns = %v, want ErrUntrusted naming the link and the fix", testkit.ForeignUID, err)
	}
}
