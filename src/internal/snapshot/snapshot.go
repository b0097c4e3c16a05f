package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
)

// Spec says what to read: where the host is and which runtime state.
type Spec struct {
	// Root prefixes every host path (/proc, /sys/fs/cgroup, runtime roots);
	// "/" or "" is the live host.
	Root string
	// RuntimeRoots are runc state roots; empty means runcstate.StandardRoots.
	RuntimeRoots []string
	// Namespaces filters containerd namespaces; empty means all.
	Namespaces []string
	// Procs reads every process's stat at once (bpfiter.Procs, on the live
	// root), read while the cgroups are: a one-shot Read then reads
	// /proc/<pid>/stat only for the pids it lacks. nil, or an error from
	// it, reads every stat file. It may leave processes out and may list
	// some /proc no longer does; /proc's listing says which there are.
	Procs func() ([]procfs.Stat, error)
}

// Host is one read of the host: the cgroup layout, the runtime states,
// what each container's cgroup.procs listed, and every process's stat. It
// is immutable once Read returns (its accessors hand out the snapshot's
// own slices: callers read them and never write), so every check of a run
// judges the same host, and concurrently.
type Host struct {
	root   string
	spec   Spec // what Rediscover reads again
	proc   procfs.FS
	layout *cgroup.Layout
	disc   *runcstate.Discovery
	boot   time.Time
	// procs holds every process that could be read, sorted by pid.
	procs []Proc
	// listed is Root/proc's listing, sorted by pid.
	listed []procfs.Entry
	// members[i] is what the cgroup.procs files of container i list.
	members []Members
	// listedBy maps every pid some container cgroup lists (in any
	// hierarchy) to that container's index.
	listedBy pidIndex
	// hostNS is the pid namespace of the root's pid 1: a container "in"
	// it has no pid namespace of its own.
	hostNS uint64
	// denied counts processes whose stat could not be read (EACCES).
	denied int
	// unlisted is UnlistedOwners, computed once.
	unlisted map[int][]int
	// cgroups holds /proc/<pid>/cgroup of the processes Cgroup names.
	cgroups map[int]cgroupFile
	// statsErr is StatsErr.
	statsErr error
	// states is what decoded the runtime states Read found, for
	// Rediscover; never Discovered through itself.
	states *runcstate.Cache
}

// cgroupFile is one /proc/<pid>/cgroup as read, or why it was not.
type cgroupFile struct {
	b   []byte
	err error
}

// Root is the root prefix the host was read under.
func (v *Host) Root() string { return v.root }

// ProcFS is /proc under the root, for the reads a check makes of its own
// (cmdline, fds) after the snapshot.
func (v *Host) ProcFS() procfs.FS { return v.proc }

// Layout is the host's cgroup hierarchies.
func (v *Host) Layout() *cgroup.Layout { return v.layout }

// Discovery is the runtime state found, one Container per state file.
func (v *Host) Discovery() *runcstate.Discovery { return v.disc }

// Rediscover reads the runtime states again, from the roots and with the
// namespaces Read used: a container created after Read found the states
// (a Garden pea, whose init runs in its own cgroup and in its sandbox's
// pid namespace) has processes the snapshot saw and a state it did not.
// Only the state files new or changed since Read are decoded (through a
// fork of Read's runcstate.Cache), and Rediscovers may run at once. The
// Host is not changed.
func (v *Host) Rediscover() (*runcstate.Discovery, error) {
	return v.states.Fork().Discover(v.root, v.spec.RuntimeRoots, v.spec.Namespaces)
}

// Boot is the host's boot time, for process start times.
func (v *Host) Boot() time.Time { return v.boot }

// Procs are the processes read, sorted by pid.
func (v *Host) Procs() []Proc { return v.procs }

// PIDs returns every pid Root/proc listed, sorted, in a new slice: those
// whose stat was denied or who went away before it was read too. A check
// that reads every process (leaked-netns) takes them instead of listing
// /proc again.
func (v *Host) PIDs() []int {
	pids := make([]int, len(v.listed))
	for i, e := range v.listed {
		pids[i] = e.PID
	}
	return pids
}

