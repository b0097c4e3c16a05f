package procfs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Pinned is an open /proc/<pid> directory. Files read through it belong to
// the process that held the pid when it was opened: once that process is
// reaped they fail with ErrGone, even if the pid already names another
// process. Reads by path cannot tell two processes apart that reused a pid
// within one clock tick (their start times are equal).
type Pinned struct {
	fd  int
	pid int
	fs  FS
}

// Pin opens /proc/<pid>.
func (fs FS) Pin(pid int) (*Pinned, error) {
	dir := fs.Path(pid, "")
	for {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, wrap("open", dir, err)
		}
		return &Pinned{fd: fd, pid: pid, fs: fs}, nil
	}
}

// Close closes the directory.
func (p *Pinned) Close() error { return unix.Close(p.fd) }

// PID is the pid the directory was opened for.
func (p *Pinned) PID() int { return p.pid }

// PinnedStat reads and parses the pinned process's stat.
func (r *Reader) PinnedStat(p *Pinned) (Stat, error) {
	b, err := r.readAt(p, "stat")
	if err != nil {
		return Stat{}, err
	}
	st, err := ParseStat(b)
	if err != nil {
		return Stat{}, fmt.Errorf("parse %s: %w", p.fs.Path(p.pid, "stat"), err)
	}
	return st, nil
}

// PinnedCgroup returns the pinned process's cgroup file; the slice is valid
// until the reader's next call.
func (r *Reader) PinnedCgroup(p *Pinned) ([]byte, error) { return r.readAt(p, "cgroup") }

// PinnedPidNS returns the inode of the pinned process's pid namespace.
func (r *Reader) PinnedPidNS(p *Pinned) (uint64, error) {
	path := func() string { return p.fs.Path(p.pid, "ns/pid") } // for errors only
	for {
		n, err := unix.Readlinkat(p.fd, "ns/pid", r.link[:cap(r.link)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, wrap("readlink", path(), err)
		}
		if n == cap(r.link) {
			r.link = make([]byte, 2*cap(r.link))
			continue
		}
		ino, err := ParseNSLink(r.link[:n])
		if err != nil {
			return 0, fmt.Errorf("parse %s: %w", path(), err)
		}
		return ino, nil
	}
}

func (r *Reader) readAt(p *Pinned, name string) ([]byte, error) {
	fd, err := openAtRetry(p.fd, name)
	if err != nil {
		return r.buf[:0], wrap("open", p.fs.Path(p.pid, name), err)
	}
	defer unix.Close(fd)
	r.buf, err = readFD(fd, r.buf[:0], true)
	if err != nil {
		return r.buf, wrap("read", p.fs.Path(p.pid, name), err)
	}
	return r.buf, nil
}
