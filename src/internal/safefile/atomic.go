package safefile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrSymlink is returned when the target path is a symlink.
var ErrSymlink = errors.New("safefile: refusing to replace a symlink")

// WriteResult says whether WriteFileAtomic changed anything.
type WriteResult struct {
	Changed bool
}

// WriteFileAtomic writes data to path via a temp file in the same directory,
// fsyncs it, renames it over path and fsyncs the directory. When path already
// holds exactly data with the same mode, nothing is written and Changed is
// false, so callers can skip follow-up work such as a systemd Reload; a file
// with the right content but another owner is rewritten, so it ends up ours.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) (WriteResult, error) {
	dir := filepath.Dir(path)
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSymlink != 0 {
			return WriteResult{}, fmt.Errorf("write %s: %w", path, ErrSymlink)
		}
		if fi.Mode().IsRegular() && fi.Mode().Perm() == perm && ownedByUs(fi) {
			if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
				return WriteResult{Changed: false}, nil
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return WriteResult{}, fmt.Errorf("stat %s: %w", path, err)
	}

	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return WriteResult{}, fmt.Errorf("create temp file for %s: %w", path, err)
	}
	tmpName := tmp.Name()
	cleanup := func() { _ = os.Remove(tmpName) }
	crashPoint("create", path)
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		cleanup()
		return WriteResult{}, fmt.Errorf("write temp file for %s: %w", path, err)
	}
	crashPoint("write", path)
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		cleanup()
		return WriteResult{}, fmt.Errorf("chmod temp file for %s: %w", path, err)
	}
	crashPoint("chmod", path)
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		cleanup()
		return WriteResult{}, fmt.Errorf("fsync temp file for %s: %w", path, err)
	}
	crashPoint("fsync", path)
	if err := tmp.Close(); err != nil {
		cleanup()
		return WriteResult{}, fmt.Errorf("close temp file for %s: %w", path, err)
	}
	crashPoint("close", path)
	// rename(2) replaces a symlink itself rather than following it, so a
	// symlink planted between the Lstat above and here cannot redirect us.
	if err := os.Rename(tmpName, path); err != nil {
		cleanup()
		return WriteResult{}, fmt.Errorf("rename into %s: %w", path, err)
	}
	crashPoint("rename", path)
	if err := SyncDir(dir); err != nil {
		return WriteResult{Changed: true}, err
	}
	crashPoint("fsync-dir", path)
	return WriteResult{Changed: true}, nil
}

// ownedByUs reports whether fi belongs to the user we run as (root in
// production): a planted file with the right content must not stay.
func ownedByUs(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// SyncDir fsyncs a directory so a rename in it survives a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// RemoveIfExists removes path; a missing file is not an error. It reports
// whether something was removed.
func RemoveIfExists(path string) (bool, error) {
	err := os.Remove(path)
	if err == nil {
		return true, SyncDir(filepath.Dir(path))
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, fmt.Errorf("remove %s: %w", path, err)
}
