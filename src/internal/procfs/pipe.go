package procfs

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// ErrNotPipe means the descriptor is not an anonymous pipe.
var ErrNotPipe = errors.New("procfs: not an anonymous pipe")

// pipefsMagic is PIPEFS_MAGIC: anonymous pipes live on pipefs, named FIFOs
// on the filesystem that holds them.
const pipefsMagic = 0x50495045

// PipeCapacity returns the capacity in bytes (F_GETPIPE_SZ) of the pipe
// behind /proc/<pid>/fd/<fd>.
//
// It must never disturb the process. Opening a FIFO's read side wakes a
// writer blocked in open(2): runc init waits exactly so on exec.fifo, and a
// stray open would start the container. So the descriptor is first opened
// O_PATH (which opens nothing), checked to be an anonymous pipe on pipefs,
// and only then reopened O_RDONLY|O_NONBLOCK through our own O_PATH
// descriptor, so a fd number reused meanwhile cannot swap the file.
func PipeCapacity(fs FS, pid, fd int) (int, error) {
	path := fs.Path(pid, "fd/"+strconv.Itoa(fd))
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, wrap("open", path, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return 0, wrap("stat", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return 0, fmt.Errorf("%s: %w", path, ErrNotPipe)
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(pfd, &sfs); err != nil {
		return 0, wrap("statfs", path, err)
	}
	if sfs.Type != pipefsMagic {
		return 0, fmt.Errorf("%s: %w", path, ErrNotPipe)
	}
	rfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("reopen %s: %w", path, err)
	}
	defer unix.Close(rfd)
	n, err := unix.FcntlInt(uintptr(rfd), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		return 0, fmt.Errorf("F_GETPIPE_SZ %s: %w", path, err)
	}
	return n, nil
}
