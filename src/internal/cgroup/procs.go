package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	b := buf
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		if len(line) == 0 {
			continue
		}
		pid, ok := procfs.Atoi(line)
		if !ok {
			return buf, dst, fmt.Errorf("parse %s: bad pid %q", path, line)
		}
		dst = append(dst, pid)
	}
	return buf, dst, nil
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
	// Same rule as containerd's cgroup2.VerifyGroupPath, without pulling
	// its eBPF dependencies into the binary.
	if !strings.HasPrefix(rel, "/") || filepath.Clean(rel) != rel {
		return fmt.Errorf("move pid %d to %s:%s: %w", pid, h.Name, rel, ErrInvalidPath)
	}
	path := filepath.Join(l.Path(h, rel), "cgroup.procs")
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT {
			return fmt.Errorf("move pid %d: open %s: %w", pid, path, ErrNoCgroup)
		}
		return fmt.Errorf("move pid %d: open %s: %w", pid, path, err)
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(strconv.Itoa(pid))); err != nil {
		if err == unix.ESRCH {
			return fmt.Errorf("move pid %d to %s: %w", pid, path, procfs.ErrGone)
		}
		return fmt.Errorf("move pid %d to %s: %w", pid, path, err)
	}
	return nil
}
