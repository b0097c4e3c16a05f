package netns

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

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
	// ProbeErr is the first error the probe gave, for the report.
	ProbeErr error
}

// Probe reaches what /proc does not show. Live returns the real one.
type Probe interface {
	// SocketNS returns the inode of the network namespace of socket
	// inode sock that pid holds as fd.
	SocketNS(pid, fd int, sock uint64) (uint64, error)
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
}

// ErrProbe wraps what the probe refused.
var ErrProbe = errors.New("netns probe")

// maxHolders bounds the holders reported per leak: a leaked namespace can
// be held by many sockets of one agent.
const maxHolders = 16

// scanState is what one pass read.
type scanState struct {
	in      map[uint64]bool     // namespaces some process or thread is in, or a mount names
	held    map[uint64][]Holder // the first maxHolders holders of each namespace
	count   map[uint64]int      // all of them
	sockets map[uint64]bool     // socket inodes asked (forked processes share them)
}

// Scan finds the leaked namespaces.
func (s *Scanner) Scan() (Result, error) {
	var res Result
	root := hostroot.Dir(s.Root)
	fs := procfs.New(root)
	self := s.Self
	if self == 0 && hostroot.IsLive(root) {
		self = os.Getpid()
	}
	pids, err := fs.PIDs(nil)
	if err != nil {
		return res, fmt.Errorf("scan network namespaces: %w", err)
	}
	sort.Ints(pids)
	st := scanState{in: map[uint64]bool{}, held: map[uint64][]Holder{}, count: map[uint64]int{}, sockets: map[uint64]bool{}}
	r := fs.NewReader()
	defer r.Close()
	for _, pid := range pids {
		if ns, err := linkInode(r, pid, "ns/net"); err == nil {
			st.in[ns] = true
		}
		if pid == self {
			continue
		}
		if err := s.files(r, fs, pid, &st, &res); err != nil {
			return res, err
		}
		res.Processes++
	}
	cands := candidates(&st)
	if len(cands) == 0 {
		return res, nil
	}
	// Threads may sit in another namespace than their process, and a bind
	// mount in any mount namespace keeps one: read both only now, when
	// there is something to clear.
	if err := alsoIn(fs, pids, st.in); err != nil {
		return res, err
	}
	if cands = candidates(&st); len(cands) > 0 && s.Confirm > 0 {
		sleep := s.Sleep
		if sleep == nil {
			sleep = time.Sleep
		}
		sleep(s.Confirm)
		cands = s.confirm(fs, pids, &st, cands)
	}
	for _, ino := range cands {
		hs := st.held[ino]
		l := Leak{Inode: ino, Holders: hs, Held: max(st.count[ino], len(hs))}
		if s.Probe != nil {
			var err error
			if l.Interfaces, err = s.Probe.Inspect(hs[0], ino); err != nil {
				l.InspectErr = err.Error()
			}
		} else {
			l.InspectErr = "no probe on a fixture root"
		}
		res.Leaks = append(res.Leaks, l)
	}
	return res, nil
}

// files reads pid's fd links: nsfs files of a network namespace are
// holders; sockets are asked for their namespace, once per socket.
func (s *Scanner) files(r *procfs.Reader, fs procfs.FS, pid int, st *scanState, res *Result) error {
	dir := fs.Path(pid, "fd")
	f, err := os.Open(dir)
	if err != nil {
		if procfs.IsDenied(err) {
			res.Denied++
		}
		return nil // gone, or a kernel thread's empty table
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil
	}
	fds := make([]int, 0, len(names))
	for _, name := range names {
		if fd, err := strconv.Atoi(name); err == nil {
			fds = append(fds, fd)
		}
	}
	sort.Ints(fds) // holders reported in fd order
	comm := ""
	for _, fd := range fds {
		l, err := r.Readlink(pid, "fd/"+strconv.Itoa(fd))
		if err != nil {
			continue // closed meanwhile
		}
		var kind string
		var ns uint64
		switch {
		case bytes.HasPrefix(l, []byte("net:[")):
			kind = "nsfs"
			if ns, err = procfs.ParseNSLink(l); err != nil {
				continue
			}
			res.NSFiles++
		case bytes.HasPrefix(l, []byte("socket:[")):
			sock, err := procfs.ParseNSLink(l)
			if err != nil || st.sockets[sock] {
				continue
			}
			st.sockets[sock] = true
			res.Sockets++
			if s.Probe == nil {
				res.Unresolved++
				continue
			}
			kind = "socket"
			if ns, err = s.Probe.SocketNS(pid, fd, sock); err != nil {
				if errors.Is(err, ErrProbe) {
					res.Unresolved++
					if res.ProbeErr == nil {
						res.ProbeErr = err
					}
				}
				continue // closed or exited meanwhile
			}
		default:
			continue
		}
		if comm == "" {
			comm = "?"
			if stt, err := r.Stat(pid); err == nil {
				comm = stt.Comm
			}
		}
		if st.count[ns]++; len(st.held[ns]) < maxHolders {
			st.held[ns] = append(st.held[ns], Holder{PID: pid, Comm: comm, FD: fd, Kind: kind})
		}
	}
	return nil
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
func (s *Scanner) confirm(fs procfs.FS, pids []int, st *scanState, cands []uint64) []uint64 {
	in := map[uint64]bool{}
	r := fs.NewReader()
	defer r.Close()
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
	var out []uint64
	for _, ns := range cands {
		if in[ns] {
			continue
		}
		var still []Holder
		for _, h := range st.held[ns] {
			if s.stillHolds(r, h, ns) {
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
// must still be a socket in ns.
func (s *Scanner) stillHolds(r *procfs.Reader, h Holder, ns uint64) bool {
	l, err := r.Readlink(h.PID, "fd/"+strconv.Itoa(h.FD))
	if err != nil {
		return false
	}
	if h.Kind == "nsfs" {
		got, err := procfs.ParseNSLink(l)
		return err == nil && bytes.HasPrefix(l, []byte("net:[")) && got == ns
	}
	sock, err := procfs.ParseNSLink(l)
	if err != nil || !bytes.HasPrefix(l, []byte("socket:[")) || s.Probe == nil {
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