// Members is what container i (an index into Discovery().Containers)
// listed in its cgroups.
func (v *Host) Members(i int) *Members { return &v.members[i] }

// ListedBy returns the index of the container whose cgroup listed pid.
func (v *Host) ListedBy(pid int) (int, bool) {
	i, ok := v.listedBy.get(pid)
	return i, ok
}

// HostNS is the pid namespace of the root's pid 1; 0 when unreadable.
func (v *Host) HostNS() uint64 { return v.hostNS }

// InOtherPidNS are the processes read in a pid namespace that is known and
// not the host's, in pid order: containers' (nil when the host's is unknown).
func (v *Host) InOtherPidNS() []Proc {
	if v.hostNS == 0 {
		return nil
	}
	var out []Proc
	for _, p := range v.procs {
		if p.NS != 0 && p.NS != v.hostNS {
			out = append(out, p)
		}
	}
	return out
}

// Denied counts the processes whose stat could not be read (EACCES).
func (v *Host) Denied() int { return v.denied }

// Members are a container's expectations and, per expectation, the
// sorted pids its cgroup.procs listed.
type Members struct {
	// Exps are where the container's processes must be, one per hierarchy.
	Exps []Expectation
	// Unmapped are the state's cgroup keys on no hierarchy mounted here.
	Unmapped []string
	// Listed[j] are the pids the cgroup of Exps[j] listed, sorted, each
	// once.
	Listed [][]int
	// Absent[j]: the cgroup of Exps[j] does not exist (NoneExists).
	Absent []bool
	// any are the pids some hierarchy listed and all those every one did,
	// sorted: set once by index, so that the checks' per-process questions
	// are one search, not one per hierarchy.
	any, all []int
}

// InAll reports whether pid was listed in the container's cgroup in every
// hierarchy: then it is in place without reading /proc/<pid>/cgroup.
func (m *Members) InAll(pid int) bool {
	_, ok := slices.BinarySearch(m.all, pid)
	return ok
}

// Any returns the pids listed in some hierarchy, sorted, each once; the
// caller must not change it.
func (m *Members) Any() []int { return m.any }

// index sets any and all from Listed (each list sorted, each pid once).
func (m *Members) index() {
	n := 0
	for _, l := range m.Listed {
		n += len(l)
	}
	u := make([]int, 0, n)
	for _, l := range m.Listed {
		u = append(u, l...)
	}
	slices.Sort(u)
	m.any, m.all = u[:0], nil
	for i := 0; i < len(u); {
		j := i + 1
		for j < len(u) && u[j] == u[i] {
			j++
		}
		if j-i == len(m.Listed) {
			m.all = append(m.all, u[i])
		}
		m.any = append(m.any, u[i]) // never ahead of i: in place
		i = j
	}
}

// Proc is one process as the snapshot read it.
type Proc struct {
	PID int
	// NS is the pid namespace; 0 when not read: unreadable, a zombie, or
	// listed in a container cgroup (see Read).
	NS   uint64
	Stat procfs.Stat
	ok   bool
}

// scanWorkers splits the per-process reads: they are syscall-bound, and a
// cell has two or more cores.
const scanWorkers = 2

// Read reads the host, in this order: the cgroup layout, the runtime
// states, each container's cgroup.procs in each hierarchy, then stat of
// every process and the pid namespace of those not listed in any container
// cgroup (plus the inits). Listed processes are the bulk on a cell; their
// namespace is not needed, since being listed already ties them to their
// container.
func Read(s Spec) (*Host, error) { return read(s, nil) }

