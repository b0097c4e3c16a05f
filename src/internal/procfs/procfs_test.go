package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseStat(t *testing.T) {
	tail := " S 1 100 100 0 -1 4194560 200 0 0 0 3 4 0 0 20 0 1 0 32530 1000 10 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	testCases := []struct {
		name, in string
		comm     string
		start    uint64
		wantErr  bool
	}{
		{name: "plain", in: "9026 (sleep)" + tail, comm: "sleep", start: 32530},
		{name: "runc init stage name", in: "14863 (runc:[2:INIT])" + tail, comm: "runc:[2:INIT]", start: 32530},
		{name: "comm with spaces and parens", in: "7 (a) (b) c)" + tail, comm: "a) (b) c", start: 32530},
		{name: "empty comm", in: "7 ()" + tail, comm: "", start: 32530},
		{name: "truncated", in: "7 (x) S 1 2 3", wantErr: true},
		{name: "no comm", in: "7 x S 1", wantErr: true},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			st, err := ParseStat([]byte(tc.in))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("want error, got %+v", st)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.Comm != tc.comm || st.StartTime != tc.start || st.State != 'S' || st.PPID != 1 {
				t.Fatalf("got %+v", st)
			}
		})
	}
}

func TestLiveSelf(t *testing.T) {
	fs := New("/")
	r := fs.NewReader()
	self := os.Getpid()
	st, err := r.Stat(self)
	if err != nil {
		t.Fatal(err)
	}
	if st.PID != self || st.StartTime == 0 {
		t.Fatalf("stat of self: %+v", st)
	}
	ns, err := r.PidNS(self)
	if err != nil || ns == 0 {
		t.Fatalf("pid ns of self: %d, %v", ns, err)
	}
	var fi syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/pid", &fi); err != nil {
		t.Fatal(err)
	}
	if fi.Ino != ns {
		t.Fatalf("pid ns inode %d, stat says %d", ns, fi.Ino)
	}
	pids, err := fs.PIDs(nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range pids {
		found = found || p == self
	}
	if !found || len(pids) < 2 {
		t.Fatalf("PIDs() = %d pids, self listed: %v", len(pids), found)
	}
	args, err := r.Cmdline(self)
	if err != nil || len(args) == 0 {
		t.Fatalf("cmdline: %q %v", args, err)
	}
	boot, err := fs.BootTime()
	if err != nil || boot.IsZero() {
		t.Fatalf("boot time: %v %v", boot, err)
	}
}

func TestGoneProcessIsErrGone(t *testing.T) {
	root := t.TempDir()
	r := New(root).NewReader()
	if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() error{
		"stat":    func() error { _, err := r.Stat(42); return err },
		"cgroup":  func() error { _, err := r.Cgroup(42); return err },
		"cmdline": func() error { _, err := r.Cmdline(42); return err },
		"pidns":   func() error { _, err := r.PidNS(42); return err },
	} {
		if err := f(); !IsGone(err) {
			t.Errorf("%s of a missing pid: %v, want ErrGone", name, err)
		}
	}
}

