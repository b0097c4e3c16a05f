package limits

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
)

// Spec says where to read: the root prefix ("" or "/" is the live host)
// and the runtime roots and containerd namespaces (empty: runcstate's
// standard roots, every namespace).
type Spec struct {
	Root         string
	RuntimeRoots []string
	Namespaces   []string
}

// Read reads the facts under s.Root. An error means nothing could be read
// (no cgroup layout, an unlistable runtime root); a container or process
// that could not be read is in Facts.
func Read(s Spec) (*Facts, error) {
	layout, err := cgroup.Discover(s.Root)
	if err != nil {
		return nil, fmt.Errorf("read cgroup layout: %w", err)
	}
	disc, err := runcstate.Discover(s.Root, s.RuntimeRoots, s.Namespaces)
	if err != nil {
		return nil, fmt.Errorf("find runtime states: %w", err)
	}
	r := reader{l: layout, proc: procfs.New(s.Root).NewReader(), files: map[string]fileRead{}, levels: map[[2]string][]Level{}}
	defer r.proc.Close()
	f := &Facts{Unified: layout.Mode == cgroup.Unified}
	for _, p := range disc.Problems {
		f.Problems = append(f.Problems, fmt.Sprintf("read %s: %v", p.Path, p.Err))
	}
	for i := range disc.Containers {
		c := &disc.Containers[i]
		if !r.running(c) {
			continue // created, or gone: runtime-ghosts judges those
		}
		f.Containers++
		ps, err := r.container(c, f.Unified)
		if err != nil {
			f.Problems = append(f.Problems, fmt.Sprintf("read limits of %s: %v", c.Name(), err))
			continue
		}
		f.Processes = append(f.Processes, ps...)
	}
	return f, nil
}

type reader struct {
	l    *cgroup.Layout
	proc *procfs.Reader
	// files caches cgroup files by path: a cell's containers share their
	// parents, read once per run.
	files map[string]fileRead
	// levels caches each cgroup's levels by hierarchy key and cgroup: a
	// container's processes mostly share one (read-only once made).
	levels map[[2]string][]Level
}

type fileRead struct {
	content string
	exists  bool
	err     error
}

// running reports whether c's init is the process runc started.
func (r *reader) running(c *runcstate.Container) bool {
	if c.Created || c.State == nil || c.State.InitProcessPid <= 0 {
		return false
	}
	st, err := r.proc.Stat(c.State.InitProcessPid)
	return err == nil && st.StartTime == uint64(c.State.InitProcessStart)
}

// container reads the limits c recorded and, when it recorded any, each
// of its processes: its init and every process in the cgroup.procs of its
// recorded cgroup and of the cgroup its init is in now.
func (r *reader) container(c *runcstate.Container, unified bool) ([]Process, error) {
	var res Resources
	if c.State.Config.Cgroups != nil {
		res = c.State.Config.Cgroups.Resources
	}
	wants := Expected(unified, res)
	if len(wants) == 0 {
		return nil, nil
	}
	keys := keysOf(wants, unified)
	h, expected, ok := r.recorded(c, keys[0])
	if !ok {
		return nil, fmt.Errorf("no recorded cgroup for %q in %s", keys[0], c.StatePath)
	}
	// On v2 a pid that a cgroup's cgroup.procs lists is in that cgroup:
	// where says so, and spares its /proc/<pid>/cgroup (a cell has
	// thousands). On v1 a pid listed in the recorded cgroup of every
	// hierarchy the wants need is in each: inAll says so, and the others'
	// /proc/<pid>/cgroup is read.
	var where map[int]string
	var inAll map[int]bool
	var recorded []Path
	var recordedErr error
	if unified {
		where = map[int]string{}
	} else {
		inAll = r.listedInAll(c, keys)
	}
	init := c.State.InitProcessPid
	pids := []int{init}
	pids = r.appendProcs(pids, h, expected, where)
	if p, err := r.proc.Cgroup(init); err == nil {
		var m cgroup.Membership
		if cgroup.ParseProcCgroup(p, &m) == nil {
			if now, ok := m.Lookup(keys[0]); ok && string(now) != expected {
				pids = r.appendProcs(pids, h, string(now), where)
			}
		}
	}
	slices.Sort(pids)
	pids = slices.Compact(pids)
	var ps []Process
	for _, pid := range pids {
		p := Process{PID: pid, Container: c.Name(), StatePath: c.StatePath, Expected: expected, Recorded: res, Wants: wants}
		var paths []Path
		var err error
		if cg, ok := where[pid]; ok {
			paths, err = r.listed(h, cg)
		} else if inAll[pid] {
			if recorded == nil && recordedErr == nil {
				recorded, recordedErr = r.recordedPaths(c, keys)
			}
			paths, err = recorded, recordedErr
		} else {
			paths, err = r.paths(pid, keys)
		}
		if procfs.IsGone(err) {
			continue // exited since the listing
		}
		if err != nil {
			p.Err = err.Error()
		}
		p.Paths = paths
		ps = append(ps, p)
	}
	return ps, nil
}