// read is Read; with c, through its caches (Incremental).
func read(s Spec, c *caches) (*Host, error) {
	root := hostroot.Dir(s.Root)
	v := &Host{root: root, spec: Spec{RuntimeRoots: s.RuntimeRoots, Namespaces: s.Namespaces}, proc: procfs.New(root)}
	var err error
	// The boot time first: a tree without proc/stat is named for that,
	// before anything reads a process.
	if v.boot, err = v.proc.BootTime(); err != nil {
		return nil, err
	}
	if v.layout, err = cgroup.Discover(root); err != nil {
		return nil, err
	}
	// Through a cache either way: Rediscover starts from what it knows.
	states := &runcstate.Cache{}
	if c != nil {
		states = &c.states
	}
	v.disc, err = states.Discover(root, s.RuntimeRoots, s.Namespaces)
	v.states = states.Fork()
	if err != nil {
		return nil, err
	}
	var known chan knownStats
	if s.Procs != nil && c == nil {
		known = make(chan knownStats, 1)
		go func() {
			st, err := s.Procs()
			byPID := func(a, b procfs.Stat) int { return a.PID - b.PID }
			if err == nil && !slices.IsSortedFunc(st, byPID) {
				slices.SortFunc(st, byPID)
			}
			known <- knownStats{st, err}
		}()
	}
	v.members = make([]Members, len(v.disc.Containers))
	if err := v.readMembers(); err != nil {
		return nil, err // known is buffered: its goroutine ends by itself
	}
	// Listing /proc (after the cgroup.procs reads, see above) overlaps
	// building the index below, which only indexes what was read.
	type listing struct {
		ents []procfs.Entry
		err  error
	}
	listed := make(chan listing, 1)
	go func() {
		ents, err := v.proc.Entries(make([]procfs.Entry, 0, 4096))
		sort.Slice(ents, func(i, j int) bool { return ents[i].PID < ents[j].PID })
		listed <- listing{ents, err}
	}()
	v.indexListed()
	l := <-listed
	if l.err != nil {
		return nil, l.err
	}
	v.listed = l.ents
	var stats []procfs.Stat
	if known != nil {
		k := <-known
		stats, v.statsErr = k.stats, k.err
	}
	if err := v.readProcs(l.ents, c, stats); err != nil {
		return nil, err
	}
	v.readHostNS()
	v.unlisted = v.unlistedOwners()
	v.readCgroups()
	return v, nil
}

// knownStats is what Spec.Procs returned.
type knownStats struct {
	stats []procfs.Stat
	err   error
}

// StatsErr is why Spec.Procs gave no stats (then every stat file was
// read); nil when it did, or there was none.
func (v *Host) StatsErr() error { return v.statsErr }

// readCgroups reads /proc/<pid>/cgroup of every process that is its
// container's by being its init, listed in some of its cgroups, or in its
// pid namespace (unlisted), and not listed in every hierarchy it has: the
// only processes whose place is not known from cgroup.procs. On a healthy
// cell that is none, so one reader suffices.
func (v *Host) readCgroups() {
	v.cgroups = map[int]cgroupFile{}
	r := v.proc.NewReader()
	defer r.Close()
	read := func(cm *Members, pid int) {
		if _, done := v.cgroups[pid]; done || cm.InAll(pid) {
			return
		}
		b, err := r.Cgroup(pid)
		v.cgroups[pid] = cgroupFile{b: append([]byte(nil), b...), err: err}
	}
	for i := range v.disc.Containers {
		cm := &v.members[i]
		if len(cm.Exps) == 0 {
			continue
		}
		if p := v.InitOf(&v.disc.Containers[i]); p != nil {
			read(cm, p.PID)
		}
		for _, pid := range v.unlisted[i] {
			read(cm, pid)
		}
		for _, pid := range cm.Any() {
			read(cm, pid)
		}
	}
}

// ErrNotRead means the snapshot holds no /proc/<pid>/cgroup for the pid:
// it was listed in every hierarchy of its container, or is no container's.
var ErrNotRead = errors.New("snapshot: cgroup of this process was not read")

// Cgroup returns /proc/<pid>/cgroup as Read saw it (see readCgroups), or
// the error reading it gave (procfs.IsGone, procfs.IsDenied), or
// ErrNotRead.
func (v *Host) Cgroup(pid int) ([]byte, error) {
	f, ok := v.cgroups[pid]
	if !ok {
		return nil, ErrNotRead
	}
	return f.b, f.err
}

// indexListed builds listedBy from the cgroup.procs read.
func (v *Host) indexListed() { v.listedBy = newPIDIndex(v.members) }

