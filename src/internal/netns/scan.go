package netns

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
)

// Holder is an open file that keeps a namespace alive.
type Holder struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
	FD   int    `json:"fd"`
	// Kind is "nsfs" (a namespace file) or "socket".
	Kind string `json:"kind"`
}

// Interface is a network interface left in a leaked namespace.
type Interface struct {
	Name  string   `json:"name"`
	Flags string   `json:"flags"`
	Addrs []string `json:"addrs,omitempty"`
}

// Leak is a network namespace held only by open files.
type Leak struct {
	Inode uint64 `json:"inode"`
	// Holders are the first maxHolders open files found holding it; Held
	// counts them all.
	Holders []Holder `json:"holders"`
	Held    int      `json:"held"`
	// Interfaces are what the namespace still has; InspectErr says why
	// they could not be read.
	Interfaces []Interface `json:"interfaces,omitempty"`
	InspectErr string      `json:"inspect_error,omitempty"`
}

// Result is one scan.
type Result struct {
	Leaks []Leak
	// Processes, Sockets and NSFiles count what was read: processes
	// scanned, distinct sockets asked for their namespace, nsfs files.
	Processes, Sockets, NSFiles int
	// Unresolved counts sockets whose namespace could not be asked (the
	// probe refused, e.g. Yama ptrace_scope 3, or no probe on a fixture
	// root); Denied counts processes whose fds could not be listed.
	Unresolved, Denied int
	// NotInspected counts the Unresolved sockets not asked because
	// receiving them would have re-tagged them (ErrNotInspected);
	// NotInspectedErr is the first such refusal.
	NotInspected    int
	NotInspectedErr error
	// ProbeErr is the first error the probe gave, for the report.
	ProbeErr error
	// Via is how open files were listed: ViaIterator or ViaFDWalk;
	// IterErr is why the iterator was not used when the scanner had one.
	Via     string
	IterErr error
}

// How a scan listed open files.
const (
	ViaIterator = "bpf task_file iterator"
	ViaFDWalk   = "fd walk"
)

// OpenFile is an open file that may hold a network namespace, as a
// FileSource lists it.
type OpenFile struct {
	PID, FD int
	// Kind is "nsfs" or "socket".
	Kind string
	// Inode is the file's; NS the namespace of a socket, or the inode of
	// an nsfs file (which may be another type's namespace).
	Inode, NS uint64
}

// OpenFiles is what a FileSource found.
type OpenFiles struct {
	// Files are every nsfs file and every socket outside its holder's
	// network namespace, in no particular order.
	Files []OpenFile
	// SocketFDs counts every socket descriptor seen (a socket shared by
	// forked processes once per descriptor).
	SocketFDs int
	// NetNS are the network namespaces some task (thread) is in, and
	// MountNS a tgid in each mount namespace; nil when the source does
	// not tell, or listed no file (then nothing needs them), and the scan
	// reads /proc for them.
	NetNS   map[uint64]bool
	MountNS map[uint64]int
}

// FileSource lists every process's open files from the kernel at once,
// each socket with its namespace. TaskFiles is the real one.
type FileSource interface {
	OpenFiles() (OpenFiles, error)
}

// Probe reaches what /proc does not show. Live returns the real one.
type Probe interface {
	// SocketNS returns the inode of the network namespace of socket
	// inode sock that pid holds as fd.
	SocketNS(pid, fd int, sock uint64) (uint64, error)
	// Sockets returns the inodes of the sockets that namespace ns lists
	// in its tables (SocketTables), reached through pid, which is in it;
	// an error when pid is no longer in ns.
	Sockets(pid int, ns uint64) (map[uint64]bool, error)
	// Inspect lists the interfaces of the namespace inode that h holds.
	Inspect(h Holder, inode uint64) ([]Interface, error)
}

