package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrUntrusted means a file that decides what cellguard does as root could
// be changed by someone other than root.
var ErrUntrusted = errors.New("file is not protected from non-root users")

// maxSymlinks bounds the links followed while resolving a path, as the
// kernel's own limit (40, path_resolution(7)) does.
const maxSymlinks = 40

// CheckTrusted refuses a file that someone other than root could change,
// replace or redirect. The file must be a regular file owned by root and
// not group- or world-writable. Every directory on the way to it, from /
// down and through every symlink followed, must be owned by root and not
// group- or world-writable unless it has the sticky bit (as /tmp does):
// whoever can write a directory can rename what is in it and put their own
// file, directory or symlink there. Symlinks are followed:
// /var/vcap/jobs/<job> is a symlink BOSH maintains, and the target's owner
// and mode are what count; the link itself cannot be changed by anyone who
// cannot write the directory it is in, which is checked. Root is also the
// user running cellguard (tests run as themselves; production runs as
// root, where both mean root). Each refusal wraps ErrUntrusted and names
// the path at fault, why, and the fix. An error that is not ErrUntrusted is
// lstat's or readlink's (fs.ErrNotExist when the file is missing).
func CheckTrusted(path string) error {
	return checkTrusted(path, os.Geteuid())
}

func checkTrusted(path string, euid int) error {
	// not filepath.Abs: it cleans "link/.." lexically, the kernel does not
	abs := path
	if !filepath.IsAbs(path) {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("check trust of %s: %w", path, err)
		}
		abs = wd + "/" + path
	}
	cur := "/"
	fi, err := os.Lstat(cur)
	if err != nil {
		return err
	}
	if err := trustedDir(cur, path, fi, euid); err != nil {
		return err
	}
	rest := components(abs)
	hops := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			// cur holds no symlink, so its lexical parent is its real one.
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if hops++; hops > maxSymlinks {
				return &fs.PathError{Op: "check trust", Path: path, Err: syscall.ELOOP}
			}
			target, err := os.Readlink(next)
			if err != nil {
				return err
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			rest = append(components(target), rest...)
			continue
		}
		if len(rest) == 0 {
			return trustedFile(describe(path, abs, next), fi, euid)
		}
		if !fi.IsDir() {
			return &fs.PathError{Op: "check trust", Path: next, Err: syscall.ENOTDIR}
		}
		if err := trustedDir(next, path, fi, euid); err != nil {
			return err
		}
		cur = next
	}
	// the path named a directory (or /): not a file to trust
	fi, err = os.Lstat(cur)
	if err != nil {
		return err
	}
	return trustedFile(describe(path, abs, cur), fi, euid)
}

func components(p string) []string {
	return strings.Split(strings.Trim(p, "/"), "/")
}

// describe names the file as asked for, and where it really is when a
// symlink led elsewhere.
func describe(asked, abs, real string) string {
	if filepath.Clean(abs) == real {
		return asked
	}
	return asked + " (resolved to " + real + ")"
}

// ownerOK: root, or the user running cellguard.
func ownerOK(st fs.FileInfo, euid int) (uint32, bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, true
	}
	return sys.Uid, sys.Uid == 0 || int(sys.Uid) == euid
}

// trustedFile is the file's rule, apart so tests can feed it any stat data.
func trustedFile(path string, st fs.FileInfo, euid int) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file (%v)", ErrUntrusted, path, st.Mode().Type())
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: %s is group- or world-writable (%v); fix: chmod go-w %s", ErrUntrusted, path, st.Mode().Perm(), path)
	}
	if uid, ok := ownerOK(st, euid); !ok {
		return fmt.Errorf("%w: %s is owned by uid %d, want root; fix: chown root %s", ErrUntrusted, path, uid, path)
	}
	return nil
}

// trustedDir is the rule for each directory on the way to file: its owner
// can chmod it, and whoever can write it can rename what is in it, unless
// the sticky bit (as on /tmp) limits that to each entry's owner.
func trustedDir(dir, file string, st fs.FileInfo, euid int) error {
	if uid, ok := ownerOK(st, euid); !ok {
		return fmt.Errorf("%w: directory %s is owned by uid %d, not root, so that user could replace %s; fix: chown root %s",
			ErrUntrusted, dir, uid, file, dir)
	}
	if st.Mode().Perm()&0o022 != 0 && st.Mode()&fs.ModeSticky == 0 {
		who := "world"
		if st.Mode().Perm()&0o002 == 0 {
			who = "group"
		}
		return fmt.Errorf("%w: directory %s is %s-writable (%v) without the sticky bit, so others could replace %s; fix: chmod go-w %s",
			ErrUntrusted, dir, who, st.Mode().Perm(), file, dir)
	}
	return nil
}