// readProcs reads stat of every pid (from stats, sorted by pid, where it
// has the pid), and the pid namespace of those no container cgroup lists
// and of the containers' inits, split over scanWorkers. Processes gone
// meanwhile are left out; those whose stat is denied are counted.
func (v *Host) readProcs(pids []procfs.Entry, c *caches, stats []procfs.Stat) error {
	inits := make(map[int]bool, len(v.disc.Containers))
	for i := range v.disc.Containers {
		if pid := v.disc.Containers[i].State.InitProcessPid; pid > 0 {
			inits[pid] = true
		}
	}
	if c != nil {
		c.procs.Next() // what the last read kept is what this one may reuse
	}
	procs := make([]Proc, len(pids))
	denied := make([]int, scanWorkers)
	err := striped(len(pids), func(w int) (func(i int) error, func()) {
		r := v.proc.NewReader()
		return func(i int) error {
			p, err := v.readProc(r, pids[i], inits, c, stats)
			switch {
			case procfs.IsDenied(err):
				denied[w]++
			case err != nil:
				return fmt.Errorf("scan processes: %w", err)
			}
			procs[i] = p
			return nil
		}, func() { r.Close() }
	})
	if err != nil {
		return err
	}
	v.procs = procs[:0]
	for _, p := range procs {
		if p.ok {
			v.procs = append(v.procs, p)
		}
	}
	for _, n := range denied {
		v.denied += n
	}
	return nil
}

// readProc reads one process: a zero Proc (not ok) when it is gone, an
// error matching procfs.IsDenied when its stat is not ours to read.
func (v *Host) readProc(r *procfs.Reader, e procfs.Entry, inits map[int]bool, c *caches, stats []procfs.Stat) (Proc, error) {
	pid := e.PID
	var st procfs.Stat
	var err error
	i, known := slices.BinarySearchFunc(stats, pid, func(s procfs.Stat, pid int) int { return s.PID - pid })
	switch {
	case known:
		st = stats[i]
	case c != nil:
		st, err = c.procs.Stat(r, e, v.reread(pid, inits))
	default:
		st, err = r.Stat(pid)
	}
	if procfs.IsGone(err) {
		return Proc{}, nil
	}
	if err != nil {
		return Proc{}, err
	}
	p := Proc{PID: pid, Stat: st, ok: true}
	if _, listed := v.listedBy.get(pid); inits[pid] || !listed {
		// Zombies have no namespaces, and a ptrace-protected process
		// hides them: both stay 0, "unknown".
		pidNS := r.PidNS
		if c != nil {
			pidNS = func(int) (uint64, error) { return c.procs.PidNS(r, e) }
		}
		if ns, err := pidNS(pid); err == nil {
			p.NS = ns
		} else if !procfs.IsGone(err) && !procfs.IsDenied(err) {
			return Proc{}, err
		}
	}
	return p, nil
}

// readHostNS reads the pid namespace of the root's pid 1.
func (v *Host) readHostNS() {
	r := v.proc.NewReader()
	defer r.Close()
	if ns, err := r.PidNS(1); err == nil {
		v.hostNS = ns
	} else if hostroot.IsLive(v.root) {
		// pid 1 may hide its namespaces (a sandbox's init does); ours is
		// the host's when we run on the host.
		if ns, err := r.PidNS(os.Getpid()); err == nil {
			v.hostNS = ns
		}
	}
}

// readMembers reads every container's cgroup.procs in every hierarchy it
// has a path in, split over scanWorkers.
func (v *Host) readMembers() error {
	return striped(len(v.disc.Containers), func(int) (func(i int) error, func()) {
		pr := v.layout.NewProcsReader()
		return func(i int) error {
			m := &v.members[i]
			m.Exps, m.Unmapped = v.Expectations(&v.disc.Containers[i])
			m.Listed = make([][]int, len(m.Exps))
			m.Absent = make([]bool, len(m.Exps))
			for j, e := range m.Exps {
				pids, err := pr.Read(e.Hierarchy, e.Rel)
				if errors.Is(err, cgroup.ErrNoCgroup) {
					m.Absent[j] = v.absent(e)
				} else if err != nil {
					return err
				}
				slices.Sort(pids)
				m.Listed[j] = slices.Compact(pids)
			}
			m.index()
			return nil
		}, pr.Close
	})
}

