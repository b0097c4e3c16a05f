package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrUntrusted means the config file could be changed by someone other than
// root: cellguard runs as root and the config decides what it writes, which
// checks block a deploy and which are ignored.
var ErrUntrusted = errors.New("config: file is not protected from non-root users")

// checkTrusted refuses a config file that is not owned by root (or by the
// user running cellguard: tests run as themselves; production runs as root,
// where both mean root), that is group- or world-writable, or whose
// directory is world-writable without the sticky bit. The file's symlinks
// are followed: /var/vcap/jobs/<job> is a symlink BOSH maintains.
func checkTrusted(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("read config %s: %w", path, err)
	}
	if err := trusted(path, st); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	dst, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("stat config dir %s: %w", dir, err)
	}
	if dst.Mode().Perm()&0o002 != 0 && dst.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("%w: directory %s is world-writable (%v), anyone could replace %s; fix: chmod o-w %s",
			ErrUntrusted, dir, dst.Mode().Perm(), filepath.Base(path), dir)
	}
	return nil
}

// trusted is the file's rule, apart so tests can feed it any stat data.
func trusted(path string, st fs.FileInfo) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file (%v)", ErrUntrusted, path, st.Mode().Type())
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: %s is group- or world-writable (%v); fix: chmod go-w %s", ErrUntrusted, path, st.Mode().Perm(), path)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 && int(sys.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: %s is owned by uid %d, want root; fix: chown root %s", ErrUntrusted, path, sys.Uid, path)
	}
	return nil
}
