package safefile_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// TestWriteModeIgnoresUmaskAndOldMode: files come out 0644 and ours
// whatever the umask and whatever mode the old file had.
func TestWriteModeIgnoresUmaskAndOldMode(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	fresh := filepath.Join(dir, "cellguard-garden.service")
	if _, err := safefile.WriteFileAtomic(fresh, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	assertFile(t, fresh, []byte("new\n"), 0o644)

	loose := filepath.Join(dir, "60-cellguard.conf")
	if err := os.WriteFile(loose, []byte("new\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o666); err != nil {
		t.Fatal(err)
	}
	res, err := safefile.WriteFileAtomic(loose, []byte("new\n"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed {
		t.Error("same content with a world-writable mode was left alone")
	}
	assertFile(t, loose, []byte("new\n"), 0o644)
}

// TestWriteReplacesPlantedFileOfAnotherOwner: a file with exactly our
// content and mode but another owner is replaced, not trusted.
func TestWriteReplacesPlantedFileOfAnotherOwner(t *testing.T) {
	testkit.RequireRoot(t, "chown a file to another user")
	target := filepath.Join(t.TempDir(), "cellguard-garden.service")
	if err := os.WriteFile(target, []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(target, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	res, err := safefile.WriteFileAtomic(target, []byte("same\n"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed {
		t.Error("a file owned by nobody was kept")
	}
	assertFile(t, target, []byte("same\n"), 0o644)
	// Now ours: a second run changes nothing (no needless Reload).
	if res, err := safefile.WriteFileAtomic(target, []byte("same\n"), 0o644); err != nil || res.Changed {
		t.Errorf("second run: %+v, %v", res, err)
	}
}

// TestWriteRefusesSymlinkAtTarget: a symlink planted where the unit goes
// (pointing at /etc/shadow, say) is refused and left untouched, and its
// target is not written.
func TestWriteRefusesSymlinkAtTarget(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"to-file": victim, "dangling": filepath.Join(dir, "nowhere")} {
		t.Run(name, func(t *testing.T) {
			link := filepath.Join(dir, "cellguard-"+name+".service")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			_, err := safefile.WriteFileAtomic(link, []byte("[Service]\n"), 0o644)
			if !errors.Is(err, safefile.ErrSymlink) {
				t.Fatalf("write through a symlink: %v, want ErrSymlink", err)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("symlink replaced or removed: %v %v", fi, err)
			}
			if _, err := os.Stat(filepath.Join(dir, "nowhere")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("dangling symlink's target was created: %v", err)
			}
		})
	}
	assertFile(t, victim, []byte("precious\n"), 0o600)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if filepath.Ext(e.Name()) != ".service" && e.Name() != "victim" {
			t.Errorf("refused write left %s", e.Name())
		}
	}
}

// TestWriteFollowsSymlinkedParent documents a decision: a symlinked parent
// directory is followed. Merged-/usr hosts reach /lib/systemd/system through
// the /lib -> usr/lib symlink, and only root can place a symlink in the
// directories cellguard writes to (/etc/systemd/system, /run/systemd/system,
// /etc/sysctl.d), so refusing would break real hosts for no gain. The file
// lands in the real directory; the symlink stays a symlink.
func TestWriteFollowsSymlinkedParent(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "usr/lib/systemd/system")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("usr/lib", filepath.Join(root, "lib")); err != nil {
		t.Fatal(err)
	}
	via := filepath.Join(root, "lib/systemd/system/cellguard-garden.service")
	if _, err := safefile.WriteFileAtomic(via, []byte("[Service]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(real, "cellguard-garden.service"), []byte("[Service]\n"), 0o644)
	if fi, err := os.Lstat(filepath.Join(root, "lib")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("parent symlink changed: %v %v", fi, err)
	}
}

// TestWriteUnchangedIsNoop: the same content again changes nothing, so
// callers skip the systemd Reload.
func TestWriteUnchangedIsNoop(t *testing.T) {
	target := filepath.Join(t.TempDir(), "cellguard-garden.service")
	if res, err := safefile.WriteFileAtomic(target, []byte("a\n"), 0o644); err != nil || !res.Changed {
		t.Fatalf("first write: %+v %v", res, err)
	}
	fi1, _ := os.Stat(target)
	if res, err := safefile.WriteFileAtomic(target, []byte("a\n"), 0o644); err != nil || res.Changed {
		t.Fatalf("second write: %+v %v", res, err)
	}
	fi2, _ := os.Stat(target)
	if !os.SameFile(fi1, fi2) {
		t.Error("unchanged content was rewritten (new inode)")
	}
}