// striped runs each(i) for every 0 <= i < n on scanWorkers goroutines,
// worker w taking i = w, w+scanWorkers, ...; open gives worker w its each
// (over a reader of its own: readers are not safe for concurrent use) and
// what closes it. A worker stops at its first error; the errors are joined.
func striped(n int, open func(w int) (each func(i int) error, done func())) error {
	errs := make([]error, scanWorkers)
	var wg sync.WaitGroup
	for w := 0; w < scanWorkers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			each, done := open(w)
			defer done()
			for i := w; i < n; i += scanWorkers {
				if errs[w] = each(i); errs[w] != nil {
					return
				}
			}
		}(w)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// absent says whether the cgroup of e does not exist: its cgroup.procs
// could not be found, and neither can its directory (a cgroup being
// removed may lose cgroup.procs first).
func (v *Host) absent(e Expectation) bool {
	_, err := os.Stat(v.layout.Path(e.Hierarchy, e.Rel))
	return errors.Is(err, fs.ErrNotExist)
}

// NoneExists says whether none of the cgroups the container's state
// records exists. The runtime's record is then false: nothing made those
// cgroups (on v2 guardian's CPU throttler rewrites a privileged
// container's record to one), and no process can have left them. Where
// only some are missing (v1), they were made and removed since, and a
// process outside them escaped.
func (m *Members) NoneExists() bool {
	if len(m.Exps) == 0 {
		return false
	}
	for _, a := range m.Absent {
		if !a {
			return false
		}
	}
	return true
}

// Find returns the process pid as read, or nil.
func (v *Host) Find(pid int) *Proc {
	i := sort.Search(len(v.procs), func(i int) bool { return v.procs[i].PID >= pid })
	if i < len(v.procs) && v.procs[i].PID == pid {
		return &v.procs[i]
	}
	return nil
}

// InitOf returns the container's init process when it is alive and is the
// process runc started (same start time), else nil.
func (v *Host) InitOf(c *runcstate.Container) *Proc {
	st := c.State
	if st.InitProcessPid <= 0 {
		return nil
	}
	p := v.Find(st.InitProcessPid)
	if p == nil || p.Stat.StartTime != uint64(st.InitProcessStart) || p.Stat.State == 'Z' {
		return nil
	}
	return p
}

// PidNS returns the pid namespace the container's processes run in, or 0
// when it has none distinct from the host's. Containers that joined
// another's namespace (Garden's peas) share it.
func (v *Host) PidNS(c *runcstate.Container) uint64 {
	p := v.InitOf(c)
	if p == nil || p.NS == 0 || !c.State.HasPidNS() || p.NS == v.hostNS {
		return 0
	}
	return p.NS
}

// UnlistedOwners attributes the processes that run in a container's pid
// namespace but that no container cgroup lists (they escaped every
// hierarchy) to a container: the one whose init they are, else the nearest
// ancestor that is a container's init or is listed by a container, else the
// container that created the namespace. Garden's peas share their sandbox's
// namespace; ancestry keeps a pea's escapee the pea's.
func (v *Host) UnlistedOwners() map[int][]int { return v.unlisted }

func (v *Host) unlistedOwners() map[int][]int {
	initIdx := map[int]int{}
	creator := map[uint64]int{}
	for i := range v.disc.Containers {
		c := &v.disc.Containers[i]
		p := v.InitOf(c)
		if p == nil {
			continue
		}
		initIdx[p.PID] = i
		if ns := v.PidNS(c); ns != 0 && c.State.NewPidNS() {
			creator[ns] = i
		}
	}
	out := map[int][]int{}
	mnt := v.mountNS()
	defer mnt.close()
	for i := range v.procs {
		p := &v.procs[i]
		if p.NS == 0 {
			continue
		}
		if _, listed := v.listedBy.get(p.PID); listed {
			continue
		}
		if p.NS == v.hostNS {
			if owner, ok := v.hostNSOwner(p, initIdx, mnt); ok {
				out[owner] = append(out[owner], p.PID)
			}
			continue
		}
		owner, found := initIdx[p.PID]
		for cur, hops := p.Stat.PPID, 0; !found && cur > 1 && hops < 64; hops++ {
			if owner, found = initIdx[cur]; found {
				break
			}
			if owner, found = v.listedBy.get(cur); found {
				break
			}
			q := v.Find(cur)
			if q == nil || (q.NS != 0 && q.NS != p.NS) {
				break // left the namespace: a runtime process, not the container's
			}
			cur = q.Stat.PPID
		}
		if !found {
			owner, found = creator[p.NS]
		}
		if found {
			out[owner] = append(out[owner], p.PID)
		}
	}
	return out
}

