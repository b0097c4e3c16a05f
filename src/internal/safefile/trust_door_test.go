package safefile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// TestOpenTrustedReadsWhatItChecked (issue 38, hole 7): trust holds for
// the object actually used. The path is a symlink swapped for one to
// other content right after OpenTrusted returns, as a user who owned the
// link (or anyone, before the check refused such links) could; what is
// read through the returned file is still the file that was checked.
func TestOpenTrustedReadsWhatItChecked(t *testing.T) {
	dir := t.TempDir()
	checked := filepath.Join(dir, "checked.json")
	other := filepath.Join(dir, "other.json")
	link := filepath.Join(dir, "cellguard.json")
	for p, body := range map[string]string{checked: "checked", other: "swapped in"} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(checked, link); err != nil {
		t.Fatal(err)
	}
	f, err := safefile.OpenTrusted(link)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if err != nil || string(b) != "checked" {
		t.Fatalf("read after the swap = %q, %v; want the checked file's content", b, err)
	}
	if f.Name() != link {
		t.Errorf("Name() = %q, want the path as asked for, %q", f.Name(), link)
	}
}

// TestOpenTrustedRefusesLinksOthersOwn: a symlink whose owner is not root
// is refused wherever it lies, naming the link and its owner: in a sticky
// directory (world- or group-writable, as /tmp) that owner may replace it
// at any time. The refusal comes from the walk's own lstat-like look at
// the link, before anything follows it, so fs.protected_symlinks plays no
// part.
func TestOpenTrustedRefusesLinksOthersOwn(t *testing.T) {
	target := filepath.Join(t.TempDir(), "f.json")
	if err := os.WriteFile(target, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := testkit.ForeignLink(t, target) // in a 01775 directory
	for _, mode := range []os.FileMode{os.ModeSticky | 0o775, os.ModeSticky | 0o777, 0o755} {
		if err := os.Chmod(filepath.Dir(link), mode); err != nil {
			t.Fatal(err)
		}
		err := openAndClose(link)
		if !errors.Is(err, safefile.ErrUntrusted) || !strings.Contains(err.Error(), "symlink "+link+" is owned by uid 64999") || !strings.Contains(err.Error(), "chown -h root "+link) {
			t.Fatalf("link of uid 64999 in a %v directory: %v\nwant a refusal naming the link, its owner and the fix", mode, err)
		}
	}
	// the same link as a directory on the way is refused too
	if err := os.Chmod(filepath.Dir(link), os.ModeSticky|0o775); err != nil {
		t.Fatal(err)
	}
	dirLink := testkit.ForeignLink(t, filepath.Dir(target))
	if err := openAndClose(dirLink + "/f.json"); !errors.Is(err, safefile.ErrUntrusted) || !strings.Contains(err.Error(), "symlink "+dirLink+" ") {
		t.Fatalf("through a directory link of uid 64999: %v", err)
	}
	if err := os.Lchown(dirLink, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := openAndClose(dirLink + "/f.json"); err != nil {
		t.Fatalf("through root's link in a sticky directory: %v", err)
	}
}
