package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// ForeignUID owns what a test plants as another user's: an unused uid, so
// no real account is touched.
const ForeignUID = 64999

// ForeignLink plants a symlink to target owned by ForeignUID in a sticky,
// group-writable directory of root's (mode 01775): a place where that user
// could replace the link whenever they like, and where every directory is
// one the trust rules accept. The directory is not world-writable, so
// fs.protected_symlinks does not apply and the kernel follows the link
// whatever the sysctl says: the test needs no change to the host. Needs
// root (Lchown); the link goes with t's temporary directory.
func ForeignLink(t testing.TB, target string) string {
	t.Helper()
	RequireRoot(t, "chown a symlink to another user")
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, os.ModeSticky|0o775); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, filepath.Base(target))
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, ForeignUID, ForeignUID); err != nil {
		t.Fatal(err)
	}
	return link
}
