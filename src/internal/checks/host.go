package checks

import (
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
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
	// hostNS is the pid namespace of the root's pid 1: a container "in"
	// it has no pid namespace of its own.
	hostNS uint64
	// denied counts processes whose stat could not be read (EACCES).
	denied int
}

type proc struct {
	pid  int
	ns   uint64 // 0 when unreadable (zombies have none)
	stat procfs.Stat
}

func (h *host) get() (*view, error) {
	h.once.Do(func() { h.v, h.err = scan(h.d) })
	return h.v, h.err
}

func scan(d Deps) (*view, error) {
	root := d.root()
	v := &view{root: root, proc: procfs.New(root)}
	var err error
	if v.layout, err = cgroup.Discover(root); err != nil {
		return nil, err
	}
	if v.disc, err = runcstate.Discover(root, d.RuntimeRoots, d.Namespaces); err != nil {
		return nil, err
	}
	if v.boot, err = v.proc.BootTime(); err != nil {
		return nil, err
	}
	pids, err := v.proc.PIDs(make([]int, 0, 4096))
	if err != nil {
		return nil, err
	}
	sort.Ints(pids)
	r := v.proc.NewReader()
	v.procs = make([]proc, 0, len(pids))
	for _, pid := range pids {
		st, err := r.Stat(pid)
		if err != nil {
			if procfs.IsGone(err) {
				continue
			}
			if procfs.IsDenied(err) {
				v.denied++
				continue
			}
			return nil, fmt.Errorf("scan processes: %w", err)
		}
		p := proc{pid: pid, stat: st}
		// Zombies have no namespaces, and a ptrace-protected process
		// hides them: both stay at 0, "unknown".
		if ns, err := r.PidNS(pid); err == nil {
			p.ns = ns
		} else if !procfs.IsGone(err) && !procfs.IsDenied(err) {
			return nil, fmt.Errorf("scan processes: %w", err)
		}
		v.procs = append(v.procs, p)
	}
	if p := v.find(1); p != nil && p.ns != 0 {
		v.hostNS = p.ns
	} else if root == "/" {
		// pid 1 may hide its namespaces (a sandbox's init does); ours is
		// the host's when we run on the host.
		if ns, err := r.PidNS(os.Getpid()); err == nil {
			v.hostNS = ns
		}
	}
	return v, nil
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

// ownNS returns the pid namespace that identifies the container's
// processes, or 0 when it has none distinct from the host's.
func (v *view) ownNS(c *runcstate.Container) uint64 {
	p := v.initOf(c)
	if p == nil || p.ns == 0 || !c.State.HasPidNS() || p.ns == v.hostNS {
		return 0
	}
	return p.ns
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

func (d Deps) root() string {
	if d.Root == "" {
		return "/"
	}
	return d.Root
}

func (d Deps) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}