// Scanner scans one host.
type Scanner struct {
	// Root prefixes /proc; "" or "/" is the live host.
	Root string
	// Probe resolves sockets and reads interfaces; nil resolves no
	// socket (counted as Unresolved) and inspects nothing.
	Probe Probe
	// Confirm is the wait before a leak found is read again: a namespace
	// in the middle of being made or mounted (a CNI plugin's, runc's)
	// has a process in it or a mount by then. 0 confirms at once.
	Confirm time.Duration
	// Sleep waits; nil means time.Sleep.
	Sleep func(time.Duration)
	// Self is a pid whose files are not looked at (the scanner's own
	// process holds the probe's duplicates); 0 means os.Getpid() on the
	// live root, none elsewhere.
	Self int
	// Files lists open files instead of the walk of every /proc/<pid>/fd,
	// with sockets' namespaces, so the probe is asked about none; nil, or
	// an error from it (Result.IterErr), means the walk.
	Files FileSource
	// PIDs returns the processes to scan, sorted: a listing of Root/proc
	// made for another reader of every process (the validator's snapshot),
	// asked once, after Files. nil, or an error from it, lists Root/proc.
	PIDs func() ([]int, error)
}

// ErrProbe wraps what the probe refused.
var ErrProbe = errors.New("netns probe")

// maxHolders bounds the holders reported per leak: a leaked namespace can
// be held by many sockets of one agent.
const maxHolders = 16

// scanState is what one pass read.
type scanState struct {
	in    map[uint64]bool     // namespaces some process or thread is in, or a mount names
	held  map[uint64][]Holder // the first maxHolders holders of each namespace
	count map[uint64]int      // all of them
}

// ref is an open file that may hold a network namespace: an nsfs file,
// whose link names it, or a socket, whose namespace is found later (0
// until then, and when it cannot be).
type ref struct {
	pid, fd int
	kind    string // "nsfs" or "socket"
	sock    uint64
	ns      uint64
}

var (
	netLink    = []byte("net:[")
	socketLink = []byte("socket:[")
)

// Scan finds the leaked namespaces. It reads every process's open files
// first: a host where none is an nsfs file or a socket has no leak, and
// nothing else is read. Then every process's namespace; a socket listed in
// its holder's namespace's tables is settled there, and only the others are
// asked one by one.
func (s *Scanner) Scan() (Result, error) {
	var res Result
	root := hostroot.Dir(s.Root)
	fs := procfs.New(root)
	self := s.Self
	if self == 0 && hostroot.IsLive(root) {
		self = os.Getpid()
	}
	r := fs.NewReader()
	defer r.Close()
	var of *OpenFiles
	if s.Files != nil {
		// Before the listing: the one a snapshot makes may still be under
		// way, and the iterator's load overlaps it.
		if o, err := s.Files.OpenFiles(); err == nil {
			of = &o
		} else {
			res.IterErr = err
		}
	}
	pids, err := s.pids(fs)
	if err != nil {
		return res, fmt.Errorf("scan network namespaces: %w", err)
	}
	refs := s.listFiles(r, of, pids, self, &res)
	if len(refs) == 0 {
		return res, nil
	}
	st := scanState{in: map[uint64]bool{}, held: map[uint64][]Holder{}, count: map[uint64]int{}}
	nsOf := make([]uint64, len(pids))
	if of != nil && of.NetNS != nil {
		maps.Copy(st.in, of.NetNS) // and its sockets are settled: nsOf is not needed
	} else {
		for i, pid := range pids {
			if ns, err := r.NSInode(pid, "net"); err == nil {
				nsOf[i] = ns
				st.in[ns] = true
			}
		}
	}
	s.resolve(refs, pids, nsOf, &res)
	for _, x := range refs {
		if x.ns == 0 {
			continue
		}
		if st.count[x.ns]++; len(st.held[x.ns]) < maxHolders {
			st.held[x.ns] = append(st.held[x.ns], Holder{PID: x.pid, FD: x.fd, Kind: x.kind})
		}
	}
	cands := candidates(&st)
	if len(cands) == 0 {
		return res, nil
	}
	// Threads may sit in another namespace than their process, and a bind
	// mount in any mount namespace keeps one: read both only now, when
	// there is something to clear.
	if of == nil || of.NetNS == nil || mountsIn(fs, of.MountNS, st.in) != nil {
		if err := alsoIn(fs, pids, st.in); err != nil {
			return res, err
		}
	}
	if cands = candidates(&st); len(cands) > 0 && s.Confirm > 0 {
		sleep := s.Sleep
		if sleep == nil {
			sleep = time.Sleep
		}
		sleep(s.Confirm)
		cands = s.confirm(fs, &res, &st, cands)
	}
	res.Leaks = s.leaks(r, &st, cands)
	return res, nil
}