// keysOf are the hierarchies the wants need: "" on v2, else each v1
// controller, in the wants' order.
func keysOf(wants []Want, unified bool) []string {
	if unified {
		return []string{""}
	}
	var keys []string
	for _, w := range wants {
		if !slices.Contains(keys, w.Controller) {
			keys = append(keys, w.Controller)
		}
	}
	return keys
}

// recorded is c's cgroup in the hierarchy of key as its state records it.
func (r *reader) recorded(c *runcstate.Container, key string) (*cgroup.Hierarchy, string, bool) {
	abs, ok := c.State.CgroupPaths[key]
	if !ok {
		return nil, "", false
	}
	h, rel, ok := r.l.Split(abs)
	return h, rel, ok
}

// appendProcs appends the pids in cgroup rel of h, noting each in where
// (when not nil); a cgroup that is gone or unreadable adds none (the
// process's own read says what is wrong).
func (r *reader) appendProcs(pids []int, h *cgroup.Hierarchy, rel string, where map[int]string) []int {
	n := len(pids)
	_, pids, _ = cgroup.ReadProcs(r.l.Path(h, rel), nil, pids)
	if where != nil {
		for _, pid := range pids[n:] {
			where[pid] = rel
		}
	}
	return pids
}

// listedInAll are the pids listed in c's recorded cgroup of every
// hierarchy of keys (v1).
func (r *reader) listedInAll(c *runcstate.Container, keys []string) map[int]bool {
	count := map[int]int{}
	var pids []int
	for _, key := range keys {
		h, rel, ok := r.recorded(c, key)
		if !ok {
			return nil
		}
		_, pids, _ = cgroup.ReadProcs(r.l.Path(h, rel), nil, pids[:0])
		for _, pid := range pids {
			count[pid]++
		}
	}
	in := make(map[int]bool, len(count))
	for pid, n := range count {
		if n == len(keys) {
			in[pid] = true
		}
	}
	return in
}

// recordedPaths are the v1 Paths of a process in c's recorded cgroup of
// every hierarchy of keys; the slice is shared by those processes.
func (r *reader) recordedPaths(c *runcstate.Container, keys []string) ([]Path, error) {
	var ps []Path
	for _, key := range keys {
		h, rel, ok := r.recorded(c, key)
		if !ok {
			return nil, fmt.Errorf("no recorded cgroup for %q in %s", key, c.StatePath)
		}
		lvs, err := r.levelsOf(h, rel, key)
		if err != nil {
			return ps, err
		}
		ps = append(ps, Path{Key: key, Cgroup: rel, Levels: lvs})
	}
	return ps, nil
}

// listed is the v2 Path of a process cgroup.procs listed in cg.
func (r *reader) listed(h *cgroup.Hierarchy, cg string) ([]Path, error) {
	lvs, err := r.levelsOf(h, cg, "")
	if err != nil {
		return nil, err
	}
	return []Path{{Key: "", Cgroup: cg, Levels: lvs}}, nil
}

