package procfs

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// FDLinks on the kernel's /proc lists every open fd of a process in order,
// with its link, when the fds take several getdents buffers (1,500 fds:
// about 36 KB of records against an 8 KB buffer), and reads nsfs links as
// the kernel writes them.
func TestFDLinksLive(t *testing.T) {
	opened := openDevNull(t, 1500)
	ns, err := unix.Open("/proc/self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(ns) })
	want, _ := os.Readlink("/proc/self/ns/net")
	r := New("/").NewReader()
	defer r.Close()
	got := map[int]string{}
	last := -1
	if err := r.FDLinks(os.Getpid(), func(fd int, l []byte) {
		if fd <= last {
			t.Errorf("fd %d after %d", fd, last)
		}
		last = fd
		got[fd] = string(l)
	}); err != nil {
		t.Fatal(err)
	}
	for _, fd := range opened {
		if got[fd] != "/dev/null" {
			t.Fatalf("fd %d: %q, want /dev/null (%d fds listed)", fd, got[fd], len(got))
		}
	}
	if got[ns] != want {
		t.Fatalf("fd %d: %q, want %q", ns, got[ns], want)
	}
	if err := r.FDLinks(1<<22+7, func(int, []byte) {}); err != unix.ENOENT {
		t.Fatalf("a pid that does not exist: %v, want ENOENT", err)
	}
}

// A signal that arrives while getdents fills the buffer ends the fill early
// (Linux's filldir64 stops at a pending signal once it has written an
// entry), so a short read is not the end of the directory. Go's scheduler
// sends itself SIGURG to preempt goroutines; here a goroutine sends it
// without pause while the fds are listed again and again: every listing
// must still see every fd.
func TestFDLinksUnderSignals(t *testing.T) {
	opened := openDevNull(t, 1500)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				unix.Kill(os.Getpid(), unix.SIGURG)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	r := New("/").NewReader()
	defer r.Close()
	for round := 0; round < 300; round++ {
		seen := 0
		if err := r.FDLinks(os.Getpid(), func(fd int, l []byte) {
			if fd >= opened[0] && fd <= opened[len(opened)-1] && string(l) == "/dev/null" {
				seen++
			}
		}); err != nil {
			t.Fatal(err)
		}
		if seen < len(opened) {
			t.Fatalf("round %d: %d of the %d fds opened on /dev/null listed", round, seen, len(opened))
		}
	}
}

// openDevNull opens n fds on /dev/null, closed when the test ends: more
// than one getdents buffer of fd names (1,500: about 36 KB of records
// against FDLinks' 8 KB).
func openDevNull(t *testing.T, n int) []int {
	var opened []int
	t.Cleanup(func() {
		for _, fd := range opened {
			unix.Close(fd)
		}
	})
	for i := 0; i < n; i++ {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Skipf("open fd %d: %v (RLIMIT_NOFILE?)", i, err)
		}
		opened = append(opened, fd)
	}
	return opened
}
