package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/cloudfoundry/cellguard/src/internal/procfs"
)

// ErrNoCgroup means the cgroup directory does not exist (any more).
var ErrNoCgroup = errors.New("cgroup: no such cgroup")

// ErrInvalidPath means a cgroup path is not clean and absolute.
var ErrInvalidPath = errors.New("cgroup: invalid cgroup path")

// ReadProcs appends the pids in dir/cgroup.procs to dst, using buf as the
// read buffer; it returns both for reuse.
func ReadProcs(dir string, buf []byte, dst []int) ([]byte, []int, error) {
	path := filepath.Join(dir, "cgroup.procs")
	buf, err := procfs.ReadInto(path, buf[:0])
	if err != nil {
		if procfs.IsGone(err) {
			return buf, dst, fmt.Errorf("read %s: %w", path, ErrNoCgroup)
		}
		return buf, dst, err
	}
	dst, err = parseProcs(func() string { return path }, buf, dst)
	return buf, dst, err
}

// ProcsReader reads cgroup.procs files relative to each hierarchy's mount
// directory, opened once: on a cell the validator reads one per container
// and hierarchy, and resolving every full path again was most of the cost.
// Use one per goroutine, and Close it.
type ProcsReader struct {
	l    *Layout
	fds  map[*Hierarchy]int
	buf  []byte
	name []byte
	pids []int
}

// NewProcsReader returns a reader for l's hierarchies.
func (l *Layout) NewProcsReader() *ProcsReader {
	return &ProcsReader{l: l, fds: map[*Hierarchy]int{}}
}

// Read returns the pids of cgroup rel (/garden/c1) in hierarchy h, in a
// slice of their exact number. A missing cgroup is ErrNoCgroup.
func (r *ProcsReader) Read(h *Hierarchy, rel string) ([]int, error) {
	b, err := r.ReadFile(h, rel, "cgroup.procs")
	if err != nil {
		return nil, err
	}
	path := func() string { return filepath.Join(r.l.Path(h, rel), "cgroup.procs") }
	if r.pids, err = parseProcs(path, b, r.pids[:0]); err != nil {
		return nil, err
	}
	return slices.Clone(r.pids), nil
}

// ReadFile returns file name of cgroup rel in hierarchy h (devices.list),
// read relative to the hierarchy's directory like cgroup.procs; the slice
// is valid until the reader's next call. A missing cgroup or file is
// ErrNoCgroup.
func (r *ProcsReader) ReadFile(h *Hierarchy, rel, name string) ([]byte, error) {
	path := func() string { return filepath.Join(r.l.Path(h, rel), name) }
	fd, ok := r.fds[h]
	if !ok {
		var err error
		if fd, err = unix.Open(r.l.Path(h, "/"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			if err == unix.ENOENT {
				return nil, fmt.Errorf("read %s: %w", path(), ErrNoCgroup)
			}
			return nil, fmt.Errorf("open hierarchy %s: %w", r.l.Path(h, "/"), err)
		}
		r.fds[h] = fd
	}
	r.name = r.name[:0]
	if rel = strings.TrimPrefix(rel, "/"); rel != "" {
		r.name = append(append(r.name, rel...), '/')
	}
	r.name = append(append(r.name, name...), 0)
	var err error
	if r.buf, err = procfs.ReadIntoAtZ(fd, r.name, r.buf[:0]); err != nil {
		if err == unix.ENOENT || err == unix.ENODEV {
			return nil, fmt.Errorf("read %s: %w", path(), ErrNoCgroup)
		}
		return nil, fmt.Errorf("read %s: %w", path(), err)
	}
	return r.buf, nil
}

// Close closes the hierarchy directories.
func (r *ProcsReader) Close() {
	for h, fd := range r.fds {
		unix.Close(fd)
		delete(r.fds, h)
	}
}

// parseProcs appends the pids of a cgroup.procs content to dst.
func parseProcs(path func() string, b []byte, dst []int) ([]int, error) {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, newline)
		if len(line) == 0 {
			continue
		}
		pid, ok := procfs.Atoi(line)
		if !ok {
			return dst, fmt.Errorf("parse %s: bad pid %q", path(), line)
		}
		dst = append(dst, pid)
	}
	return dst, nil
}

// Walk calls fn for dir and every cgroup below it, parents first, with the
// cgroup path relative to dir's hierarchy (rel is dir's own path). fn
// returning SkipDir skips that cgroup's children. Cgroups removed during
// the walk are skipped.
func Walk(dir, rel string, fn func(dir, rel string) error) error {
	err := fn(dir, rel)
	if errors.Is(err, fs.SkipDir) {
		return nil
	}
	if err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("list cgroup %s: %w", dir, err)
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		child := rel + "/" + e.Name()
		if rel == "/" {
			child = "/" + e.Name()
		}
		if err := Walk(filepath.Join(dir, e.Name()), child, fn); err != nil {
			return err
		}
	}
	return nil
}

// Move writes pid into cgroup rel of hierarchy h, moving its whole thread
// group. rel must be a clean absolute cgroup path: it comes from a runtime's
// state file, and a crafted "/../.." must not steer the write elsewhere.
// A process that exited meanwhile yields procfs.ErrGone.
func (l *Layout) Move(h *Hierarchy, rel string, pid int) error {
	return l.MoveChecked(h, rel, pid, nil)
}

// MoveChecked is Move, with check (when not nil) called right before the
// write, after everything else is ready: an error from it is returned as
// is and nothing is written. A check that the pid still names a given
// process then leaves the least time for it to name another.
func (l *Layout) MoveChecked(h *Hierarchy, rel string, pid int, check func() error) error {
	path, err := l.procsPath(h, rel, pid)
	if err != nil {
		return err
	}
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT {
			return fmt.Errorf("move pid %d: open %s: %w", pid, path, ErrNoCgroup)
		}
		return fmt.Errorf("move pid %d: open %s: %w", pid, path, err)
	}
	defer unix.Close(fd)
	b := []byte(strconv.Itoa(pid))
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	if _, err := unix.Write(fd, b); err != nil {
		if err == unix.ESRCH {
			return fmt.Errorf("move pid %d to %s: %w", pid, path, procfs.ErrGone)
		}
		return fmt.Errorf("move pid %d to %s: %w", pid, path, err)
	}
	return nil
}

// CanMove says, writing nothing, whether Move of pid to rel would find its
// cgroup: rel a clean absolute path whose cgroup.procs exists. A nil error
// is no promise: the write itself may still be refused.
func (l *Layout) CanMove(h *Hierarchy, rel string, pid int) error {
	path, err := l.procsPath(h, rel, pid)
	if err != nil {
		return err
	}
	if err := unix.Access(path, unix.F_OK); err != nil {
		if err == unix.ENOENT {
			return fmt.Errorf("move pid %d: %s: %w", pid, path, ErrNoCgroup)
		}
		return fmt.Errorf("move pid %d: %s: %w", pid, path, err)
	}
	return nil
}

// procsPath is the cgroup.procs file of rel in h, for a move of pid.
func (l *Layout) procsPath(h *Hierarchy, rel string, pid int) (string, error) {
	// Same rule as containerd's cgroup2.VerifyGroupPath, without pulling
	// its eBPF dependencies into the binary.
	if !strings.HasPrefix(rel, "/") || filepath.Clean(rel) != rel {
		return "", fmt.Errorf("move pid %d to %s:%s: %w", pid, h.Name, rel, ErrInvalidPath)
	}
	return filepath.Join(l.Path(h, rel), "cgroup.procs"), nil
}