// paths reads pid's cgroup in each hierarchy of keys and the levels of
// each.
func (r *reader) paths(pid int, keys []string) ([]Path, error) {
	b, err := r.proc.Cgroup(pid)
	if err != nil {
		return nil, err
	}
	var m cgroup.Membership
	if err := cgroup.ParseProcCgroup(b, &m); err != nil {
		return nil, fmt.Errorf("parse /proc/%d/cgroup: %w", pid, err)
	}
	var ps []Path
	for _, key := range keys {
		cg, ok := m.Lookup(key)
		if !ok {
			continue // in no such hierarchy: the judge says so
		}
		h := r.l.ForKey(key)
		if h == nil {
			return ps, fmt.Errorf("no mounted hierarchy for %q", key)
		}
		p := Path{Key: key, Cgroup: string(cg)}
		lvs, err := r.levelsOf(h, p.Cgroup, key)
		if err != nil {
			return ps, err
		}
		p.Levels = lvs
		ps = append(ps, p)
	}
	return ps, nil
}

// levelsOf is every level from the first below the root down to cg, in
// the hierarchy of key; the slice is shared by the processes in cg.
func (r *reader) levelsOf(h *cgroup.Hierarchy, cg, key string) ([]Level, error) {
	k := [2]string{key, cg}
	if lvs, ok := r.levels[k]; ok {
		return lvs, nil
	}
	var lvs []Level
	for _, rel := range ancestry(cg) {
		lv, err := r.level(h, rel, key)
		if err != nil {
			return nil, err
		}
		lvs = append(lvs, lv)
	}
	r.levels[k] = lvs
	return lvs, nil
}

// ancestry lists the cgroups from the first below the root down to cg:
// "/a/b" is ["/a", "/a/b"]; the root is none.
func ancestry(cg string) []string {
	var out []string
	for i := 1; i < len(cg); i++ {
		if cg[i] == '/' {
			out = append(out, cg[:i])
		}
	}
	if cg != "/" && cg != "" {
		out = append(out, cg)
	}
	return out
}

// wantFiles are the files a level may be asked for.
var wantFiles = map[string][]string{
	"":       {"memory.max", "memory.swap.max", "pids.max", "cpu.weight", "cpu.max", "io.weight", "io.bfq.weight"},
	"memory": {"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"},
	"pids":   {"pids.max"},
	"cpu":    {"cpu.shares", "cpu.cfs_quota_us", "cpu.cfs_period_us"},
	"blkio":  {"blkio.weight", "blkio.bfq.weight"},
}

// level reads one cgroup's limit files and, on v2, its parent's
// subtree_control.
func (r *reader) level(h *cgroup.Hierarchy, rel, key string) (Level, error) {
	lv := Level{Cgroup: rel, Files: map[string]string{}}
	dir := r.l.Path(h, rel)
	for _, name := range wantFiles[key] {
		fr := r.file(path.Join(dir, name))
		if fr.err != nil {
			return lv, fr.err
		}
		if fr.exists {
			lv.Files[name] = fr.content
		}
	}
	if h.Unified {
		fr := r.file(path.Join(path.Dir(dir), "cgroup.subtree_control"))
		if fr.err != nil {
			return lv, fr.err
		}
		lv.ParentEnables = strings.Fields(fr.content)
		if lv.ParentEnables == nil {
			lv.ParentEnables = []string{}
		}
	}
	return lv, nil
}

func (r *reader) file(p string) fileRead {
	if fr, ok := r.files[p]; ok {
		return fr
	}
	b, err := os.ReadFile(p)
	fr := fileRead{content: strings.TrimSpace(string(b)), exists: err == nil}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		fr.err = fmt.Errorf("read %s: %w", p, err)
	}
	r.files[p] = fr
	return fr
}
