package netns

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/cloudfoundry/cellguard/src/internal/procfs"
)

// Live is the probe of the live host: pidfd_getfd(2) and SIOCGSKNS, and
// interfaces read from inside the namespace. It needs root
// (PTRACE_MODE_ATTACH over the holder, CAP_NET_ADMIN for SIOCGSKNS).
type Live struct{}

var _ Probe = Live{}

// SocketNS duplicates pid's fd (the holder keeps its own descriptor and
// is not stopped), checks it is still socket sock, asks its namespace and
// closes every descriptor it opened.
func (Live) SocketNS(pid, fd int, sock uint64) (uint64, error) {
	nsfd, err := socketNSFD(pid, fd, sock)
	if err != nil {
		return 0, err
	}
	defer unix.Close(nsfd)
	var st unix.Stat_t
	if err := unix.Fstat(nsfd, &st); err != nil {
		return 0, fmt.Errorf("stat namespace of socket %d: %w", sock, err)
	}
	return st.Ino, nil
}

// socketNSFD returns an nsfs descriptor of the namespace of socket sock
// (0: whichever socket it is now), pid's fd. The duplicate it asks is
// received as the holder (keepingTags) and closed before it returns.
func socketNSFD(pid, fd int, sock uint64) (int, error) {
	return keepingTags(pid, fd, func(dup int) (int, error) {
		var st unix.Stat_t
		if err := unix.Fstat(dup, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK || (sock != 0 && st.Ino != sock) {
			// The fd was closed and reused since /proc was read.
			return -1, fmt.Errorf("fd %d of pid %d is no longer socket %d", fd, pid, sock)
		}
		nsfd, err := unix.IoctlRetInt(dup, unix.SIOCGSKNS)
		if err != nil {
			return -1, fmt.Errorf("%w: SIOCGSKNS on fd %d of pid %d: %w", ErrProbe, fd, pid, err)
		}
		return nsfd, nil
	})
}

// getfd duplicates pid's fd through a pidfd, once ready (given the pidfd's
// process, so that what it reads of pid is that process's) says yes; only
// receiveAsHolder calls it. A pid reused since /proc was read gives the
// new process's fd, which the caller's inode check refuses; an exited one
// gives ESRCH.
func getfd(pid, fd int, ready func() error) (int, error) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if err == unix.ESRCH {
			return -1, fmt.Errorf("pid %d exited", pid)
		}
		return -1, fmt.Errorf("%w: pidfd_open %d: %w", ErrProbe, pid, err)
	}
	defer unix.Close(pidfd)
	if err := ready(); err != nil {
		return -1, err
	}
	dup, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		if err == unix.EBADF || err == unix.ESRCH {
			return -1, fmt.Errorf("fd %d of pid %d closed", fd, pid)
		}
		return -1, fmt.Errorf("%w: pidfd_getfd %d of pid %d: %w", ErrProbe, fd, pid, err)
	}
	return dup, nil
}

// Inspect reads the interfaces and addresses of the namespace h holds,
// from a locked thread that enters it and returns to its own namespace
// before it is unlocked, so no other code of this process ever runs
// there. Reading changes nothing in the namespace.
func (Live) Inspect(h Holder, inode uint64) ([]Interface, error) {
	var nsfd int
	var err error
	if h.Kind == "socket" {
		nsfd, err = socketNSFD(h.PID, h.FD, 0)
	} else {
		nsfd, err = openNSFile(h.PID, h.FD, inode)
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(nsfd)
	var st unix.Stat_t
	if err := unix.Fstat(nsfd, &st); err != nil || st.Ino != inode {
		return nil, fmt.Errorf("the file of pid %d fd %d no longer holds net:[%d]", h.PID, h.FD, inode)
	}
	var ifs []Interface
	err = inNS(nsfd, inode, func() error {
		var err error
		ifs, err = interfaces()
		return err
	})
	return ifs, err
}

// openNSFile opens pid's fd, which the scan read as net:[inode], for
// setns(2). The holder may have put any file at that number since (a FIFO
// with no writer would block a plain open for ever), so the fd is opened
// O_PATH, which opens nothing and never blocks, and is reopened for
// reading through our own descriptor only once it is an nsfs file with
// that inode: the reopen reaches the inode checked, not the holder's fd
// table again.
func openNSFile(pid, fd int, inode uint64) (int, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(fd)
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	var sfs unix.Statfs_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return -1, fmt.Errorf("stat %s: %w", path, err)
	}
	if err := unix.Fstatfs(pfd, &sfs); err != nil {
		return -1, fmt.Errorf("statfs %s: %w", path, err)
	}
	if sfs.Type != nsfsMagic || st.Ino != inode {
		return -1, fmt.Errorf("the file of pid %d fd %d no longer holds net:[%d]", pid, fd, inode)
	}
	nsfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("reopen %s: %w", path, err)
	}
	return nsfd, nil
}

// Sockets enters the namespace pid is in, once it has checked that it is
// ns, and reads the socket inodes its tables list from there: a file under
// /proc/<pid>/net belongs to whatever namespace pid is in when it is
// opened, and a holder may move between namespaces meanwhile (seed 003's
// agent did).
func (Live) Sockets(pid int, ns uint64) (map[uint64]bool, error) {
	nsfd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open network namespace of pid %d: %w", pid, err)
	}
	defer unix.Close(nsfd)
	var st unix.Stat_t
	if err := unix.Fstat(nsfd, &st); err != nil || st.Ino != ns {
		return nil, fmt.Errorf("pid %d is no longer in net:[%d]", pid, ns)
	}
	set := map[uint64]bool{}
	err = inNS(nsfd, ns, func() error {
		buf := make([]byte, 0, 64<<10)
		for i, t := range SocketTables {
			b, err := procfs.ReadInto("/proc/thread-self/net/"+t.Name, buf[:0])
			if err != nil {
				continue // a family not built into this kernel
			}
			AddTableSockets(set, i, b)
			buf = b
		}
		return nil
	})
	return set, err
}

// inNS runs fn on a locked OS thread that enters the namespace nsfd
// (inode) and returns to its own namespace before it is unlocked, so no
// other code of this process ever runs there.
func inNS(nsfd int, inode uint64, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("open own network namespace: %w", err)
			return
		}
		defer unix.Close(orig)
		if err := unix.Setns(nsfd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("enter net:[%d]: %w", inode, err)
			return
		}
		err = fn()
		// Back before the thread is handed back. Should that fail, it
		// stays locked: the runtime ends it with this goroutine (or, were
		// it the main thread, parks it for good), so no other code runs
		// in the namespace. Leaving a thread to end is not enough by
		// itself: the main thread is never ended, and /proc/<pid>/ns/net
		// is the main thread's.
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

// interfaces lists the current thread's namespace's interfaces over
// netlink (the standard library asks on the calling thread).
func interfaces() ([]Interface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	var out []Interface
	var errs []error
	for _, i := range ifs {
		x := Interface{Name: i.Name, Flags: i.Flags.String()}
		addrs, err := i.Addrs()
		if err != nil {
			errs = append(errs, fmt.Errorf("addresses of %s: %w", i.Name, err))
		}
		for _, a := range addrs {
			x.Addrs = append(x.Addrs, a.String())
		}
		out = append(out, x)
	}
	return out, errors.Join(errs...)
}
