package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrUntrusted means a file that decides what cellguard does as root could
// be changed by someone other than root.
var ErrUntrusted = errors.New("file is not protected from non-root users")

// maxSymlinks bounds the links followed while resolving a path, as the
// kernel's own limit (40, path_resolution(7)) does.
const maxSymlinks = 40

// OpenTrusted opens path for reading, refusing a file that someone other
// than root could change, replace or redirect; it is the one door to a
// file that decides what cellguard does as root. Read it, or exec it
// (boundedexec.Command), through the returned file and never through the
// path again: what the path names can change after this returns, the open
// file cannot.
//
// The file must be a regular file owned by root and not group- or
// world-writable. Every directory on the way to it, from / down and through
// every symlink followed, must be owned by root and not group- or
// world-writable unless it has the sticky bit (as /tmp does): whoever can
// write a directory can rename what is in it and put their own file,
// directory or symlink there. Every symlink followed must be owned by root:
// in a sticky directory its owner can replace it. Symlinks are followed
// (/var/vcap/jobs/<job> is one BOSH maintains) by this walk itself, one
// component at a time through descriptors opened with O_PATH|O_NOFOLLOW,
// so each check is of the object the next step goes through; the file is
// then opened for reading through its own checked descriptor
// (/proc/self/fd/N). Root is also the user running cellguard (tests run as
// themselves; production runs as root, where both mean root).
//
// Each refusal wraps ErrUntrusted and names the path at fault, why, and the
// fix. Any other error is the walk's (fs.ErrNotExist when the file is
// missing, syscall.ELOOP after too many symlinks).
func OpenTrusted(path string) (*os.File, error) {
	return openTrusted(path, os.Geteuid())
}

// dirFD is a checked directory on the way, open with O_PATH.
type dirFD struct {
	fd   int
	path string // as walked: real directories only, no symlink in it
}

// walk is one resolution of a path, from / down.
type walk struct {
	asked, abs string // the path as asked for, and made absolute
	euid       int
	dirs       []dirFD // dirs[0] is /; the last is where the next name is looked up
	hops       int     // symlinks followed
}

func (w *walk) top() dirFD { return w.dirs[len(w.dirs)-1] }

func (w *walk) pop() {
	if len(w.dirs) > 1 {
		_ = unix.Close(w.top().fd)
		w.dirs = w.dirs[:len(w.dirs)-1]
	}
}

func (w *walk) close() {
	for len(w.dirs) > 1 {
		w.pop()
	}
	if len(w.dirs) == 1 {
		_ = unix.Close(w.dirs[0].fd)
		w.dirs = nil
	}
}

func openTrusted(path string, euid int) (*os.File, error) {
	// not filepath.Abs: it cleans "link/.." lexically, the kernel does not
	abs := path
	if !filepath.IsAbs(path) {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("open trusted %s: %w", path, err)
		}
		abs = wd + "/" + path
	}
	w := &walk{asked: path, abs: abs, euid: euid}
	defer w.close()
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: "/", Err: err}
	}
	w.dirs = []dirFD{{fd: fd, path: "/"}}
	a, err := fstat(fd, "/")
	if err != nil {
		return nil, err
	}
	if err := trustedDir("/", path, a, euid); err != nil {
		return nil, err
	}
	rest := components(abs)
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			// the stack holds real directories only: its parent entry is
			// the physical parent, as the kernel resolves ".."
			w.pop()
			continue
		}
		f, target, err := w.step(c, len(rest) == 0)
		if f != nil || err != nil {
			return f, err
		}
		if target != "" {
			rest = append(components(target), rest...)
		}
	}
	// the path named a directory (or /): not a file to trust
	a, err = fstat(w.top().fd, w.top().path)
	if err != nil {
		return nil, err
	}
	return nil, trustedFile(describe(path, abs, w.top().path), a, euid)
}

// step looks name up in the current directory without following it and
// checks what it is: a directory on the way is entered, a symlink's
// target is returned for the walk to resolve next, and the last name is
// the file, returned open for reading.
func (w *walk) step(name string, last bool) (*os.File, string, error) {
	next := filepath.Join(w.top().path, name)
	fd, err := unix.Openat(w.top().fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", &fs.PathError{Op: "open", Path: next, Err: err}
	}
	a, err := fstat(fd, next)
	if err != nil {
		_ = unix.Close(fd)
		return nil, "", err
	}
	switch {
	case a.mode&fs.ModeSymlink != 0:
		target, err := readLink(fd, next, w.asked, a, w.euid)
		_ = unix.Close(fd)
		if err != nil {
			return nil, "", err
		}
		if w.hops++; w.hops > maxSymlinks {
			return nil, "", &fs.PathError{Op: "open trusted", Path: w.asked, Err: syscall.ELOOP}
		}
		if filepath.IsAbs(target) {
			for len(w.dirs) > 1 {
				w.pop()
			}
		}
		return nil, target, nil
	case last:
		f, err := reopen(fd, w.asked, describe(w.asked, w.abs, next), a, w.euid)
		return f, "", err
	case !a.mode.IsDir():
		_ = unix.Close(fd)
		return nil, "", &fs.PathError{Op: "open trusted", Path: next, Err: syscall.ENOTDIR}
	}
	if err := trustedDir(next, w.asked, a, w.euid); err != nil {
		_ = unix.Close(fd)
		return nil, "", err
	}
	w.dirs = append(w.dirs, dirFD{fd: fd, path: next})
	return nil, "", nil
}

