// Package leakyns is test-only: helper processes that leave a network
// namespace behind the way seed 003's monitoring agent did (a socket made
// inside it, then the thread went back), and the negative cases. The
// helper is the test binary itself: a test package calls Main from its
// TestMain, and Start runs the binary again in helper mode. Every helper
// is its own process group, ended by its pid when the test ends.
package leakyns

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Mode is what the helper leaves.
type Mode string

const (
	// Socket: a namespace with an interface (a veth, whose peer stays in
	// it too: the dummy and ipvlan modules may not be loadable) and an
	// address, held only by a netlink socket the helper made inside it
	// (the leak).
	Socket Mode = "socket"
	// SocketAndProcess: the same, but a child process stays in it.
	SocketAndProcess Mode = "socket+process"
	// SocketAndMount: the same, but a child bind-mounts it in a private
	// mount namespace (as `ip netns add` does in the host's).
	SocketAndMount Mode = "socket+mount"
	// Sockets: no namespace; N sockets (HELPER_SOCKETS) in the helper's
	// own namespace, the load of a busy cell for benchmarks.
	Sockets Mode = "sockets"
	// Sending: the helper runs in a network namespace of its own (nothing
	// it sends reaches the host's) and holds two UDP sockets that each
	// send a datagram to 127.0.0.1:9 every 20 ms: one made in a namespace
	// it left (which the tables of its own namespace do not list, so a
	// scan must ask it one by one) and an ordinary one in its own. It also
	// keeps an nsfs file of the left namespace (Helper.NSFD), so a test
	// can count, from inside, whose packets leave there.
	Sending Mode = "sending"
)

// sendEvery is how often a Sending helper's sockets send.
const sendEvery = 20 * time.Millisecond

const envMode = "CELLGUARD_LEAKYNS_MODE"

// envComm, when set, is the comm the helper gives itself (as a tenant's
// process may: any bytes but NUL, 15 at most), before it makes anything.
const envComm = "CELLGUARD_LEAKYNS_COMM"

// Addr is the address leak0 gets.
const Addr = "10.203.0.7/24"

// Helper is a running helper process.
type Helper struct {
	PID   int
	Inode uint64 // the namespace it made (0 for Sockets)
	FD    int    // the fd of the socket inside it
	// NSFD is Sending's fd of the nsfs file of the namespace it made.
	NSFD int
	cmd  *exec.Cmd
}

// Main runs the helper when this process is one; call it first in
// TestMain.
func Main() {
	mode := Mode(os.Getenv(envMode))
	if mode == "" {
		return
	}
	if comm := os.Getenv(envComm); comm != "" {
		// A thread may write its own thread group's comm: the leader's,
		// which /proc/PID/stat shows.
		if err := os.WriteFile("/proc/self/comm", []byte(comm), 0); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
	}
	if err := helper(mode); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Start runs a helper in mode and waits until it has made its namespace.
// n is the number of sockets for Sockets. It is ended (its whole process
// group, by its pid) when the test ends.
func Start(tb testing.TB, mode Mode, n int) *Helper {
	tb.Helper()
	return StartNamed(tb, mode, n, "")
}

// StartNamed is Start with a helper that names itself comm (the kernel's
// comm of its main thread, written through /proc/self/comm) first.
func StartNamed(tb testing.TB, mode Mode, n int, comm string) *Helper {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envMode+"="+string(mode), "HELPER_SOCKETS="+strconv.Itoa(n))
	if comm != "" {
		cmd.Env = append(cmd.Env, envComm+"="+comm)
	}
	// No Pdeathsig: it fires when the forking thread exits, and a test
	// that inspects a namespace ends locked threads. A test killed before
	// its cleanup closes the helper's stdin, which ends the helper, whose
	// children die with it (their Pdeathsig, from threads that live on).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if mode == Sending {
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWNET
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdin, err := cmd.StdinPipe() // EOF ends the helper
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	h := &Helper{PID: cmd.Process.Pid, cmd: cmd}
	tb.Cleanup(func() {
		stdin.Close()
		_ = syscall.Kill(-h.PID, syscall.SIGKILL) // its group: the helper and its children
		_ = cmd.Wait()
	})
	line, err := readLine(out, 30*time.Second)
	if err != nil {
		tb.Fatalf("leakyns helper %s: %v", mode, err)
	}
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "ready" {
		tb.Fatalf("leakyns helper %s: %q", mode, line)
	}
	h.Inode, _ = strconv.ParseUint(f[1], 10, 64)
	h.FD, _ = strconv.Atoi(f[2])
	h.NSFD, _ = strconv.Atoi(f[3])
	return h
}