// leaks describes each confirmed namespace: its holders with their command
// names, how many files hold it, and what the probe finds in it.
func (s *Scanner) leaks(r *procfs.Reader, st *scanState, cands []uint64) []Leak {
	var out []Leak
	comms := map[int]string{}
	for _, ino := range cands {
		hs := st.held[ino]
		for i := range hs {
			hs[i].Comm = comm(r, hs[i].PID, comms)
		}
		l := Leak{Inode: ino, Holders: hs, Held: max(st.count[ino], len(hs))}
		if s.Probe != nil {
			var err error
			if l.Interfaces, err = s.Probe.Inspect(hs[0], ino); err != nil {
				l.InspectErr = err.Error()
			}
		} else {
			l.InspectErr = "no probe on a fixture root"
		}
		out = append(out, l)
	}
	return out
}

// pids are the processes to scan, sorted: the scanner's PIDs when it has
// them and they can be had, else Root/proc listed here.
func (s *Scanner) pids(fs procfs.FS) ([]int, error) {
	if s.PIDs != nil {
		if pids, err := s.PIDs(); err == nil {
			return pids, nil
		}
	}
	pids, err := fs.PIDs(nil)
	sort.Ints(pids)
	return pids, err
}

// listFiles lists the open files that may hold a namespace: from the
// FileSource's listing of (of) when it worked, else by the fd walk.
func (s *Scanner) listFiles(r *procfs.Reader, of *OpenFiles, pids []int, self int, res *Result) []ref {
	if of != nil {
		res.Via = ViaIterator
		for _, pid := range pids {
			if pid != self {
				res.Processes++
			}
		}
		return fileRefs(r, *of, self, res)
	}
	res.Via = ViaFDWalk
	return openFiles(r, pids, self, res)
}

// fileRefs turns a FileSource's files into refs in pid and fd order,
// keeping the nsfs files whose link names a network namespace (the
// iterator knows a namespace file, not its type) and each socket once.
func fileRefs(r *procfs.Reader, of OpenFiles, self int, res *Result) []ref {
	slices.SortFunc(of.Files, func(a, b OpenFile) int {
		if a.PID != b.PID {
			return a.PID - b.PID
		}
		return a.FD - b.FD
	})
	res.Sockets = of.SocketFDs
	var refs []ref
	seen := map[uint64]bool{}
	for _, f := range of.Files {
		switch {
		case f.PID == self:
		case f.Kind == "nsfs":
			l, err := r.Readlink(f.PID, "fd/"+strconv.Itoa(f.FD))
			if ns, perr := procfs.ParseNSLink(l); err == nil && perr == nil && bytes.HasPrefix(l, netLink) && ns == f.NS {
				res.NSFiles++
				refs = append(refs, ref{pid: f.PID, fd: f.FD, kind: "nsfs", ns: ns})
			}
		case f.Kind == "socket" && !seen[f.Inode]:
			seen[f.Inode] = true
			refs = append(refs, ref{pid: f.PID, fd: f.FD, kind: "socket", sock: f.Inode, ns: f.NS})
		}
	}
	return refs
}