// readLink checks the symlink open as fd and returns where it points.
func readLink(fd int, link, file string, a attrs, euid int) (string, error) {
	if err := trustedLink(link, file, a, euid); err != nil {
		return "", err
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: link, Err: err}
	}
	return string(buf[:n]), nil
}

// reopen opens the checked file, held by the O_PATH descriptor fd (which
// it closes), for reading through that descriptor: the same inode whatever
// the path names by now. Its owner and mode are checked again on the
// descriptor returned, named as asked (name says where it resolved to).
func reopen(fd int, asked, name string, a attrs, euid int) (*os.File, error) {
	defer unix.Close(fd)
	if err := trustedFile(name, a, euid); err != nil {
		return nil, err
	}
	proc := "/proc/self/fd/" + strconv.Itoa(fd)
	rfd, err := unix.Open(proc, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s through its checked descriptor %s: %w", name, proc, err)
	}
	got, err := fstat(rfd, name)
	if err == nil && (got.dev != a.dev || got.ino != a.ino) {
		err = fmt.Errorf("open %s through %s: got inode %d on device %d, checked %d on %d (is /proc procfs?)",
			name, proc, got.ino, got.dev, a.ino, a.dev)
	}
	if err == nil {
		err = trustedFile(name, got, euid)
	}
	if err != nil {
		_ = unix.Close(rfd)
		return nil, err
	}
	return os.NewFile(uintptr(rfd), asked), nil
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

// attrs is what the trust rules read of a file's stat data.
type attrs struct {
	mode     fs.FileMode
	uid      uint32
	dev, ino uint64
}

func fstat(fd int, name string) (attrs, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return attrs{}, &fs.PathError{Op: "fstat", Path: name, Err: err}
	}
	return attrsOf(&st), nil
}

// attrsOf keeps the type, permission and sticky bits of st's mode, in
// io/fs's terms, as os.Stat would.
func attrsOf(st *unix.Stat_t) attrs {
	m := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return attrs{mode: m, uid: st.Uid, dev: uint64(st.Dev), ino: st.Ino} // Dev is not uint64 on every arch
}

// ownerOK: root, or the user running cellguard.
func ownerOK(a attrs, euid int) bool { return a.uid == 0 || int(a.uid) == euid }

// trustedFile is the file's rule, apart so tests can feed it any stat data.
func trustedFile(path string, a attrs, euid int) error {
	if !a.mode.IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file (%v)", ErrUntrusted, path, a.mode.Type())
	}
	if a.mode.Perm()&0o022 != 0 {
		return fmt.Errorf("%w: %s is group- or world-writable (%v); fix: chmod go-w %s", ErrUntrusted, path, a.mode.Perm(), path)
	}
	if !ownerOK(a, euid) {
		return fmt.Errorf("%w: %s is owned by uid %d, want root; fix: chown root %s", ErrUntrusted, path, a.uid, path)
	}
	return nil
}

// trustedDir is the rule for each directory on the way to file: its owner
// can chmod it, and whoever can write it can rename what is in it, unless
// the sticky bit (as on /tmp) limits that to each entry's owner.
func trustedDir(dir, file string, a attrs, euid int) error {
	if !ownerOK(a, euid) {
		return fmt.Errorf("%w: directory %s is owned by uid %d, not root, so that user could replace %s; fix: chown root %s",
			ErrUntrusted, dir, a.uid, file, dir)
	}
	if a.mode.Perm()&0o022 != 0 && a.mode&fs.ModeSticky == 0 {
		who := "world"
		if a.mode.Perm()&0o002 == 0 {
			who = "group"
		}
		return fmt.Errorf("%w: directory %s is %s-writable (%v) without the sticky bit, so others could replace %s; fix: chmod go-w %s",
			ErrUntrusted, dir, who, a.mode.Perm(), file, dir)
	}
	return nil
}

// trustedLink is the rule for each symlink followed: a link cannot be
// changed in place, but its owner may remove and replace it where the
// directory allows, which the sticky bit (as on /tmp) does for the owner
// of each entry alone.
func trustedLink(link, file string, a attrs, euid int) error {
	if !ownerOK(a, euid) {
		return fmt.Errorf("%w: symlink %s is owned by uid %d, not root, so that user could point %s elsewhere; fix: chown -h root %s",
			ErrUntrusted, link, a.uid, file, link)
	}
	return nil
}
