package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
)

// ErrGone means the process exited while we looked at it: normal on a live
// host, never a finding.
var ErrGone = errors.New("procfs: process is gone")

// UserHZ is the kernel's USER_HZ, the unit of /proc/<pid>/stat start times.
// It is 100 on every Linux architecture cellguard runs on.
const UserHZ = 100

// FS is a proc filesystem mounted at Root/proc.
type FS struct {
	Root string
}

// New returns the proc filesystem under root ("" or "/" is the host).
func New(root string) FS { return FS{Root: hostroot.Dir(root)} }

// Dir is the directory holding the pid directories.
func (fs FS) Dir() string { return filepath.Join(fs.Root, "proc") }

// Path returns Root/proc/<pid>/<name>.
func (fs FS) Path(pid int, name string) string {
	return filepath.Join(fs.Root, "proc", strconv.Itoa(pid), name)
}

// Stat is the part of /proc/<pid>/stat the validator reads.
type Stat struct {
	PID   int
	Comm  string // without the parentheses; may contain spaces and ')'
	State byte
	PPID  int
	// StartTime is field 22: clock ticks after boot. runc records the same
	// number as init_process_start, which makes pid reuse detectable.
	StartTime uint64
}

// Reader reads proc files into reused buffers. It is not safe for
// concurrent use; use one per goroutine, and Close it.
//
// Per-process files are opened relative to an open Root/proc directory:
// the kernel then resolves "<pid>/stat", not every component of the full
// path again (a third of the validator's system time went to path lookup).
type Reader struct {
	fs   FS
	buf  []byte
	link []byte
	dir  int // Root/proc, opened on first use; -1 before, or when it failed
	name []byte
	// comms interns command names: a cell runs thousands of processes
	// under a few dozen names.
	comms map[string]string
	// dents and fds are FDLinks's directory buffer and fd list.
	dents []byte
	fds   []int
}

// maxComms bounds the interned command names.
const maxComms = 4096

// NewReader returns a Reader for fs.
func (fs FS) NewReader() *Reader {
	return &Reader{fs: fs, buf: make([]byte, 4096), link: make([]byte, 128), dir: -1}
}

// Close releases the reader's directory; the reader can still be used.
func (r *Reader) Close() error {
	if r.dir < 0 {
		return nil
	}
	err := unix.Close(r.dir)
	r.dir = -1
	return err
}

// FS returns the filesystem the reader reads.
func (r *Reader) FS() FS { return r.fs }

