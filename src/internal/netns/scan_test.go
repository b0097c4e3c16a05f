package netns

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

const hostNet = 4026531840

// fakeProbe resolves sockets from a table and lists fixed interfaces.
type fakeProbe struct {
	ns     map[uint64]uint64 // socket inode -> namespace
	asked  int
	refuse bool
	// tables are what each namespace's socket tables list; read counts
	// the namespaces whose tables were read.
	tables map[uint64][]uint64
	read   int
}

func (p *fakeProbe) Sockets(pid int, ns uint64) (map[uint64]bool, error) {
	p.read++
	set := map[uint64]bool{}
	for _, s := range p.tables[ns] {
		set[s] = true
	}
	return set, nil
}

func (p *fakeProbe) SocketNS(pid, fd int, sock uint64) (uint64, error) {
	p.asked++
	if p.refuse {
		return 0, fmt.Errorf("%w: pidfd_getfd: operation not permitted", ErrProbe)
	}
	ns, ok := p.ns[sock]
	if !ok {
		return 0, fmt.Errorf("fd %d of pid %d closed", fd, pid)
	}
	return ns, nil
}

func (p *fakeProbe) Inspect(h Holder, inode uint64) ([]Interface, error) {
	return []Interface{{Name: "ipvl0", Flags: "up|broadcast", Addrs: []string{"10.255.3.7/32"}}}, nil
}

// proc writes a process: its net and mnt namespaces, its fds, and an
// optional mountinfo and extra thread namespaces.
type proc struct {
	pid        int
	comm       string
	net, mnt   uint64
	fds        map[int]string
	mountinfo  string
	threadsNet []uint64
}

func tree(t *testing.T, procs ...proc) *fakehost.Tree {
	tr := fakehost.NewTree(t)
	for _, p := range procs {
		d := fmt.Sprintf("proc/%d", p.pid)
		tr.Write(d+"/stat", fmt.Sprintf("%d (%s) S 1 %d %d 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n", p.pid, p.comm, p.pid, p.pid))
		tr.Symlink(d+"/ns/net", fmt.Sprintf("net:[%d]", p.net))
		mnt := p.mnt
		if mnt == 0 {
			mnt = 4026531841
		}
		tr.Symlink(d+"/ns/mnt", fmt.Sprintf("mnt:[%d]", mnt))
		tr.Mkdir(d + "/fd")
		for fd, target := range p.fds {
			tr.Symlink(fmt.Sprintf("%s/fd/%d", d, fd), target)
		}
		tr.Write(d+"/mountinfo", p.mountinfo)
		tr.Symlink(fmt.Sprintf("%s/task/%d/ns/net", d, p.pid), fmt.Sprintf("net:[%d]", p.net))
		for i, ns := range p.threadsNet {
			tr.Symlink(fmt.Sprintf("%s/task/%d/ns/net", d, p.pid+1+i), fmt.Sprintf("net:[%d]", ns))
		}
	}
	return tr
}

const nsMountLine = "612 29 0:4 net:[%d] /run/netns/cni-1 rw shared:301 - nsfs nsfs rw\n"