// hostNSOwner attributes a process of the host's pid namespace that no
// container cgroup lists to the container without a pid namespace of its
// own whose init, or listed process, is its nearest such ancestor, when it
// shares that ancestor's mount namespace: a child a container's process
// forked, moved out of the container's cgroups. runc signals only cgroup
// members there, so it survives `runc kill --all` (measured with runc
// 1.3.4 and 1.0.0-rc94 on a v2 noble VM, issue 37). The mount namespace
// keeps out host processes that merely descend from one (nsenter'd out,
// or a runtime's helper): every runc container has one of its own.
func (v *Host) hostNSOwner(p *Proc, initIdx map[int]int, mnt *mountNSReader) (int, bool) {
	for cur, hops := p.Stat.PPID, 0; cur > 1 && hops < 64; hops++ {
		owner, found := initIdx[cur]
		if !found {
			owner, found = v.listedBy.get(cur)
		}
		if found {
			if v.disc.Containers[owner].State.HasPidNS() {
				return 0, false
			}
			want, ok := mnt.of(cur)
			got, ok2 := mnt.of(p.PID)
			return owner, ok && ok2 && want == got
		}
		q := v.Find(cur)
		if q == nil || (q.NS != 0 && q.NS != v.hostNS) {
			return 0, false
		}
		cur = q.Stat.PPID
	}
	return 0, false
}

// mountNSReader reads mount namespace inodes for hostNSOwner, only of the
// few processes it asks about; an unreadable link is no answer.
type mountNSReader struct {
	r *procfs.Reader
}

func (v *Host) mountNS() *mountNSReader { return &mountNSReader{r: v.proc.NewReader()} }

func (m *mountNSReader) of(pid int) (uint64, bool) {
	ns, err := m.r.NSInode(pid, "mnt")
	return ns, err == nil && ns != 0
}

func (m *mountNSReader) close() { m.r.Close() }

// Expectation is where a container's processes must be in one hierarchy.
type Expectation struct {
	Hierarchy *cgroup.Hierarchy
	Key       string // for Membership.Lookup
	Rel       string // cgroup path inside the hierarchy
}

// Expectations maps state.json cgroup_paths onto the host's hierarchies,
// one per hierarchy (runc records "cpu" and "cpuacct" separately even when
// they share one). Paths on hierarchies not mounted here are returned as
// unmapped.
func (v *Host) Expectations(c *runcstate.Container) (exps []Expectation, unmapped []string) {
	if c.CgroupPath != "" {
		// crun: one path, joined in every hierarchy mounted.
		rel := path.Clean("/" + c.CgroupPath)
		for _, h := range v.layout.Hierarchies {
			exps = append(exps, Expectation{Hierarchy: h, Key: h.Key(), Rel: rel})
		}
		return exps, nil
	}
	keys := make([]string, 0, len(c.State.CgroupPaths))
	for k := range c.State.CgroupPaths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	seen := map[*cgroup.Hierarchy]bool{}
	for _, k := range keys {
		h, rel, ok := v.layout.Split(c.State.CgroupPaths[k])
		// The key must name the hierarchy the path is in: on a v2 host
		// /sys/fs/cgroup/memory/x is a v2 cgroup named "memory", not v1's.
		if !ok || v.layout.ForKey(k) != h {
			unmapped = append(unmapped, k)
			continue
		}
		if seen[h] {
			continue
		}
		seen[h] = true
		exps = append(exps, Expectation{Hierarchy: h, Key: h.Key(), Rel: rel})
	}
	return exps, unmapped
}
