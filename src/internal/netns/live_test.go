package netns_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/netns"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/leakyns"
)

func TestMain(m *testing.M) {
	leakyns.Main() // returns unless this process is a helper
	os.Exit(m.Run())
}

// paths are the two ways a scan lists open files; each live test runs on
// both, and fails (never falls back) when the iterator cannot run.
var paths = []struct {
	name  string
	files netns.FileSource
	via   string
}{
	{"fd-walk", nil, netns.ViaFDWalk},
	{"bpf-iterator", netns.TaskFiles{}, netns.ViaIterator},
}

// findLeak scans the live host, listing open files with files, and
// returns the leak of namespace ino.
func findLeak(t *testing.T, ino uint64, files netns.FileSource, via string) (*netns.Leak, netns.Result) {
	t.Helper()
	res, err := (&netns.Scanner{Root: "/", Probe: netns.Live{}, Files: files, Confirm: 100 * time.Millisecond}).Scan()
	if err != nil {
		t.Fatal(err)
	}
	if res.Via != via {
		t.Fatalf("open files listed by %q (%v), want %q", res.Via, res.IterErr, via)
	}
	for i := range res.Leaks {
		if res.Leaks[i].Inode == ino {
			return &res.Leaks[i], res
		}
	}
	return nil, res
}

// seed 003 on the real kernel: a namespace that a helper process made,
// put a dummy interface with an address in, opened a netlink socket in and
// left is found, held by that helper's pid and fd, with the interface and
// address still in it. The negative cases, a namespace with a process in
// it and one bind-mounted (in a private mount namespace), are not leaks.
func TestLiveLeakHeldOnlyBySocket(t *testing.T) {
	testkit.RequireRoot(t, "pidfd_getfd, setns and a new network namespace")
	h := leakyns.Start(t, leakyns.Socket, 0)
	inProc := leakyns.Start(t, leakyns.SocketAndProcess, 0)
	mounted := leakyns.Start(t, leakyns.SocketAndMount, 0)
	own, err := os.Readlink("/proc/" + itoa(h.PID) + "/ns/net")
	if err != nil || own == "net:["+utoa(h.Inode)+"]" {
		t.Fatalf("the helper itself is in %s (%v); it should have left net:[%d]", own, err, h.Inode)
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) { leakHeldOnlyBySocket(t, h, inProc, mounted, p.files, p.via) })
	}
}

func leakHeldOnlyBySocket(t *testing.T, h, inProc, mounted *leakyns.Helper, files netns.FileSource, via string) {
	leak, res := findLeak(t, h.Inode, files, via)
	if leak == nil {
		t.Fatalf("net:[%d] held by pid %d fd %d not reported; leaks %+v", h.Inode, h.PID, h.FD, res.Leaks)
	}
	if !slices.Contains(leak.Holders, netns.Holder{PID: h.PID, Comm: "netns.test", FD: h.FD, Kind: "socket"}) {
		t.Errorf("holders %+v, want pid %d fd %d", leak.Holders, h.PID, h.FD)
	}
	var names, addrs []string
	for _, i := range leak.Interfaces {
		names = append(names, i.Name)
		addrs = append(addrs, i.Addrs...)
	}
	if !slices.Contains(names, "leak0") || !slices.Contains(addrs, leakyns.Addr) || leak.InspectErr != "" {
		t.Errorf("interfaces %+v (%s), want leak0 with %s", leak.Interfaces, leak.InspectErr, leakyns.Addr)
	}
	t.Logf("reported: net:[%d] held by %+v; interfaces %+v; scanned %d processes, %d sockets, %d unresolved",
		leak.Inode, leak.Holders, leak.Interfaces, res.Processes, res.Sockets, res.Unresolved)
	for _, neg := range []*leakyns.Helper{inProc, mounted} {
		for _, l := range res.Leaks {
			if l.Inode == neg.Inode {
				t.Errorf("net:[%d] of helper %d is reported, but a process is in it or a mount names it: %+v", neg.Inode, neg.PID, l)
			}
		}
	}
	// Reading it changed nothing: the helper still holds the socket, and
	// the namespace still has its address.
	if l, _ := findLeak(t, h.Inode, files, via); l == nil || !strings.Contains(strings.Join(flatAddrs(l), " "), leakyns.Addr) {
		t.Fatalf("second scan: %+v", l)
	}
}

func flatAddrs(l *netns.Leak) []string {
	var out []string
	for _, i := range l.Interfaces {
		out = append(out, i.Addrs...)
	}
	return out
}

// asking counts the sockets the live probe was asked about one by one.
type asking struct {
	netns.Live
	asked int
}

func (a *asking) SocketNS(pid, fd int, sock uint64) (uint64, error) {
	a.asked++
	return a.Live.SocketNS(pid, fd, sock)
}

// The kernel's socket tables settle the sockets of the namespaces
// processes are in: of 500 extra sockets in the helper's own namespace,
// none is asked one by one, and the socket that alone holds a namespace
// still is, and its leak is found.
func TestLiveTablesSettleSocketsInKnownNamespaces(t *testing.T) {
	testkit.RequireRoot(t, "pidfd_getfd, setns and a new network namespace")
	leakyns.Start(t, leakyns.Sockets, 500)
	h := leakyns.Start(t, leakyns.Socket, 0)
	p := &asking{}
	res, err := (&netns.Scanner{Root: "/", Probe: p}).Scan()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range res.Leaks {
		found = found || l.Inode == h.Inode
	}
	if !found || res.Sockets < 500 || p.asked >= 100 {
		t.Fatalf("leak net:[%d] found %v; %d sockets, %d asked one by one (want the leak found, under 100 asked); leaks %+v",
			h.Inode, found, res.Sockets, p.asked, res.Leaks)
	}
	t.Logf("%d sockets, %d asked one by one, %d unresolved", res.Sockets, p.asked, res.Unresolved)
}