func TestScan(t *testing.T) {
	const leaked, mounted, threaded, lived = 4026532700, 4026532701, 4026532702, 4026532703
	probe := &fakeProbe{ns: map[uint64]uint64{
		900: hostNet, 901: leaked, 902: mounted, 903: threaded, 904: lived, 905: leaked, 906: hostNet,
	}}
	tr := tree(t,
		proc{pid: 1, comm: "systemd", net: hostNet, fds: map[int]string{3: "socket:[906]"}},
		// The agent: sockets in the host's namespace and two in a
		// namespace nothing else keeps (seed 003), and an nsfs file of one
		// that a CNI mount keeps.
		proc{pid: 40, comm: "datadog-agent", net: hostNet, fds: map[int]string{
			3: "socket:[900]", 4: "socket:[901]", 5: "socket:[905]", 6: "pipe:[77]", 7: "/var/log/agent.log",
			8: fmt.Sprintf("net:[%d]", mounted)}},
		// A fork sharing the agent's socket 901: asked once.
		proc{pid: 41, comm: "datadog-agent", net: hostNet, fds: map[int]string{4: "socket:[901]"}},
		// The namespace of socket 902 is bind-mounted in pid 50's mount namespace.
		proc{pid: 50, comm: "containerd", net: hostNet, mnt: 4026532900, fds: map[int]string{9: "socket:[902]"},
			mountinfo: fmt.Sprintf("25 1 8:1 / / rw - ext4 /dev/sda1 rw\n"+nsMountLine, mounted)},
		// A thread of pid 60 sits in the namespace of socket 903.
		proc{pid: 60, comm: "cni", net: hostNet, fds: map[int]string{3: "socket:[903]"}, threadsNet: []uint64{threaded}},
		// pid 70 lives in the namespace of socket 904.
		proc{pid: 70, comm: "pause", net: lived, fds: map[int]string{3: "socket:[904]"}},
	)
	waited := time.Duration(0)
	s := &Scanner{Root: tr.Root, Probe: probe, Confirm: time.Second, Sleep: func(d time.Duration) { waited += d }}
	res, err := s.Scan()
	if err != nil {
		t.Fatal(err)
	}
	want := []Leak{{Inode: leaked, Held: 2,
		Holders:    []Holder{{PID: 40, Comm: "datadog-agent", FD: 4, Kind: "socket"}, {PID: 40, Comm: "datadog-agent", FD: 5, Kind: "socket"}},
		Interfaces: []Interface{{Name: "ipvl0", Flags: "up|broadcast", Addrs: []string{"10.255.3.7/32"}}}}}
	if !reflect.DeepEqual(res.Leaks, want) {
		t.Fatalf("leaks\n%+v\nwant\n%+v", res.Leaks, want)
	}
	if res.Processes != 6 || res.Sockets != 7 || res.NSFiles != 1 || res.Unresolved != 0 || waited != time.Second {
		t.Fatalf("counts %+v, waited %v", res, waited)
	}
}

// A socket its holder's namespace lists in its tables is settled there:
// the probe is asked only for the one it does not list (the leak), and each
// namespace's tables are read once.
func TestScanSettlesSocketsByTheirNamespaceTables(t *testing.T) {
	const leaked, pod = 4026532700, 4026532701
	probe := &fakeProbe{
		ns:     map[uint64]uint64{900: hostNet, 901: leaked, 902: hostNet, 903: pod},
		tables: map[uint64][]uint64{hostNet: {900, 902, 950}, pod: {903}},
	}
	tr := tree(t,
		proc{pid: 1, comm: "systemd", net: hostNet, fds: map[int]string{3: "socket:[902]"}},
		proc{pid: 40, comm: "agent", net: hostNet, fds: map[int]string{3: "socket:[900]", 4: "socket:[901]"}},
		proc{pid: 70, comm: "app", net: pod, fds: map[int]string{3: "socket:[903]"}},
	)
	res, err := (&Scanner{Root: tr.Root, Probe: probe}).Scan()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Leaks) != 1 || res.Leaks[0].Inode != leaked || res.Leaks[0].Holders[0] != (Holder{PID: 40, Comm: "agent", FD: 4, Kind: "socket"}) {
		t.Fatalf("leaks %+v", res.Leaks)
	}
	if probe.asked != 1 || probe.read != 2 || res.Sockets != 4 {
		t.Fatalf("asked the probe for %d sockets (want 1), read %d namespaces' tables (want 2), counted %d sockets (want 4)", probe.asked, probe.read, res.Sockets)
	}
}

// Gone by the confirmation: the agent closed the socket meanwhile.
func TestScanConfirmDropsWhatWentAway(t *testing.T) {
	const leaked = 4026532700
	probe := &fakeProbe{ns: map[uint64]uint64{901: leaked}}
	tr := tree(t, proc{pid: 40, comm: "agent", net: hostNet, fds: map[int]string{4: "socket:[901]"}})
	s := &Scanner{Root: tr.Root, Probe: probe, Confirm: time.Second, Sleep: func(time.Duration) { delete(probe.ns, 901) }}
	res, err := s.Scan()
	if err != nil || len(res.Leaks) != 0 {
		t.Fatalf("leaks %+v (%v)", res.Leaks, err)
	}
}

// Without a probe (a fixture root) or when the kernel refuses it, nsfs
// files are still read and the sockets are counted as unresolved.
func TestScanWithoutProbe(t *testing.T) {
	const leaked = 4026532700
	tr := tree(t, proc{pid: 40, comm: "agent", net: hostNet, fds: map[int]string{3: "socket:[900]", 4: fmt.Sprintf("net:[%d]", leaked)}})
	res, err := (&Scanner{Root: tr.Root}).Scan()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Leaks) != 1 || res.Leaks[0].Holders[0] != (Holder{PID: 40, Comm: "agent", FD: 4, Kind: "nsfs"}) ||
		res.Leaks[0].InspectErr == "" || res.Unresolved != 1 {
		t.Fatalf("got %+v", res)
	}
	res, err = (&Scanner{Root: tr.Root, Probe: &fakeProbe{refuse: true}}).Scan()
	if err != nil || res.Unresolved != 1 || res.ProbeErr == nil || len(res.Leaks) != 1 {
		t.Fatalf("refused probe: %+v %v", res, err)
	}
}