func TestPIDsFromFixtureSkipsNonPids(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"1", "42", "self", "sys", "4194304", "net"} {
		if err := os.MkdirAll(filepath.Join(root, "proc", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pids, err := New(root).PIDs(nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]bool{}
	for _, p := range pids {
		got[p] = true
	}
	if len(pids) != 3 || !got[1] || !got[42] || !got[4194304] {
		t.Fatalf("PIDs() = %v", pids)
	}
}

func TestReadIntoGrowsPastBuffer(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	data := make([]byte, 10000)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadInto(p, make([]byte, 0, 16))
	if err != nil || string(got) != string(data) {
		t.Fatalf("ReadInto: %d bytes, %v", len(got), err)
	}
}

func TestPipeCapacity(t *testing.T) {
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	defer wr.Close()
	// What a user over fs.pipe-user-pages-soft gets: one page.
	if _, err := unix.FcntlInt(wr.Fd(), unix.F_SETPIPE_SZ, os.Getpagesize()); err != nil {
		t.Fatal(err)
	}
	fs := New("/")
	for _, f := range []*os.File{rd, wr} {
		n, err := PipeCapacity(fs, os.Getpid(), int(f.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		if n != os.Getpagesize() {
			t.Fatalf("capacity %d, want %d", n, os.Getpagesize())
		}
	}
	// The write end must still work: we only looked.
	if _, err := wr.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
}

// A named FIFO is never opened for reading: that would release a runc init
// blocked opening exec.fifo for writing, i.e. start the container.
func TestPipeCapacityRefusesNamedFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "exec.fifo")
	if err := unix.Mkfifo(fifo, 0o622); err != nil {
		t.Fatal(err)
	}
	pfd, err := unix.Open(fifo, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pfd)
	// A writer waiting as runc init does; it must stay blocked.
	opened := make(chan error, 1)
	go func() {
		fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		opened <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the writer block in open(2)
	_, err = PipeCapacity(New("/"), os.Getpid(), pfd)
	if !errors.Is(err, ErrNotPipe) {
		t.Fatalf("PipeCapacity(named fifo) = %v, want ErrNotPipe", err)
	}
	select {
	case err := <-opened:
		t.Fatalf("the blocked writer was released (err=%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	// Release the writer ourselves so the goroutine ends.
	rfd, err := unix.Open(fifo, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	<-opened
	unix.Close(rfd)
}

// A pinned /proc/<pid> reads that process, and ErrGone once it is reaped,
// never whatever process gets the pid next.
func TestPinnedReadsOneProcess(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fs := New("/")
	p, err := fs.Pin(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r := fs.NewReader()
	st, err := r.PinnedStat(p)
	if err != nil || st.PID != cmd.Process.Pid || st.Comm != "sleep" {
		t.Fatalf("stat %+v, %v", st, err)
	}
	if b, err := r.PinnedCgroup(p); err != nil || len(b) == 0 {
		t.Fatalf("cgroup %q, %v", b, err)
	}
	want, err := r.PidNS(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if ns, err := r.PinnedPidNS(p); err != nil || ns != want {
		t.Fatalf("pid ns %d, %v; want %d", ns, err, want)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if _, err := r.PinnedStat(p); !IsGone(err) {
		t.Fatalf("stat after reap: %v, want ErrGone", err)
	}
	if _, err := r.PinnedCgroup(p); !IsGone(err) {
		t.Fatalf("cgroup after reap: %v, want ErrGone", err)
	}
	if _, err := r.PinnedPidNS(p); !IsGone(err) {
		t.Fatalf("pid ns after reap: %v, want ErrGone", err)
	}
	if _, err := fs.Pin(cmd.Process.Pid); !IsGone(err) {
		t.Fatalf("pin after reap: %v, want ErrGone", err)
	}
}

// TestReaderReadsLargeFilesWhole: a per-process file that fills the read
// buffer is read on until EOF, though a read that leaves room ends it.
func TestReaderReadsLargeFilesWhole(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "proc", "42")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i := 0; len(want) < 3*4096+17; i++ {
		want = append(want, fmt.Sprintf("%d:name=h%d:/garden/c%d\n", i+1, i, i)...)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup"), want, 0o644); err != nil {
		t.Fatal(err)
	}
	r := New(root).NewReader()
	defer r.Close()
	for range 2 { // the second read reuses the grown buffer
		got, err := r.Cgroup(42)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("read %d bytes, want %d", len(got), len(want))
		}
	}
	if _, err := r.Cgroup(43); !IsGone(err) {
		t.Fatalf("missing pid: err %v, want ErrGone", err)
	}
}

// TestReaderStatAllocatesNothing: a scan reads thousands of stat files; a
// warm Reader does it without allocating (names interned, paths as bytes).
func TestReaderStatAllocatesNothing(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "proc", "7")
	if err := os.MkdirAll(filepath.Join(dir, "ns"), 0o755); err != nil {
		t.Fatal(err)
	}
	line := "7 (garden-init) S 1 7 7 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 4242 1 1 1\n"
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("pid:[4026531836]", filepath.Join(dir, "ns", "pid")); err != nil {
		t.Fatal(err)
	}
	r := New(root).NewReader()
	defer r.Close()
	var st Stat
	var ns uint64
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if st, err = r.Stat(7); err != nil {
			t.Fatal(err)
		}
		if ns, err = r.PidNS(7); err != nil {
			t.Fatal(err)
		}
	})
	if st.Comm != "garden-init" || st.StartTime != 4242 || ns != 4026531836 {
		t.Fatalf("read %+v, ns %d", st, ns)
	}
	if allocs != 0 {
		t.Fatalf("%v allocations per Stat+PidNS, want 0", allocs)
	}
}

func TestReadable(t *testing.T) {
	root := t.TempDir()
	if err := New(root).Readable(); err == nil {
		t.Fatal("Readable without a proc directory")
	}
	if err := os.MkdirAll(filepath.Join(root, "proc", "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := New(root).Readable(); err != nil {
		t.Fatal(err)
	}
	// A tree without proc/stat: the boot time names the file, not
	// "process is gone".
	_, err := New(root).BootTime()
	want := filepath.Join(root, "proc", "stat") + " does not exist"
	if err == nil || !strings.Contains(err.Error(), want) || IsGone(err) {
		t.Fatalf("BootTime without proc/stat: %v, want %q", err, want)
	}
	if err := os.WriteFile(filepath.Join(root, "proc", "stat"), []byte("cpu 0\nbtime 1764568800\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(root).BootTime(); err != nil {
		t.Fatal(err)
	}
}
