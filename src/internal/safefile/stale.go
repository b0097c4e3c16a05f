package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"time"
)

// tempName is the name WriteFileAtomic gives its temp file: "."+name+
// ".tmp-"+digits (os.CreateTemp replaces the * with a random number).
var tempName = regexp.MustCompile(`^\.(.+)\.tmp-[0-9]+$`)

// TempTarget returns the file a temp file of WriteFileAtomic was meant to
// become, and whether name is such a temp file.
func TempTarget(name string) (string, bool) {
	m := tempName.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// RemoveStaleTemps removes the temp files a crash of WriteFileAtomic left
// in dir (killed between creating its temp file and the rename): regular
// files named as TempTarget says, for a target ours accepts, not modified
// for minAge (a writer in flight is younger: its temp file lives for
// milliseconds). A missing dir is nothing to do. It returns the removed
// paths; an error does not stop it from removing the others.
func RemoveStaleTemps(dir string, ours func(target string) bool, minAge time.Duration, now time.Time) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var removed []string
	var errs []error
	for _, e := range ents {
		target, ok := TempTarget(e.Name())
		if !ok || !e.Type().IsRegular() || !ours(target) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // its writer renamed or removed it meanwhile
		} else if err != nil {
			errs = append(errs, err)
			continue
		}
		if now.Sub(fi.ModTime()) < minAge {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove stale temp file %s: %w", p, err))
			continue
		}
		removed = append(removed, p)
	}
	if len(removed) > 0 {
		if err := SyncDir(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// RemoveDirIfEmpty removes dir when it holds nothing; a missing or
// non-empty dir is left as it is. It reports whether dir was removed.
func RemoveDirIfEmpty(dir string) (bool, error) {
	err := os.Remove(dir)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EEXIST):
		return false, nil
	}
	return false, fmt.Errorf("remove directory %s: %w", dir, err)
}