func readLine(r interface{ Read([]byte) (int, error) }, timeout time.Duration) (string, error) {
	type res struct {
		s   string
		err error
	}
	c := make(chan res, 1)
	go func() {
		s, err := bufio.NewReader(r).ReadString('\n')
		c <- res{strings.TrimSpace(s), err}
	}()
	select {
	case r := <-c:
		return r.s, r.err
	case <-time.After(timeout):
		return "", fmt.Errorf("no answer in %v", timeout)
	}
}

func helper(mode Mode) error {
	if mode == Sockets {
		n, _ := strconv.Atoi(os.Getenv("HELPER_SOCKETS"))
		for i := 0; i < n; i++ {
			if _, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
				return fmt.Errorf("socket %d: %w", i, err)
			}
		}
		fmt.Println("ready 0 0 0")
		_, _ = os.Stdin.Read(make([]byte, 1))
		return nil
	}
	type made struct {
		ino   uint64
		sock  int
		nsfd  int
		child *exec.Cmd
		err   error
	}
	c := make(chan made, 1)
	go func() {
		// This thread goes into the new namespace and back, as the
		// agent's did; it is locked for good, and never exits, so the
		// runtime never reuses it and its children's Pdeathsig holds.
		runtime.LockOSThread()
		var m made
		defer func() { c <- m; select {} }()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			m.err = err
			return
		}
		defer unix.Close(orig)
		if m.err = unix.Unshare(unix.CLONE_NEWNET); m.err != nil {
			return
		}
		// Children forked from this thread start in its namespace.
		for _, args := range [][]string{
			{"ip", "link", "add", "leak0", "type", "veth", "peer", "name", "leak1"},
			{"ip", "addr", "add", Addr, "dev", "leak0"},
			{"ip", "link", "set", "leak0", "up"},
		} {
			if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
				m.err = fmt.Errorf("%v: %v: %s", args, err, out)
				return
			}
		}
		if mode == Sending {
			if m.err = lo(); m.err != nil {
				return
			}
			m.sock, m.err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		} else {
			m.sock, m.err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)
		}
		if m.err != nil {
			return
		}
		var st unix.Stat_t
		if m.err = unix.Stat("/proc/thread-self/ns/net", &st); m.err != nil {
			return
		}
		m.ino = st.Ino
		switch mode {
		case SocketAndProcess:
			m.child = exec.Command("sleep", "1000000")
			m.child.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if m.err = m.child.Start(); m.err != nil {
				return
			}
		case SocketAndMount, Sending:
			if m.nsfd, m.err = unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY, 0); m.err != nil {
				return
			}
		}
		m.err = unix.Setns(orig, unix.CLONE_NEWNET)
	}()
	m := <-c
	if m.err != nil {
		return m.err
	}
	if mode == SocketAndMount {
		// A child in the host's namespace that bind-mounts the namespace
		// in a mount namespace of its own: nothing changes on the host.
		f, err := os.CreateTemp("", "leakyns-")
		if err != nil {
			return err
		}
		f.Close()
		defer os.Remove(f.Name())
		script := fmt.Sprintf("mount --bind /proc/%d/fd/%d %s && echo mounted && exec sleep 1000000", os.Getpid(), m.nsfd, f.Name())
		child := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script)
		child.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		out, err := child.StdoutPipe()
		if err != nil {
			return err
		}
		if err := child.Start(); err != nil {
			return err
		}
		if line, err := readLine(out, 10*time.Second); err != nil || line != "mounted" {
			return fmt.Errorf("bind mount: %q %v", line, err)
		}
		unix.Close(m.nsfd) // now only the socket and the mount hold it
		m.nsfd = 0
	}
	if mode == Sending {
		if err := send(m.sock); err != nil {
			return err
		}
	}
	fmt.Printf("ready %d %d %d\n", m.ino, m.sock, m.nsfd)
	_, _ = os.Stdin.Read(make([]byte, 1))
	return nil
}

// lo brings up the loopback interface of the calling thread's namespace
// (a new namespace's is down).
func lo() error {
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return fmt.Errorf("ip link set lo up: %v: %s", err, out)
	}
	return nil
}

// send brings up the helper's own loopback, makes the ordinary socket and
// has it and leaked send to 127.0.0.1:9 every sendEvery. Nothing listens
// there, and an unconnected socket is told nothing of the ICMP answer, so
// every send leaves through OUTPUT.
func send(leaked int) error {
	if err := lo(); err != nil {
		return err
	}
	own, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	to := &unix.SockaddrInet4{Port: 9, Addr: [4]byte{127, 0, 0, 1}}
	go func() {
		for range time.Tick(sendEvery) {
			_ = unix.Sendto(leaked, []byte("leaked"), 0, to)
			_ = unix.Sendto(own, []byte("own"), 0, to)
		}
	}()
	return nil
}