func TestNSMounts(t *testing.T) {
	mi := "25 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n" +
		"612 29 0:4 net:[4026532608] /run/netns/cni-1 rw shared:301 - nsfs nsfs rw\n" +
		"613 29 0:4 mnt:[4026532609] /run/x rw - nsfs nsfs rw\n" +
		"614 29 0:4 net:[4026532610] /var/run/docker/netns/ab12 rw - nsfs nsfs rw\n"
	if got := NSMounts([]byte(mi)); !reflect.DeepEqual(got, []uint64{4026532608, 4026532610}) {
		t.Fatalf("got %v", got)
	}
}

// listed is a FileSource that returns its files, each call the next
// listing (the last again once they run out), or err.
type listed struct {
	calls    int
	listings []OpenFiles
	err      error
}

func (l *listed) OpenFiles() (OpenFiles, error) {
	l.calls++
	return l.listings[min(l.calls, len(l.listings))-1], l.err
}

// How Scan takes a FileSource's files (the iterator's contract, on a
// fixture tree for the /proc side): sockets come with their namespace, so
// the probe is asked nothing; an nsfs file counts only when its link names
// a network namespace (the iterator sees a namespace file, not its type);
// a socket shared by forked processes is held once; the scanner's own
// files are not looked at; the confirmation lists again, and a socket gone
// from the new listing is no longer a leak. A FileSource that fails makes
// the fd walk run, and the result says why.
func TestScanWithFileSource(t *testing.T) {
	const leaked, nsfsLeaked, mntNS = 4026532700, 4026532701, 4026532900
	tr := tree(t,
		proc{pid: 40, comm: "agent", net: hostNet, fds: map[int]string{
			4: "socket:[901]", 5: fmt.Sprintf("net:[%d]", nsfsLeaked), 6: fmt.Sprintf("mnt:[%d]", mntNS)}},
		proc{pid: 41, comm: "agent", net: hostNet, fds: map[int]string{4: "socket:[901]"}},
		proc{pid: 99, comm: "cellguard", net: hostNet, fds: map[int]string{3: "socket:[999]"}},
	)
	first := OpenFiles{SocketFDs: 12, Files: []OpenFile{
		{PID: 41, FD: 4, Kind: "socket", Inode: 901, NS: leaked},
		{PID: 40, FD: 6, Kind: "nsfs", Inode: mntNS, NS: mntNS},
		{PID: 40, FD: 5, Kind: "nsfs", Inode: nsfsLeaked, NS: nsfsLeaked},
		{PID: 40, FD: 4, Kind: "socket", Inode: 901, NS: leaked},
		{PID: 99, FD: 3, Kind: "socket", Inode: 999, NS: 4026532800},
	}}
	probe := &fakeProbe{refuse: true}
	src := &listed{listings: []OpenFiles{first}}
	res, err := (&Scanner{Root: tr.Root, Probe: probe, Files: src, Self: 99}).Scan()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range res.Leaks {
		got = append(got, fmt.Sprintf("%d held %d by %+v", l.Inode, l.Held, l.Holders))
	}
	want := []string{
		fmt.Sprintf("%d held 1 by [{PID:40 Comm:agent FD:4 Kind:socket}]", leaked),
		fmt.Sprintf("%d held 1 by [{PID:40 Comm:agent FD:5 Kind:nsfs}]", nsfsLeaked),
	}
	if !reflect.DeepEqual(got, want) || res.Via != ViaIterator || probe.asked != 0 || probe.read != 0 ||
		res.Sockets != 12 || res.NSFiles != 1 || res.Processes != 2 || res.Unresolved != 0 {
		t.Fatalf("leaks %q, want %q; %+v; probe asked %d, tables %d", got, want, res, probe.asked, probe.read)
	}

	// Confirmed: listed again after the wait, socket 901 is gone.
	src = &listed{listings: []OpenFiles{first, {Files: first.Files[1:3]}}}
	res, err = (&Scanner{Root: tr.Root, Probe: probe, Files: src, Self: 99, Confirm: time.Second, Sleep: func(time.Duration) {}}).Scan()
	if err != nil || len(res.Leaks) != 1 || res.Leaks[0].Inode != nsfsLeaked || src.calls != 2 {
		t.Fatalf("after the confirmation: leaks %+v (%v), %d listings", res.Leaks, err, src.calls)
	}

	// The iterator cannot run: the fd walk, and why.
	src = &listed{listings: []OpenFiles{{}}, err: fmt.Errorf("load kernel BTF: %w", os.ErrNotExist)}
	res, err = (&Scanner{Root: tr.Root, Probe: &fakeProbe{ns: map[uint64]uint64{901: leaked}}, Files: src, Self: 99}).Scan()
	if err != nil || res.Via != ViaFDWalk || !errors.Is(res.IterErr, os.ErrNotExist) || len(res.Leaks) != 2 {
		t.Fatalf("fallback: via %q (%v), leaks %+v, %v", res.Via, res.IterErr, res.Leaks, err)
	}
}

