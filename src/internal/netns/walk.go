package netns

import (
	"bytes"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/cloudfoundry/cellguard/src/internal/procfs"
)

// Walk is the fd walk made in another reader's pass over every process
// (the validator's snapshot, which reads each process's stat): Add reads
// one process's fd/ while its /proc entry is at hand, instead of a second
// listing of /proc and a second lookup of every process. A Scanner given
// it (Scanner.Walked) reads no fd/ itself. One Walk holds one pass.
type Walk struct {
	parts []walkPart
}

// walkPart is what one worker of the pass read.
type walkPart struct {
	pids   []int
	files  []ref
	denied []int
}

// NewWalk returns a Walk for a pass split over workers goroutines.
func NewWalk(workers int) *Walk { return &Walk{parts: make([]walkPart, workers)} }

// Add reads pid's open files that may hold a network namespace, as
// openFiles does, with r; worker (0 <= worker < workers) is the
// goroutine's own, so Adds of different workers run at once. Each worker
// adds its pids in ascending order.
func (w *Walk) Add(worker int, r *procfs.Reader, pid int) {
	p := &w.parts[worker]
	p.pids = append(p.pids, pid)
	err := r.FDLinks(pid, func(fd int, l []byte) {
		switch {
		case bytes.HasPrefix(l, netLink):
			if ns, err := procfs.ParseNSLink(l); err == nil {
				p.files = append(p.files, ref{pid: pid, fd: fd, kind: "nsfs", ns: ns})
			}
		case bytes.HasPrefix(l, socketLink):
			if sock, err := procfs.ParseNSLink(l); err == nil {
				p.files = append(p.files, ref{pid: pid, fd: fd, kind: "socket", sock: sock})
			}
		}
	})
	if err == unix.EACCES || err == unix.EPERM {
		p.denied = append(p.denied, pid)
	}
}

// pids are the processes the pass walked, sorted: each worker's are, and
// they are merged.
func (w *Walk) pids() []int {
	n := 0
	for _, p := range w.parts {
		n += len(p.pids)
	}
	pids := make([]int, 0, n)
	at := make([]int, len(w.parts))
	for len(pids) < n {
		k := -1
		for i, p := range w.parts {
			if at[i] < len(p.pids) && (k < 0 || p.pids[at[i]] < w.parts[k].pids[at[k]]) {
				k = i
			}
		}
		pids = append(pids, w.parts[k].pids[at[k]])
		at[k]++
	}
	return pids
}

// refs are the walk's files as openFiles lists them: in pid and fd order,
// each socket once, self's left out; res counts as openFiles does.
func (w *Walk) refs(self int, res *Result) []ref {
	var all []ref
	for _, p := range w.parts {
		all = append(all, p.files...)
		for _, pid := range p.pids {
			if pid != self {
				res.Processes++
			}
		}
		for _, pid := range p.denied {
			if pid != self {
				res.Denied++
			}
		}
	}
	slices.SortFunc(all, func(a, b ref) int {
		if a.pid != b.pid {
			return a.pid - b.pid
		}
		return a.fd - b.fd
	})
	var refs []ref
	seen := map[uint64]bool{}
	for _, x := range all {
		switch {
		case x.pid == self:
		case x.kind == "nsfs":
			res.NSFiles++
			refs = append(refs, x)
		case !seen[x.sock]:
			seen[x.sock] = true
			res.Sockets++
			refs = append(refs, x)
		}
	}
	return refs
}