// openFiles lists, in pid and fd order, every nsfs file of a network
// namespace and every socket (once: forked processes share them) that the
// processes other than self hold.
func openFiles(r *procfs.Reader, pids []int, self int, res *Result) []ref {
	var refs []ref
	seen := map[uint64]bool{}
	for _, pid := range pids {
		if pid == self {
			continue
		}
		res.Processes++
		err := r.FDLinks(pid, func(fd int, l []byte) {
			switch {
			case bytes.HasPrefix(l, netLink):
				if ns, err := procfs.ParseNSLink(l); err == nil {
					res.NSFiles++
					refs = append(refs, ref{pid: pid, fd: fd, kind: "nsfs", ns: ns})
				}
			case bytes.HasPrefix(l, socketLink):
				if sock, err := procfs.ParseNSLink(l); err == nil && !seen[sock] {
					seen[sock] = true
					res.Sockets++
					refs = append(refs, ref{pid: pid, fd: fd, kind: "socket", sock: sock})
				}
			}
		})
		if err == unix.EACCES || err == unix.EPERM {
			res.Denied++
		} // else gone, or a kernel thread's empty table
	}
	return refs
}

// resolve finds each socket's namespace. Most sockets are in their
// holder's own namespace: its tables, read once per namespace, settle them
// without asking the probe for each (pidfd_getfd and an ioctl a socket).
func (s *Scanner) resolve(refs []ref, pids []int, nsOf []uint64, res *Result) {
	tables := map[uint64]map[uint64]bool{}
	for i := range refs {
		x := &refs[i]
		if x.kind != "socket" || x.ns != 0 { // settled by the FileSource
			continue
		}
		if s.Probe == nil {
			res.Unresolved++
			continue
		}
		if j, ok := slices.BinarySearch(pids, x.pid); ok && nsOf[j] != 0 {
			own := nsOf[j]
			set, read := tables[own]
			if !read {
				set, _ = s.Probe.Sockets(x.pid, own) // nil: ask each socket
				tables[own] = set
			}
			if set[x.sock] {
				x.ns = own
				continue
			}
		}
		ns, err := s.Probe.SocketNS(x.pid, x.fd, x.sock)
		if err != nil {
			if errors.Is(err, ErrNotInspected) {
				if res.NotInspected++; res.NotInspectedErr == nil {
					res.NotInspectedErr = err
				}
			}
			if errors.Is(err, ErrProbe) {
				res.Unresolved++
				if res.ProbeErr == nil {
					res.ProbeErr = err
				}
			}
			continue // closed or exited meanwhile
		}
		x.ns = ns
	}
}

// comm is pid's command name, "?" when it cannot be read.
func comm(r *procfs.Reader, pid int, seen map[int]string) string {
	if c, ok := seen[pid]; ok {
		return c
	}
	c := "?"
	if st, err := r.Stat(pid); err == nil {
		c = st.Comm
	}
	seen[pid] = c
	return c
}

