package procfs

import (
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// NSInode returns the inode of pid's namespace of kind ("net", "mnt") from
// its ns/<kind> link, read relative to the reader's open /proc. Errors are
// the bare errno (ENOENT: gone, or no such link in a fixture tree), so that
// a scan of every process allocates nothing for the ones it cannot read.
func (r *Reader) NSInode(pid int, kind string) (uint64, error) {
	if !r.rel(pid, "ns/"+kind) {
		return 0, unix.EBADF
	}
	l, err := r.readlinkAt(r.dir, r.name)
	if err != nil {
		return 0, err
	}
	return ParseNSLink(l)
}

// FDLinks calls fn with each open fd of pid, in ascending order, and the
// target of its link (valid only during the call). The fd directory is
// opened relative to the reader's /proc and each link read relative to it:
// a scan of every process's files then allocates nothing per process or
// per fd. Errors are the bare errno: ENOENT when the process is gone (or a
// fixture tree has no fd directory), EACCES when its files are not ours to
// read. A link that went away while reading is skipped.
func (r *Reader) FDLinks(pid int, fn func(fd int, link []byte)) error {
	if !r.rel(pid, "fd") {
		return unix.EBADF
	}
	dir, err := openDirAtZ(r.dir, r.name)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	if r.dents == nil {
		r.dents = make([]byte, 8<<10)
	}
	r.fds = r.fds[:0]
	for {
		n, err := unix.Getdents(dir, r.dents)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			break
		}
		// A short read is not the end: getdents stops filling at a pending
		// signal (Linux's filldir64), and Go preempts goroutines with
		// SIGURG. Only a read of 0 ends the directory.
		r.fds = appendDirentNums(r.fds, r.dents[:n], 0)
	}
	slices.Sort(r.fds) // a fixture tree lists them in any order
	for _, fd := range r.fds {
		r.name = strconv.AppendInt(r.name[:0], int64(fd), 10)
		r.name = append(r.name, 0)
		l, err := r.readlinkAt(dir, r.name)
		if err != nil {
			continue // closed meanwhile
		}
		fn(fd, l)
	}
	return nil
}

// openDirAtZ opens the NUL-terminated relative path z as a directory.
func openDirAtZ(dir int, z []byte) (int, error) {
	for {
		fd, err := openAtZFlags(dir, z, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// EachFDName hands fn the names in pid's fd directory, up to max of them,
// a chunk at a time (in the directory's order). more says entries were
// left; err is set only when the directory cannot be opened. A process
// that goes away mid-walk ends it.
func (fs FS) EachFDName(pid, max int, fn func(names []string)) (more bool, err error) {
	dir, err := os.Open(fs.Path(pid, "fd"))
	if err != nil {
		return false, err
	}
	defer dir.Close()
	for walked := 0; walked < max; {
		names, err := dir.Readdirnames(min(256, max-walked))
		walked += len(names)
		fn(names)
		if err != nil || len(names) == 0 {
			return false, nil // io.EOF, or the process went away
		}
	}
	rest, _ := dir.Readdirnames(1)
	return len(rest) > 0, nil
}