// rel sets r.name to "<pid>/<name>\x00" for openat relative to r.dir,
// opening the directory on first use. It is false when that cannot be
// opened: the caller then uses the full path, whose error names the
// problem. A NUL-terminated byte slice, not a string, so that the
// thousands of opens of a scan allocate nothing.
func (r *Reader) rel(pid int, name string) bool {
	if r.dir < 0 {
		fd, err := openRetry(r.fs.Dir(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
		if err != nil {
			return false
		}
		r.dir = fd
	}
	r.name = strconv.AppendInt(r.name[:0], int64(pid), 10)
	r.name = append(r.name, '/')
	r.name = append(r.name, name...)
	r.name = append(r.name, 0)
	return true
}

// readProc reads Root/proc/<pid>/<name>. These files are generated whole
// when read (single_open seq files): a read that does not fill the buffer
// returned all of it, so the read that would return 0 is skipped (as
// procps does).
func (r *Reader) readProc(pid int, name string) ([]byte, error) {
	if !r.rel(pid, name) {
		return r.read(r.fs.Path(pid, name))
	}
	fd, err := openAtZ(r.dir, r.name)
	if err != nil {
		return r.buf[:0], wrap("open", r.fs.Path(pid, name), err)
	}
	defer unix.Close(fd)
	r.buf, err = readFD(fd, r.buf[:0], true)
	if err != nil {
		return r.buf, wrap("read", r.fs.Path(pid, name), err)
	}
	return r.buf, nil
}

// openAtZ is openat(2) of the NUL-terminated relative path z.
func openAtZ(dir int, z []byte) (int, error) {
	for {
		fd, err := openAtZFlags(dir, z, unix.O_RDONLY|unix.O_CLOEXEC)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// openAtZFlags is one openat(2) of the NUL-terminated relative path z; the
// error is the bare errno, EINTR included.
func openAtZFlags(dir int, z []byte, flags int) (int, error) {
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(dir), uintptr(unsafe.Pointer(&z[0])),
		uintptr(flags), 0, 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// readlinkAtZ is readlinkat(2) of the NUL-terminated relative path z.
func readlinkAtZ(dir int, z, buf []byte) (int, error) {
	for {
		n, _, errno := unix.Syscall6(unix.SYS_READLINKAT, uintptr(dir), uintptr(unsafe.Pointer(&z[0])),
			uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		return int(n), nil
	}
}

// Stat reads and parses /proc/<pid>/stat.
func (r *Reader) Stat(pid int) (Stat, error) {
	b, err := r.readProc(pid, "stat")
	if err != nil {
		return Stat{}, err
	}
	st, err := parseStat(b, r.intern)
	if err != nil {
		return Stat{}, fmt.Errorf("parse %s: %w", r.fs.Path(pid, "stat"), err)
	}
	return st, nil
}

// ParseStat parses the content of /proc/<pid>/stat. The comm field is
// wrapped in parentheses and may itself contain ") (", so it ends at the
// last ')' in the line, as the kernel documents.
func ParseStat(b []byte) (Stat, error) {
	return parseStat(b, func(c []byte) string { return string(c) })
}

// intern returns c as a string, shared with earlier equal names.
func (r *Reader) intern(c []byte) string {
	if s, ok := r.comms[string(c)]; ok { // no allocation for the lookup
		return s
	}
	s := string(c)
	if r.comms == nil {
		r.comms = map[string]string{}
	}
	if len(r.comms) < maxComms {
		r.comms[s] = s
	}
	return s
}

func parseStat(b []byte, str func([]byte) string) (Stat, error) {
	var st Stat
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return st, errors.New("no (comm) field")
	}
	pid, ok := atoi(bytes.TrimSpace(b[:open]))
	if !ok {
		return st, fmt.Errorf("bad pid %q", b[:open])
	}
	st.PID = pid
	st.Comm = str(b[open+1 : end])
	// Fields after comm, numbered from 3 (state).
	rest := b[end+1:]
	field := 2
	for len(rest) > 0 {
		rest = bytes.TrimLeft(rest, " ")
		if len(rest) == 0 {
			break
		}
		i := bytes.IndexByte(rest, ' ')
		var tok []byte
		if i < 0 {
			tok, rest = rest, nil
		} else {
			tok, rest = rest[:i], rest[i+1:]
		}
		field++
		switch field {
		case 3:
			st.State = tok[0]
		case 4:
			st.PPID, _ = atoi(tok)
		case 22:
			v, ok := atoi(tok)
			if !ok {
				return st, fmt.Errorf("bad starttime %q", tok)
			}
			st.StartTime = uint64(v)
			return st, nil
		}
	}
	return st, fmt.Errorf("only %d fields", field)
}

// Cgroup returns the content of /proc/<pid>/cgroup. The slice is valid
// until the reader's next call.
func (r *Reader) Cgroup(pid int) ([]byte, error) {
	return r.readProc(pid, "cgroup")
}

// Cmdline returns the process's argv; empty for kernel threads and zombies.
func (r *Reader) Cmdline(pid int) ([]string, error) {
	b, err := r.read(r.fs.Path(pid, "cmdline"))
	if err != nil {
		return nil, err
	}
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil, nil
	}
	parts := bytes.Split(b, []byte{0})
	args := make([]string, len(parts))
	for i, p := range parts {
		args[i] = string(p)
	}
	return args, nil
}

// PidNS returns the inode of the process's pid namespace, from the
// "pid:[4026531836]" link. Zombies have no namespaces left: ErrGone.
func (r *Reader) PidNS(pid int) (uint64, error) {
	var l []byte
	var err error
	if r.rel(pid, "ns/pid") {
		l, err = r.readlinkAt(r.dir, r.name)
		if err != nil {
			err = wrap("readlink", r.fs.Path(pid, "ns/pid"), err)
		}
	} else {
		l, err = r.readlink(r.fs.Path(pid, "ns/pid"))
	}
	if err != nil {
		return 0, err
	}
	ino, err := ParseNSLink(l)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", r.fs.Path(pid, "ns/pid"), err)
	}
	return ino, nil
}

// ParseNSLink parses a namespace link target such as "pid:[4026531836]".
func ParseNSLink(l []byte) (uint64, error) {
	i := bytes.IndexByte(l, '[')
	if i < 0 || l[len(l)-1] != ']' {
		return 0, fmt.Errorf("bad namespace link %q", l)
	}
	v, err := strconv.ParseUint(string(l[i+1:len(l)-1]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad namespace link %q: %w", l, err)
	}
	return v, nil
}

// Readlink reads a link under proc (e.g. "fd/3") of pid into the reader's
// buffer; the slice is valid until the next call.
func (r *Reader) Readlink(pid int, name string) ([]byte, error) {
	return r.readlink(r.fs.Path(pid, name))
}

// ReadFile reads path whole into the reader's buffer (grown as needed); the
// slice is valid until the next call. ENOENT and ESRCH become ErrGone.
func (r *Reader) ReadFile(path string) ([]byte, error) { return r.read(path) }

func (r *Reader) read(path string) ([]byte, error) {
	var err error
	r.buf, err = ReadInto(path, r.buf[:0])
	return r.buf, err
}

// ReadInto appends the content of path to buf and returns it, with raw
// syscalls so a scan of thousands of small proc and cgroup files does not
// allocate a file object per read. ENOENT and ESRCH become ErrGone.
func ReadInto(path string, buf []byte) ([]byte, error) {
	fd, err := openRetry(path, unix.O_RDONLY|unix.O_CLOEXEC)
	return readOpened(fd, err, path, buf)
}

// readOpened reads the file an open returned (fd, err) to its end; path
// names it in errors.
func readOpened(fd int, err error, path string, buf []byte) ([]byte, error) {
	if err != nil {
		return buf, wrap("open", path, err)
	}
	defer unix.Close(fd)
	buf, err = readFD(fd, buf, false)
	if err != nil {
		return buf, wrap("read", path, err)
	}
	return buf, nil
}

// ReadIntoAtZ appends the content of z (a NUL-terminated path relative to
// the open directory dir) to buf, without allocating. Errors are the bare
// errno: the caller names the file.
func ReadIntoAtZ(dir int, z, buf []byte) ([]byte, error) {
	fd, err := openAtZ(dir, z)
	if err != nil {
		return buf, err
	}
	defer unix.Close(fd)
	return readFD(fd, buf, false)
}

// ReadIntoAt is ReadInto for rel under the open directory dir; path names
// the file in errors.
func ReadIntoAt(dir int, rel, path string, buf []byte) ([]byte, error) {
	fd, err := openAtRetry(dir, rel)
	return readOpened(fd, err, path, buf)
}

// readFD appends what fd holds to buf. With whole, a read that leaves room
// in the buffer ends it: for files the kernel generates whole on read.
func readFD(fd int, buf []byte, whole bool) ([]byte, error) {
	for {
		if cap(buf)-len(buf) < 512 {
			nb := make([]byte, len(buf), 2*cap(buf)+512)
			copy(nb, buf)
			buf = nb
		}
		room := cap(buf) - len(buf)
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return buf, err
		}
		buf = buf[:len(buf)+n]
		if n == 0 || whole && n < room {
			return buf, nil
		}
	}
}

func openRetry(path string, flags int) (int, error) {
	for {
		fd, err := unix.Open(path, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func openAtRetry(dir int, rel string) (int, error) {
	for {
		fd, err := unix.Openat(dir, rel, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func (r *Reader) readlinkAt(dir int, z []byte) ([]byte, error) {
	for {
		n, err := readlinkAtZ(dir, z, r.link[:cap(r.link)])
		if err != nil {
			return nil, err
		}
		if n < cap(r.link) {
			return r.link[:n], nil
		}
		r.link = make([]byte, 2*cap(r.link))
	}
}

func (r *Reader) readlink(path string) ([]byte, error) {
	for {
		n, err := unix.Readlink(path, r.link[:cap(r.link)])
		if err != nil {
			return nil, wrap("readlink", path, err)
		}
		if n < cap(r.link) {
			return r.link[:n], nil
		}
		r.link = make([]byte, 2*cap(r.link))
	}
}

func wrap(op, path string, err error) error {
	if err == unix.ENOENT || err == unix.ESRCH {
		return fmt.Errorf("%s %s: %w (%w)", op, path, ErrGone, err)
	}
	return fmt.Errorf("%s %s: %w", op, path, err)
}

// IsGone reports whether err means the process (or its proc entry) went
// away mid-scan.
func IsGone(err error) bool { return errors.Is(err, ErrGone) }

// IsDenied reports whether err means the entry exists but may not be read
// (EACCES/EPERM): a process protected from ptrace-mode reads, such as a
// sandbox's pid 1. Such processes are skipped and counted, not fatal.
func IsDenied(err error) bool { return errors.Is(err, fs.ErrPermission) }

// Readable reports, with an error naming the problem, whether Root/proc
// can be listed: one small read of its entries, not a whole listing.
func (fs FS) Readable() error {
	dir := fs.Dir()
	fd, err := openRetry(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	var buf [1024]byte
	for {
		_, err := unix.Getdents(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", dir, err)
		}
		return nil
	}
}

// PIDs appends the pids listed in Root/proc to dst. It reads directory
// entries with getdents into one buffer: on a cell this lists thousands of
// entries and the validator should not allocate a string for each.
func (fs FS) PIDs(dst []int) ([]int, error) {
	err := fs.list(func(_ uint64, name []byte) {
		if pid, ok := atoi(name); ok && pid > 0 {
			dst = append(dst, pid)
		}
	})
	return dst, err
}

// list calls fn with the inode and name of every entry of Root/proc.
func (fs FS) list(fn func(ino uint64, name []byte)) error {
	dir := fs.Dir()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", dir, err)
		}
		if n <= 0 {
			return nil
		}
		walkDirents(buf[:n], fn)
	}
}

// appendDirentNums appends the names that are decimal numbers of at least
// lo.
func appendDirentNums(dst []int, b []byte, lo int) []int {
	walkDirents(b, func(_ uint64, name []byte) {
		if n, ok := atoi(name); ok && n >= lo {
			dst = append(dst, n)
		}
	})
	return dst
}

// walkDirents calls fn for each linux_dirent64 record: ino u64, off u64,
// reclen u16, type u8, NUL-terminated name (little-endian on every target
// we build).
func walkDirents(b []byte, fn func(ino uint64, name []byte)) {
	for len(b) >= 19 {
		reclen := int(b[16]) | int(b[17])<<8
		if reclen < 19 || reclen > len(b) {
			break
		}
		name := b[19:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		var ino uint64
		for i := 7; i >= 0; i-- {
			ino = ino<<8 | uint64(b[i])
		}
		fn(ino, name)
		b = b[reclen:]
	}
}

// BootTime reads btime from Root/proc/stat.
func (fs FS) BootTime() (time.Time, error) {
	path := filepath.Join(fs.Dir(), "stat")
	b, err := ReadInto(path, make([]byte, 0, 8192))
	if err != nil {
		if IsGone(err) {
			// Not a process gone: the file every process start time is
			// measured from is missing (a --root tree without it).
			return time.Time{}, fmt.Errorf("read boot time: %s does not exist", path)
		}
		return time.Time{}, fmt.Errorf("read boot time: %w", err)
	}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			sec, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("parse btime in %s: %w", path, err)
			}
			return time.Unix(sec, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("no btime in %s", path)
}

// StartedAt converts a start time in clock ticks to wall time.
func StartedAt(boot time.Time, ticks uint64) time.Time {
	return boot.Add(time.Duration(ticks) * time.Second / UserHZ)
}

// atoi parses a non-negative decimal without allocating.
func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// Atoi parses a non-negative decimal (a pid in cgroup.procs) without
// allocating.
func Atoi(b []byte) (int, bool) { return atoi(b) }
