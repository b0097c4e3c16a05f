package daemonctl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cloudfoundry/cellguard/src/internal/procfs"
)

// errGone means no live process holds the pid any more.
var errGone = errors.New("no such process")

// proc is a process held by a pidfd: a signal or a wait reaches the
// process the pidfd was opened for, never another that reuses its pid.
type proc struct {
	pid int
	// fd is the pidfd; -1 on kernels without pidfd_open (before 5.3),
	// where signals go by pid right after the identity check.
	fd int
	// start is /proc/<pid>/stat's field 22, read while the pidfd held
	// the process: its start in clock ticks after boot.
	start uint64
}

// openProc opens a pidfd for pid in our pid namespace, then reads the
// start time of the process in /proc, then asks the pidfd whether its
// process still lives: if it does, the pid was not reused in between, so
// the start time read is the pidfd's process's. errGone when it is gone
// or a zombie.
func openProc(pid int) (*proc, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return nil, errGone
	case errors.Is(err, unix.ENOSYS):
		fd = -1
	case err != nil:
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	p := &proc{pid: pid, fd: fd}
	st, err := readStat(pid)
	if err == nil {
		err = p.signal(0)
	}
	if err != nil {
		p.close()
		return nil, err
	}
	p.start = st.StartTime
	return p, nil
}

// readStat reads /proc/<pid>/stat on the live root; errGone for a pid no
// live process holds.
func readStat(pid int) (procfs.Stat, error) {
	r := procfs.New("/").NewReader()
	defer r.Close()
	st, err := r.Stat(pid)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) || err == nil && (st.State == 'Z' || st.State == 'X') {
		return st, errGone
	}
	return st, err
}

func (p *proc) close() {
	if p != nil && p.fd >= 0 {
		_ = unix.Close(p.fd)
		p.fd = -1
	}
}

// signal sends sig (0 asks whether it lives) through the pidfd.
func (p *proc) signal(sig syscall.Signal) error {
	var err error
	if p.fd >= 0 {
		err = unix.PidfdSendSignal(p.fd, sig, nil, 0)
	} else {
		err = unix.Kill(p.pid, sig)
	}
	if errors.Is(err, unix.ESRCH) {
		return errGone
	}
	if err != nil {
		return fmt.Errorf("signal pid %d: %w", p.pid, err)
	}
	return nil
}

// exited reports whether the process has exited: its pidfd polls
// readable from then on, zombie or reaped. Without a pidfd, its pid is
// gone, a zombie's, or another process's (another start time).
func (p *proc) exited() bool {
	if p.fd < 0 {
		st, err := readStat(p.pid)
		return errors.Is(err, errGone) || err == nil && st.StartTime != p.start
	}
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// wait waits until the process has exited, or ctx ends.
func (p *proc) wait(ctx context.Context) error {
	var wait backoff
	for !p.exited() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("process %d still running (%w)", p.pid, ctx.Err())
		case <-time.After(wait.next()):
		}
	}
	return nil
}

// userHZ is the unit of /proc/<pid>/stat's times: USER_HZ, 100 on every
// Linux architecture (times(2)).
const userHZ = 100

// bootTicks is now in the unit and clock of /proc/<pid>/stat's start
// time (CLOCK_BOOTTIME, truncated to ticks as the kernel does): a process
// started later has a start time at or above it.
func bootTicks() (uint64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, fmt.Errorf("read CLOCK_BOOTTIME: %w", err)
	}
	return uint64(ts.Nano()) / (1e9 / userHZ), nil
}
