package snapshot

import (
	"strings"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
)

// DefaultFullEvery is how often an Incremental reads everything again.
const DefaultFullEvery = 10 * time.Minute

// Incremental reads the host again and again (cellguard watch's scans),
// re-reading only what changed since its last read: a state file whose
// identity changed (runcstate.Cache), and the stat of a process that is new
// (procfs.Entry), or that a check judges by what can change in it (see
// reread). Every container's cgroup.procs is read every time: it is how an
// escape shows, and nothing signals a process leaving it. Every FullEvery
// it reads everything, which bounds how long a change that keeps a file's
// or a process's identity goes unseen. One caller at a time.
type Incremental struct {
	Spec Spec
	// FullEvery is the period of full reads; 0 means DefaultFullEvery.
	FullEvery time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	c        caches
	lastFull time.Time
	// Full reports whether the last Read read everything.
	Full bool
}

// caches are what an Incremental keeps between reads.
type caches struct {
	states runcstate.Cache
	procs  procfs.Memo
}

// Read reads the host, incrementally unless a full read is due.
func (in *Incremental) Read() (*Host, error) {
	now := time.Now
	if in.Now != nil {
		now = in.Now
	}
	every := in.FullEvery
	if every <= 0 {
		every = DefaultFullEvery
	}
	t := now()
	in.Full = in.lastFull.IsZero() || t.Sub(in.lastFull) >= every
	if in.Full {
		in.c.states.Reset()
		in.c.procs.Reset()
		in.lastFull = t
	}
	h, err := read(in.Spec, &in.c)
	if err != nil {
		// A read that failed half way may have kept half: start over.
		in.lastFull = time.Time{}
	}
	return h, err
}

// StatsRead is how many stat files the last Read read.
func (in *Incremental) StatsRead() int { return in.c.procs.Read }

// reread says which of pid's kept stats to read again. A stat is kept only
// for a process settled in its container: listed by its cgroup in every
// hierarchy, not the container's init (whose state and start time say
// whether the container lives), and not named like runc (stuck-runc-init
// judges those by name and age). Everything else is read each time: host
// processes (their parents are followed to owners), and the listed but
// displaced, whose findings name them.
func (v *Host) reread(pid int, inits map[int]bool) func(procfs.Stat) bool {
	i, listed := v.listedBy.get(pid)
	if !listed || inits[pid] || !v.members[i].InAll(pid) {
		return always
	}
	return namedRunc
}

func always(procfs.Stat) bool { return true }

func namedRunc(st procfs.Stat) bool { return strings.HasPrefix(st.Comm, "runc") }
