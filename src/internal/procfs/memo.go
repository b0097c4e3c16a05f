package procfs

import "sync"

// Entry is a pid directory as Root/proc lists it: the pid and the
// directory's inode. The kernel keeps a live process's /proc/<pid> inode
// while its dentry lives and invalidates the dentries when the task is
// released, so a pid that names a new process comes with a new inode: an
// unchanged (PID, Ino) is the same process. A reclaimed dentry gives the
// same process a new inode too, which costs a re-read, never a miss.
type Entry struct {
	PID int
	Ino uint64
}

// Entries appends the pid directories listed in Root/proc to dst, with
// their inodes, from the same getdents records PIDs reads.
func (fs FS) Entries(dst []Entry) ([]Entry, error) {
	err := fs.list(func(ino uint64, name []byte) {
		if pid, ok := atoi(name); ok && pid > 0 {
			dst = append(dst, Entry{PID: pid, Ino: ino})
		}
	})
	return dst, err
}

// Memo keeps what scans read of each process while its /proc entry stays
// the same one (Entry): its stat and its pid namespace. A process's start
// time and pid namespace never change; its command name, state and parent
// do (exec, exit, reparenting), so the caller says which cached stats to
// read again. Safe for concurrent use by one scan's workers.
type Memo struct {
	mu    sync.Mutex
	procs map[int]memoProc // what the previous scans kept
	seen  map[int]memoProc // what this scan used
	// Read counts the stat files this scan read.
	Read int
}

type memoProc struct {
	ino   uint64
	stat  Stat
	ns    uint64
	hasNS bool
}

// Stat returns e's stat: the one kept for the same entry, unless there is
// none or reread says the kept one may be stale, in which case it is read.
func (m *Memo) Stat(r *Reader, e Entry, reread func(Stat) bool) (Stat, error) {
	m.mu.Lock()
	p, ok := m.procs[e.PID]
	m.mu.Unlock()
	if ok && p.ino == e.Ino && (reread == nil || !reread(p.stat)) {
		m.keep(e.PID, p)
		return p.stat, nil
	}
	st, err := r.Stat(e.PID)
	if err != nil {
		return st, err
	}
	if !ok || p.ino != e.Ino {
		p = memoProc{ino: e.Ino}
	}
	p.stat = st
	m.mu.Lock()
	m.Read++
	m.mu.Unlock()
	m.keep(e.PID, p)
	return st, nil
}

// PidNS returns e's pid namespace, read once per entry. Call it after
// Stat for the same entry.
func (m *Memo) PidNS(r *Reader, e Entry) (uint64, error) {
	m.mu.Lock()
	p, ok := m.seen[e.PID]
	m.mu.Unlock()
	if ok && p.ino == e.Ino && p.hasNS {
		return p.ns, nil
	}
	ns, err := r.PidNS(e.PID)
	if err != nil {
		return ns, err
	}
	if ok && p.ino == e.Ino {
		p.ns, p.hasNS = ns, true
		m.keep(e.PID, p)
	}
	return ns, nil
}

func (m *Memo) keep(pid int, p memoProc) {
	m.mu.Lock()
	if m.seen == nil {
		m.seen = map[int]memoProc{}
	}
	m.seen[pid] = p
	m.mu.Unlock()
}

// Next starts a scan: what the last one used is what this one may reuse;
// what it did not use (processes gone, or not looked at) is forgotten, and
// Read starts again from 0.
func (m *Memo) Next() {
	m.mu.Lock()
	m.procs, m.seen, m.Read = m.seen, nil, 0
	m.mu.Unlock()
}

// Reset forgets everything: the next scan reads every process.
func (m *Memo) Reset() {
	m.mu.Lock()
	m.procs, m.seen, m.Read = nil, nil, 0
	m.mu.Unlock()
}
