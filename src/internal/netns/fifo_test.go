package netns_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cloudfoundry/cellguard/src/internal/netns"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// holding starts `sleep` holding f as its fd 3 and ends it when the test
// does.
func holding(t *testing.T, f *os.File) int {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	cmd.ExtraFiles = []*os.File{f}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// Issue 38, hole 8: a tenant swaps a FIFO with no writer in at the fd
// number a scan read as net:[N]. Inspecting it must neither block (a
// blocking open of a FIFO waits for a writer for ever: leaked-netns, and
// with it every later scan of watch, hung in wait_for_partner) nor take it
// for a namespace, whatever inode the scan expected; a real nsfs file
// held the same way is still read.
func TestInspectNeverOpensAFIFO(t *testing.T) {
	testkit.RequireRoot(t, "leaked-netns inspects other processes' files as root")
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	pid := holding(t, r)
	r.Close()
	var st unix.Stat_t
	if err := unix.Stat(fifo, &st); err != nil {
		t.Fatal(err)
	}
	for _, expect := range []uint64{st.Ino, 4026531840} {
		done := make(chan error, 1)
		go func() {
			_, err := netns.Live{}.Inspect(netns.Holder{PID: pid, Comm: "sleep", FD: 3, Kind: "nsfs"}, expect)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("Inspect read pid %d's fd 3, a FIFO, as net:[%d]", pid, expect)
			}
			t.Logf("expecting net:[%d]: %v", expect, err)
		case <-time.After(5 * time.Second):
			// Free the blocked open(2) (a writer arrives), so the test
			// leaves no thread behind, then fail.
			if w, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
				unix.Close(w)
			}
			<-done
			t.Fatalf("Inspect of pid %d's fd 3 (a FIFO with no writer) still blocked after 5s: it opened another process's fd blocking", pid)
		}
	}

	// A namespace file held the same way is read: ours, so entering it
	// changes nothing.
	ns, err := os.Open("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	if err := unix.Fstat(int(ns.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	holder := holding(t, ns)
	ifs, err := netns.Live{}.Inspect(netns.Holder{PID: holder, Comm: "sleep", FD: 3, Kind: "nsfs"}, st.Ino)
	if err != nil {
		t.Fatalf("Inspect of a real nsfs file: %v", err)
	}
	var names []string
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	if !slices.Contains(names, "lo") {
		t.Errorf("interfaces of our own namespace through pid %d's fd 3: %s", holder, strings.Join(names, " "))
	}
}
