package checks

import (
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"sync"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
)

// host is one scan of the host, shared by the checks of one run: listing
// /proc and decoding every state file once keeps a cell with thousands of
// processes inside the drain budget.
type host struct {
	d    Deps
	once sync.Once
	v    *view
	err  error
}

func newHost(d Deps) *host { return &host{d: d} }

// view is what the scan saw.
type view struct {
	root   string
	proc   procfs.FS
	layout *cgroup.Layout
	disc   *runcstate.Discovery
	boot   time.Time
	// procs holds every process that could be read, sorted by pid.
	procs []proc
	// members[i] is what the cgroup.procs files of container i list.
	members []cgroupMembers
	// listedBy maps every pid some container cgroup lists (in any
	// hierarchy) to that container's index.
	listedBy map[int]int
	// hostNS is the pid namespace of the root's pid 1: a container "in"
	// it has no pid namespace of its own.
	hostNS uint64
	// denied counts processes whose stat could not be read (EACCES).
	denied int
}

// cgroupMembers are the container's expectations and, per expectation, the
// sorted pids its cgroup.procs listed.
type cgroupMembers struct {
	exps     []expectation
	unmapped []string
	listed   [][]int
}

// inAll reports whether pid was listed in the container's cgroup in every
// hierarchy: then it is in place without reading /proc/<pid>/cgroup.
func (m *cgroupMembers) inAll(pid int) bool {
	for _, l := range m.listed {
		i := sort.SearchInts(l, pid)
		if i == len(l) || l[i] != pid {
			return false
		}
	}
	return len(m.listed) > 0
}

type proc struct {
	pid  int
	ns   uint64 // 0 when not read: unreadable, a zombie, or in a container cgroup
	stat procfs.Stat
	ok   bool
}

func (h *host) get() (*view, error) {
	h.once.Do(func() { h.v, h.err = scan(h.d) })
	return h.v, h.err
}

// scanWorkers splits the per-process reads: they are syscall-bound, and a
// cell has two or more cores.
const scanWorkers = 2

// scan reads, in this order: the cgroup layout, the runtime states, each
// container's cgroup.procs in each hierarchy, then stat of every process and
// the pid namespace of those not listed in any container cgroup (plus the
// inits). Listed processes are the bulk on a cell; their namespace is not
// needed, since being listed already ties them to their container.
func scan(d Deps) (*view, error) {
	root := hostroot.Dir(d.Root)
	v := &view{root: root, proc: procfs.New(root)}
	var err error
	// The boot time first: a tree without proc/stat is named for that,
	// before anything reads a process.
	if v.boot, err = v.proc.BootTime(); err != nil {
		return nil, err
	}
	if v.layout, err = cgroup.Discover(root); err != nil {
		return nil, err
	}
	if v.disc, err = runcstate.Discover(root, d.RuntimeRoots, d.Namespaces); err != nil {
		return nil, err
	}
	v.members = make([]cgroupMembers, len(v.disc.Containers))
	if err := v.readMembers(); err != nil {
		return nil, err
	}
	// Listing /proc (after the cgroup.procs reads, see above) overlaps
	// building the maps below, which only index what was read.
	type listing struct {
		pids []int
		err  error
	}
	listed := make(chan listing, 1)
	go func() {
		pids, err := v.proc.PIDs(make([]int, 0, 4096))
		sort.Ints(pids)
		listed <- listing{pids, err}
	}()
	n := 0
	for i := range v.members {
		if ls := v.members[i].listed; len(ls) > 0 {
			n += len(ls[0])
		}
	}
	v.listedBy = make(map[int]int, n)
	for i := range v.members {
		for _, l := range v.members[i].listed {
			for _, pid := range l {
				if _, ok := v.listedBy[pid]; !ok {
					v.listedBy[pid] = i
				}
			}
		}
	}
	inits := make(map[int]bool, len(v.disc.Containers))
	for i := range v.disc.Containers {
		if pid := v.disc.Containers[i].State.InitProcessPid; pid > 0 {
			inits[pid] = true
		}
	}
	l := <-listed
	if l.err != nil {
		return nil, l.err
	}
	pids := l.pids
	procs := make([]proc, len(pids))
	errs := make([]error, scanWorkers)
	denied := make([]int, scanWorkers)
	var wg sync.WaitGroup
	for w := 0; w < scanWorkers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := v.proc.NewReader()
			defer r.Close()
			for i := w; i < len(pids); i += scanWorkers {
				pid := pids[i]
				st, err := r.Stat(pid)
				if err != nil {
					if procfs.IsGone(err) {
						continue
					}
					if procfs.IsDenied(err) {
						denied[w]++
						continue
					}
					errs[w] = fmt.Errorf("scan processes: %w", err)
					return
				}
				p := proc{pid: pid, stat: st, ok: true}
				if _, listed := v.listedBy[pid]; inits[pid] || !listed {
					// Zombies have no namespaces, and a ptrace-protected
					// process hides them: both stay 0, "unknown".
					if ns, err := r.PidNS(pid); err == nil {
						p.ns = ns
					} else if !procfs.IsGone(err) && !procfs.IsDenied(err) {
						errs[w] = fmt.Errorf("scan processes: %w", err)
						return
					}
				}
				procs[i] = p
			}
		}(w)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
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
	r := v.proc.NewReader()
	defer r.Close()
	if ns, err := r.PidNS(1); err == nil {
		v.hostNS = ns
	} else if hostroot.IsLive(root) {
		// pid 1 may hide its namespaces (a sandbox's init does); ours is
		// the host's when we run on the host.
		if ns, err := r.PidNS(os.Getpid()); err == nil {
			v.hostNS = ns
		}
	}
	return v, nil
}

