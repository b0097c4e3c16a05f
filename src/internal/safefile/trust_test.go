package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// statInfo is stat data for trustedFile and trustedDir.
type statInfo struct {
	mode fs.FileMode
	uid  uint32
}

func (s statInfo) attrs() attrs { return attrs{mode: s.mode, uid: s.uid} }

// openAndClose is OpenTrusted's verdict alone.
func openAndClose(path string) error {
	f, err := OpenTrusted(path)
	if f != nil {
		f.Close()
	}
	return err
}

// TestTrustRules: each rule of OpenTrusted on its own, from stat data.
func TestTrustRules(t *testing.T) {
	const euid = 1000
	for _, tc := range []struct {
		name string
		file statInfo
		dir  statInfo
		want string // "" means trusted
	}{
		{"root 0644 in 0755", statInfo{0o644, 0}, statInfo{fs.ModeDir | 0o755, 0}, ""},
		{"bosh's 0640 in 0750", statInfo{0o640, 0}, statInfo{fs.ModeDir | 0o750, 0}, ""},
		{"owned by the euid", statInfo{0o600, euid}, statInfo{fs.ModeDir | 0o755, euid}, ""},
		{"owned by another uid", statInfo{0o644, 65534}, statInfo{fs.ModeDir | 0o755, 0}, "owned by uid 65534, want root; fix: chown root"},
		{"group-writable", statInfo{0o664, 0}, statInfo{fs.ModeDir | 0o755, 0}, "group- or world-writable (-rw-rw-r--); fix: chmod go-w"},
		{"world-writable", statInfo{0o646, 0}, statInfo{fs.ModeDir | 0o755, 0}, "fix: chmod go-w"},
		{"a directory", statInfo{fs.ModeDir | 0o755, 0}, statInfo{fs.ModeDir | 0o755, 0}, "is not a regular file"},
		{"a fifo", statInfo{fs.ModeNamedPipe | 0o644, 0}, statInfo{fs.ModeDir | 0o755, 0}, "is not a regular file"},
		{"world-writable dir", statInfo{0o644, 0}, statInfo{fs.ModeDir | 0o777, 0},
			"directory /etc/x is world-writable (-rwxrwxrwx) without the sticky bit, so others could replace /etc/x/f.json; fix: chmod go-w /etc/x"},
		{"sticky world-writable dir, like /tmp", statInfo{0o644, 0}, statInfo{fs.ModeDir | fs.ModeSticky | 0o777, 0}, ""},
		{"group-writable dir", statInfo{0o644, 0}, statInfo{fs.ModeDir | 0o775, 0},
			"directory /etc/x is group-writable (-rwxrwxr-x) without the sticky bit, so others could replace /etc/x/f.json; fix: chmod go-w /etc/x"},
		{"sticky group-writable dir", statInfo{0o644, 0}, statInfo{fs.ModeDir | fs.ModeSticky | 0o775, 0}, ""},
		{"dir of another uid", statInfo{0o644, 0}, statInfo{fs.ModeDir | 0o755, 65534},
			"directory /etc/x is owned by uid 65534, not root, so that user could replace /etc/x/f.json; fix: chown root /etc/x"},
		{"sticky dir of another uid", statInfo{0o644, 0}, statInfo{fs.ModeDir | fs.ModeSticky | 0o1777, 65534}, "owned by uid 65534"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := trustedFile("/etc/x/f.json", tc.file.attrs(), euid)
			if err == nil {
				err = trustedDir("/etc/x", "/etc/x/f.json", tc.dir.attrs(), euid)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrUntrusted with %q", err, tc.want)
			}
		})
	}
}

// TestOpenTrustedOnDisk: the rules hold on real files, symlinks are
// followed to their target, and a missing file is fs.ErrNotExist.
func TestOpenTrustedOnDisk(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "jobs/cellguard/config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "f.json")
	if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := openAndClose(p); err != nil {
		t.Fatalf("0644 file of ours: %v", err)
	}
	link := filepath.Join(base, "link.json")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	if err := openAndClose(link); err != nil {
		t.Fatalf("a symlink to a trusted file (the link's own mode is 0777): %v", err)
	}
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := openAndClose(link); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("a symlink to a world-writable file: %v", err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := openAndClose(p); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "chmod go-w "+dir) {
		t.Fatalf("file in a world-writable dir: %v", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := openAndClose(dir); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a directory: %v", err)
	}
	err := openAndClose(filepath.Join(dir, "missing.json"))
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrUntrusted) {
		t.Fatalf("missing file: %v, want fs.ErrNotExist", err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := openAndClose(p); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "uid 65534") {
			t.Fatalf("file owned by nobody: %v", err)
		}
	}
}