// When a FileSource also says which namespaces tasks are in (NetNS,
// threads included) and names a process per mount namespace (MountNS),
// the scan takes them instead of reading every process's: a namespace
// in NetNS is no leak though no /proc entry shows a process in it, a
// mount namespace's mountinfo is read from the process named, and a
// process no longer in the mount namespace it is named for makes the scan
// read every process's after all.
func TestScanWithFileSourceNamespaces(t *testing.T) {
	const leaked, mounted, told, hostMnt, podMnt = 4026532700, 4026532701, 4026532702, 4026531841, 4026532900
	tr := tree(t,
		proc{pid: 40, comm: "agent", net: hostNet, fds: map[int]string{4: "socket:[901]", 5: "socket:[902]", 6: "socket:[903]"}},
		proc{pid: 50, comm: "containerd", net: hostNet, mnt: podMnt,
			mountinfo: fmt.Sprintf("25 1 8:1 / / rw - ext4 /dev/sda1 rw\n"+nsMountLine, mounted)},
	)
	files := []OpenFile{
		{PID: 40, FD: 4, Kind: "socket", Inode: 901, NS: leaked},
		{PID: 40, FD: 5, Kind: "socket", Inode: 902, NS: mounted},
		{PID: 40, FD: 6, Kind: "socket", Inode: 903, NS: told},
	}
	for _, tc := range []struct {
		name   string
		mounts map[uint64]int
	}{
		{"mountinfo from the process named", map[uint64]int{hostMnt: 40, podMnt: 50}},
		{"a process named for the wrong mount namespace", map[uint64]int{hostMnt: 40, podMnt: 40}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &listed{listings: []OpenFiles{{Files: files, NetNS: map[uint64]bool{hostNet: true, told: true}, MountNS: tc.mounts}}}
			res, err := (&Scanner{Root: tr.Root, Probe: &fakeProbe{refuse: true}, Files: src}).Scan()
			if err != nil || len(res.Leaks) != 1 || res.Leaks[0].Inode != leaked {
				t.Fatalf("leaks %+v (%v), want net:[%d] alone", res.Leaks, err, leaked)
			}
		})
	}
}

// A listing made elsewhere (the validator's snapshot) is what the scan
// reads, and the same leak is found as with its own; when that listing
// fails, the scan lists /proc itself.
func TestScanTakesPIDsFromElsewhere(t *testing.T) {
	const leaked = 4026532700
	tr := tree(t,
		proc{pid: 1, comm: "systemd", net: hostNet},
		proc{pid: 40, comm: "agent", net: hostNet, fds: map[int]string{4: fmt.Sprintf("net:[%d]", leaked)}},
	)
	testCases := []struct {
		name      string
		pids      func() ([]int, error)
		processes int
		leaks     int
	}{
		{name: "own listing", processes: 2, leaks: 1},
		{name: "handed", pids: func() ([]int, error) { return []int{1, 40}, nil }, processes: 2, leaks: 1},
		{name: "handed without the holder", pids: func() ([]int, error) { return []int{1}, nil }, processes: 1, leaks: 0},
		{name: "handed an error", pids: func() ([]int, error) { return nil, errors.New("snapshot failed") }, processes: 2, leaks: 1},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := (&Scanner{Root: tr.Root, PIDs: tc.pids}).Scan()
			if err != nil {
				t.Fatal(err)
			}
			if res.Processes != tc.processes || len(res.Leaks) != tc.leaks {
				t.Fatalf("%d processes and %d leaks, want %d and %d", res.Processes, len(res.Leaks), tc.processes, tc.leaks)
			}
		})
	}
}