// readMembers reads every container's cgroup.procs in every hierarchy it
// has a path in, split over scanWorkers.
func (v *view) readMembers() error {
	errs := make([]error, scanWorkers)
	var wg sync.WaitGroup
	for w := 0; w < scanWorkers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			pr := v.layout.NewProcsReader()
			defer pr.Close()
			for i := w; i < len(v.disc.Containers); i += scanWorkers {
				m := &v.members[i]
				m.exps, m.unmapped = v.expectations(&v.disc.Containers[i])
				m.listed = make([][]int, len(m.exps))
				for j, e := range m.exps {
					pids, err := pr.Read(e.h, e.rel)
					if err != nil && !errors.Is(err, cgroup.ErrNoCgroup) {
						errs[w] = err
						return
					}
					sort.Ints(pids)
					m.listed[j] = pids
				}
			}
		}(w)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// find returns the scanned process pid, or nil.
func (v *view) find(pid int) *proc {
	i := sort.Search(len(v.procs), func(i int) bool { return v.procs[i].pid >= pid })
	if i < len(v.procs) && v.procs[i].pid == pid {
		return &v.procs[i]
	}
	return nil
}

// initOf returns the container's init process when it is alive and is the
// process runc started (same start time), else nil.
func (v *view) initOf(c *runcstate.Container) *proc {
	st := c.State
	if st.InitProcessPid <= 0 {
		return nil
	}
	p := v.find(st.InitProcessPid)
	if p == nil || p.stat.StartTime != uint64(st.InitProcessStart) || p.stat.State == 'Z' {
		return nil
	}
	return p
}

// pidNS returns the pid namespace the container's processes run in, or 0
// when it has none distinct from the host's. Containers that joined
// another's namespace (Garden's peas) share it.
func (v *view) pidNS(c *runcstate.Container) uint64 {
	p := v.initOf(c)
	if p == nil || p.ns == 0 || !c.State.HasPidNS() || p.ns == v.hostNS {
		return 0
	}
	return p.ns
}

// unlistedOwners attributes the processes that run in a container's pid
// namespace but that no container cgroup lists (they escaped every
// hierarchy) to a container: the one whose init they are, else the nearest
// ancestor that is a container's init or is listed by a container, else the
// container that created the namespace. Garden's peas share their sandbox's
// namespace; ancestry keeps a pea's escapee the pea's.
func (v *view) unlistedOwners() map[int][]int {
	initIdx := map[int]int{}
	creator := map[uint64]int{}
	for i := range v.disc.Containers {
		c := &v.disc.Containers[i]
		p := v.initOf(c)
		if p == nil {
			continue
		}
		initIdx[p.pid] = i
		if ns := v.pidNS(c); ns != 0 && c.State.NewPidNS() {
			creator[ns] = i
		}
	}
	out := map[int][]int{}
	for i := range v.procs {
		p := &v.procs[i]
		if p.ns == 0 || p.ns == v.hostNS {
			continue
		}
		if _, listed := v.listedBy[p.pid]; listed {
			continue
		}
		owner, found := initIdx[p.pid]
		for cur, hops := p.stat.PPID, 0; !found && cur > 1 && hops < 64; hops++ {
			if owner, found = initIdx[cur]; found {
				break
			}
			if owner, found = v.listedBy[cur]; found {
				break
			}
			q := v.find(cur)
			if q == nil || (q.ns != 0 && q.ns != p.ns) {
				break // left the namespace: a runtime process, not the container's
			}
			cur = q.stat.PPID
		}
		if !found {
			owner, found = creator[p.ns]
		}
		if found {
			out[owner] = append(out[owner], p.pid)
		}
	}
	return out
}

// expectation is where a container's processes must be in one hierarchy.
type expectation struct {
	h   *cgroup.Hierarchy
	key string // for Membership.Lookup
	rel string // cgroup path inside the hierarchy
}

// expectations maps state.json cgroup_paths onto the host's hierarchies,
// one per hierarchy (runc records "cpu" and "cpuacct" separately even when
// they share one). Paths on hierarchies not mounted here are returned as
// unmapped.
func (v *view) expectations(c *runcstate.Container) (exps []expectation, unmapped []string) {
	if c.CgroupPath != "" {
		// crun: one path, joined in every hierarchy mounted.
		rel := path.Clean("/" + c.CgroupPath)
		for _, h := range v.layout.Hierarchies {
			exps = append(exps, expectation{h: h, key: h.Key(), rel: rel})
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
		exps = append(exps, expectation{h: h, key: h.Key(), rel: rel})
	}
	return exps, unmapped
}
