package snapshot

import (
	"fmt"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
)

// Rereader reads one process again after the snapshot: the step a check
// takes to confirm a suspect (a process seen outside its cgroup may have
// been mid-way through joining it). Host.Rereader reads /proc; tests pass
// a fake that says what the process looks like by then.
type Rereader interface {
	// Reread reads pid now. An error means it cannot be told: gone,
	// unreadable, or its files did not parse.
	Reread(pid int) (Now, error)
}

// Now is one process as read again. Every field comes from one open
// /proc/<pid> directory, so all of them describe one process even when
// the pid was reused meanwhile.
type Now struct {
	Stat procfs.Stat
	// PidNS is the process's pid namespace; 0 when it could not be read.
	PidNS  uint64
	cgroup []byte
	m      cgroup.Membership
}

// NewNow builds a Now from a stat, the text of /proc/<pid>/cgroup and a pid
// namespace: what a fake Rereader returns.
func NewNow(st procfs.Stat, cgroupFile string, pidNS uint64) (Now, error) {
	n := Now{Stat: st, PidNS: pidNS, cgroup: []byte(cgroupFile)}
	if err := cgroup.ParseProcCgroup(n.cgroup, &n.m); err != nil {
		return Now{}, err
	}
	return n, nil
}

// Cgroup returns the process's cgroup in the hierarchy holding key
// (cgroup.Membership.Lookup's keys).
func (n *Now) Cgroup(key string) (string, bool) {
	// A copy of a Now shares the bytes its entries point into; nothing
	// writes them after NewNow or Reread.
	p, ok := n.m.Lookup(key)
	return string(p), ok
}

// Rereader reads processes under the snapshot's root, one at a time: it
// is not safe for concurrent use (a check confirms its suspects in turn).
func (v *Host) Rereader() Rereader { return &liveRereader{fs: v.proc} }

type liveRereader struct {
	fs procfs.FS
	// r is made on the first Reread and kept: a reader per suspect and
	// round was a 4 KB buffer each, thousands on an escaped cell.
	r *procfs.Reader
}

func (l *liveRereader) Reread(pid int) (Now, error) {
	p, err := l.fs.Pin(pid)
	if err != nil {
		return Now{}, err
	}
	defer p.Close()
	if l.r == nil {
		l.r = l.fs.NewReader() // reads through p's directory: nothing to Close
	}
	r := l.r
	st, err := r.PinnedStat(p)
	if err != nil {
		return Now{}, err
	}
	b, err := r.PinnedCgroup(p)
	if err != nil {
		return Now{}, err
	}
	// The reader reuses its buffer: the Now keeps a copy.
	n := Now{Stat: st, cgroup: append([]byte(nil), b...)}
	if err := cgroup.ParseProcCgroup(n.cgroup, &n.m); err != nil {
		return Now{}, fmt.Errorf("parse %s: %w", l.fs.Path(pid, "cgroup"), err)
	}
	if ns, err := r.PinnedPidNS(p); err == nil {
		n.PidNS = ns
	}
	return n, nil
}
