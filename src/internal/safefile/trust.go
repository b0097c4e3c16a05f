package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrUntrusted means a file that decides what cellguard does as root could
// be changed by someone other than root.
var ErrUntrusted = errors.New("file is not protected from non-root users")

// CheckTrusted refuses a file that someone other than root could change:
// one that is not a regular file, not owned by root (or by the user
// running cellguard: tests run as themselves; production runs as root,
// where both mean root), group- or world-writable, or in a directory that
// is world-writable without the sticky bit (anyone could replace it).
// Symlinks are followed: /var/vcap/jobs/<job> is a symlink BOSH maintains,
// and the target's owner and mode are what count. An error that is not
// ErrUntrusted is os.Stat's.
func CheckTrusted(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if err := trustedFile(path, st, os.Geteuid()); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	dst, err := os.Stat(dir)
	if err != nil {
		return err
	}
	return trustedDir(dir, filepath.Base(path), dst)
}

// trustedFile is the file's rule, apart so tests can feed it any stat data.
func trustedFile(path string, st fs.FileInfo, euid int) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file (%v)", ErrUntrusted, path, st.Mode().Type())
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: %s is group- or world-writable (%v); fix: chmod go-w %s", ErrUntrusted, path, st.Mode().Perm(), path)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 && int(sys.Uid) != euid {
		return fmt.Errorf("%w: %s is owned by uid %d, want root; fix: chown root %s", ErrUntrusted, path, sys.Uid, path)
	}
	return nil
}

// trustedDir is the directory's rule: a world-writable directory lets
// anyone replace name unless the sticky bit (as on /tmp) stops them.
func trustedDir(dir, name string, st fs.FileInfo) error {
	if st.Mode().Perm()&0o002 != 0 && st.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("%w: directory %s is world-writable (%v), anyone could replace %s; fix: chmod o-w %s",
			ErrUntrusted, dir, st.Mode().Perm(), name, dir)
	}
	return nil
}