// candidates are the held namespaces nothing else keeps, sorted.
func candidates(st *scanState) []uint64 {
	var out []uint64
	for ns := range st.held {
		if !st.in[ns] {
			out = append(out, ns)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// mountsIn adds the network namespaces that nsfs mounts name, reading the
// mountinfo of one process per mount namespace (mnts: a FileSource's
// MountNS); an error when one is no longer in its namespace.
func mountsIn(fs procfs.FS, mnts map[uint64]int, in map[uint64]bool) error {
	r := fs.NewReader()
	defer r.Close()
	for mnt, pid := range mnts {
		if got, err := linkInode(r, pid, "ns/mnt"); err != nil || got != mnt {
			return fmt.Errorf("pid %d is no longer in mnt:[%d]", pid, mnt)
		}
		b, err := r.ReadFile(fs.Path(pid, "mountinfo"))
		if err != nil {
			return fmt.Errorf("read mountinfo of pid %d: %w", pid, err)
		}
		for _, ns := range NSMounts(b) {
			in[ns] = true
		}
	}
	return nil
}

// alsoIn adds the namespaces of every thread and of every nsfs mount
// (seen once per mount namespace) to in.
func alsoIn(fs procfs.FS, pids []int, in map[uint64]bool) error {
	r := fs.NewReader()
	defer r.Close()
	mnts := map[uint64]bool{}
	for _, pid := range pids {
		tasks, err := os.ReadDir(fs.Path(pid, "task"))
		if err == nil {
			for _, t := range tasks {
				if l, err := os.Readlink(filepath.Join(fs.Path(pid, "task"), t.Name(), "ns/net")); err == nil {
					if ns, err := procfs.ParseNSLink([]byte(l)); err == nil {
						in[ns] = true
					}
				}
			}
		}
		mnt, err := linkInode(r, pid, "ns/mnt")
		if err != nil || mnts[mnt] {
			continue
		}
		b, err := r.ReadFile(fs.Path(pid, "mountinfo"))
		if err != nil {
			continue // gone: another process of the namespace is read instead
		}
		mnts[mnt] = true
		for _, ns := range NSMounts(b) {
			in[ns] = true
		}
	}
	return nil
}

// NSMounts returns the network namespaces that a mountinfo's nsfs mounts
// name: their root field is "net:[inode]" (ip netns add, CNI's
// /var/run/netns/cni-*, Docker's /var/run/docker/netns/*).
func NSMounts(mountinfo []byte) []uint64 {
	var out []uint64
	for _, line := range bytes.Split(mountinfo, []byte{'\n'}) {
		f := bytes.Fields(line)
		if len(f) < 5 || !bytes.HasPrefix(f[3], []byte("net:[")) {
			continue
		}
		if ns, err := procfs.ParseNSLink(f[3]); err == nil {
			out = append(out, ns)
		}
	}
	return out
}

// confirm reads again, after the wait, whether each candidate still has
// a holder and still nothing else: every process's and thread's namespace
// and every mount again, and each holder's fd link.
func (s *Scanner) confirm(fs procfs.FS, res *Result, st *scanState, cands []uint64) []uint64 {
	var in map[uint64]bool
	r := fs.NewReader()
	defer r.Close()
	var again map[OpenFile]bool // the FileSource's sockets, listed again
	if res.Via == ViaIterator {
		of, err := s.Files.OpenFiles()
		if err != nil {
			return cands
		}
		again = map[OpenFile]bool{}
		for _, f := range of.Files {
			again[f] = true
		}
		if of.NetNS != nil && mountsIn(fs, of.MountNS, of.NetNS) == nil {
			in = of.NetNS
		}
	}
	if in == nil {
		in = map[uint64]bool{}
		now, err := fs.PIDs(nil)
		if err != nil {
			return cands
		}
		for _, pid := range now {
			if ns, err := linkInode(r, pid, "ns/net"); err == nil {
				in[ns] = true
			}
		}
		if err := alsoIn(fs, now, in); err != nil {
			return cands
		}
	}
	var out []uint64
	for _, ns := range cands {
		if in[ns] {
			continue
		}
		var still []Holder
		for _, h := range st.held[ns] {
			if s.stillHolds(r, h, ns, again) {
				still = append(still, h)
			}
		}
		if len(still) > 0 {
			st.count[ns] -= len(st.held[ns]) - len(still)
			st.held[ns] = still
			out = append(out, ns)
		}
	}
	return out
}

// stillHolds re-reads h's fd: an nsfs link must still name ns; a socket
// must still be a socket in ns, as the FileSource's new listing (again)
// says, or else the probe.
func (s *Scanner) stillHolds(r *procfs.Reader, h Holder, ns uint64, again map[OpenFile]bool) bool {
	l, err := r.Readlink(h.PID, "fd/"+strconv.Itoa(h.FD))
	if err != nil {
		return false
	}
	if h.Kind == "nsfs" {
		got, err := procfs.ParseNSLink(l)
		return err == nil && bytes.HasPrefix(l, []byte("net:[")) && got == ns
	}
	sock, err := procfs.ParseNSLink(l)
	if err != nil || !bytes.HasPrefix(l, []byte("socket:[")) {
		return false
	}
	if again != nil {
		return again[OpenFile{PID: h.PID, FD: h.FD, Kind: "socket", Inode: sock, NS: ns}]
	}
	if s.Probe == nil {
		return false
	}
	got, err := s.Probe.SocketNS(h.PID, h.FD, sock)
	return err == nil && got == ns
}

func linkInode(r *procfs.Reader, pid int, name string) (uint64, error) {
	l, err := r.Readlink(pid, name)
	if err != nil {
		return 0, err
	}
	return procfs.ParseNSLink(l)
}
