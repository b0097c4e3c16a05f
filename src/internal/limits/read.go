package limits

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
)

// Read reads the facts of the containers in the run's snapshot v. v says
// which containers there are and which run (the init is the process runc
// started), which processes are each one's (its init, what its recorded
// cgroups list, what runs in its pid namespace unlisted) and the
// /proc/<pid>/cgroup of those it did not find listed everywhere: read
// once, for every check. Read adds what only limits-intact needs: the
// files of the limits each runtime recorded, along each process's
// cgroups, with the parents' cgroup.subtree_control on v2.
func Read(v *snapshot.Host) *Facts {
	r := reader{v: v, l: v.Layout(), cg: v.Layout().NewProcsReader(),
		files: map[fileKey]fileRead{}, levels: map[levelKey][]Level{}, procs: map[procsKey][]int{}}
	defer r.close()
	f := &Facts{Unified: r.l.Mode == cgroup.Unified}
	disc := v.Discovery()
	for _, p := range disc.Problems {
		f.Problems = append(f.Problems, fmt.Sprintf("read %s: %v", p.Path, p.Err))
	}
	// A cell has thousands of container processes: room for those the
	// snapshot listed, so that appending does not copy them again.
	n, unlisted := 0, v.UnlistedOwners()
	for i := range disc.Containers {
		n += 1 + len(v.Members(i).Any()) + len(unlisted[i])
	}
	f.Processes = make([]Process, 0, n)
	for i := range disc.Containers {
		c := &disc.Containers[i]
		if !r.running(c) {
			continue // created, or gone: runtime-ghosts judges those
		}
		f.Containers++
		var err error
		if f.Processes, err = r.container(f.Processes, v.Members(i), unlisted[i], c, f.Unified); err != nil {
			f.Problems = append(f.Problems, fmt.Sprintf("read limits of %s: %v", c.Name(), err))
		}
	}
	return f
}

type reader struct {
	v *snapshot.Host
	l *cgroup.Layout
	// cg reads cgroup files relative to each hierarchy's directory.
	cg *cgroup.ProcsReader
	// proc reads the /proc/<pid>/cgroup the snapshot did not; opened on
	// first use (a healthy cell needs none). cgroups keeps what it read.
	proc    *procfs.Reader
	cgroups map[int]cgroupRead
	// files caches cgroup files: a cell's containers share their
	// parents, read once per run.
	files map[fileKey]fileRead
	// levels caches each cgroup's levels (read-only once made): a
	// container's processes mostly share one.
	levels map[levelKey][]Level
	// procs caches the cgroup.procs read here, sorted, each pid once: the
	// recorded cgroups the snapshot did not list.
	procs map[procsKey][]int
}

// levelKey names one cgroup's levels: the hierarchy's key, the cgroup, and
// the files read at each level (fileSet.names joined).
type levelKey struct{ key, cgroup, files string }

type procsKey struct {
	h   *cgroup.Hierarchy
	rel string
}

// fileKey names file name of cgroup rel in hierarchy h.
type fileKey struct {
	h         *cgroup.Hierarchy
	rel, name string
}

type cgroupRead struct {
	b   []byte
	err error
}

type fileRead struct {
	content string
	exists  bool
	err     error
}

func (r *reader) close() {
	r.cg.Close()
	if r.proc != nil {
		r.proc.Close()
	}
}

// running reports whether c's init is the process runc started.
func (r *reader) running(c *runcstate.Container) bool {
	if c.Created || c.State == nil || c.State.InitProcessPid <= 0 {
		return false
	}
	p := r.v.Find(c.State.InitProcessPid)
	return p != nil && p.Stat.StartTime == uint64(c.State.InitProcessStart)
}

// fileSet is what a container's wants read in one hierarchy: their files
// (File and AltFile), and those names joined, as a cache key.
type fileSet struct {
	names []string
	key   string
}

// container appends to ps the limits c recorded and, when it recorded
// any, each of its processes: its init, every process the cgroup.procs of
// its recorded cgroups list (m: the snapshot's listings) and those of its
// pid namespace no container cgroup lists (unlisted: the snapshot's
// attribution, which follows Garden's throttling to bad/<h>). Never the
// rest of a cgroup an escaped init is in now: that is Garden's unit's on
// an escaped cell, listing the daemon and every other escapee.
func (r *reader) container(ps []Process, m *snapshot.Members, unlisted []int, c *runcstate.Container, unified bool) ([]Process, error) {
	var res Resources
	if c.State.Config.Cgroups != nil {
		res = c.State.Config.Cgroups.Resources
	}
	wants := Expected(unified, res)
	if len(wants) == 0 {
		return ps, nil
	}
	cr := containerRead{r: r, c: c, unified: unified}
	cr.keys, cr.sets = keysOf(wants, unified)
	cr.recs = make([]recordedCgroup, len(cr.keys))
	for i, key := range cr.keys {
		cr.recs[i].h, cr.recs[i].rel, cr.recs[i].ok = r.recorded(c, key)
	}
	h, expected := cr.recs[0].h, cr.recs[0].rel
	if !cr.recs[0].ok {
		return ps, fmt.Errorf("no recorded cgroup for %q in %s", cr.keys[0], c.StatePath)
	}
	// A pid that a cgroup's cgroup.procs lists is in that cgroup: on v2
	// that is its one Path, and spares its /proc/<pid>/cgroup (a cell
	// has thousands). On v1 a pid listed in the recorded cgroup of every
	// hierarchy the wants need (inAll) is in each; the others'
	// /proc/<pid>/cgroup is read.
	cr.listed = []listedIn{{cgroup: expected, pids: r.listing(m, h, expected)}}
	if !unified {
		cr.inAll = r.listedInAll(m, cr.recs)
	}
	pids := make([]int, 0, 1+len(m.Any())+len(cr.listed[0].pids)+len(unlisted))
	pids = append(pids, c.State.InitProcessPid)
	pids = append(pids, m.Any()...)
	pids = append(pids, cr.listed[0].pids...) // when the snapshot did not list it
	pids = append(pids, unlisted...)
	slices.Sort(pids)
	name := c.Name()
	for _, pid := range slices.Compact(pids) {
		paths, err := cr.paths(pid)
		if procfs.IsGone(err) {
			continue // exited since the listing
		}
		p := Process{PID: pid, Container: name, StatePath: c.StatePath, Expected: expected, Recorded: res, Wants: wants, Paths: paths}
		if err != nil {
			p.Err = err.Error()
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// recordedCgroup is a container's cgroup in one hierarchy as its state
// records it; ok false when it records none there.
type recordedCgroup struct {
	h   *cgroup.Hierarchy
	rel string
	ok  bool
}

// listedIn is a cgroup and the pids its cgroup.procs lists.
type listedIn struct {
	cgroup string
	pids   []int
	paths  []Path // made once, shared by those pids (v2)
	err    error
}

// containerRead is what container knows of one container while it reads
// its processes' paths.
type containerRead struct {
	r       *reader
	c       *runcstate.Container
	unified bool
	keys    []string         // the hierarchies its wants need
	sets    []fileSet        // the files read in each
	recs    []recordedCgroup // its recorded cgroup in each
	// listed is the recorded cgroup, whose listing places a pid on v2.
	listed []listedIn
	// inAll are the pids every recorded cgroup of keys lists (v1);
	// recorded is their Paths, made once.
	inAll       []int
	recorded    []Path
	recordedErr error
	recordedSet bool
}

// paths are pid's Paths: from a listing when one places it, else from its
// /proc/<pid>/cgroup.
func (cr *containerRead) paths(pid int) ([]Path, error) {
	if cr.unified {
		for i := range cr.listed {
			l := &cr.listed[i]
			if !has(l.pids, pid) {
				continue
			}
			if l.paths == nil && l.err == nil {
				l.paths, l.err = cr.r.listed(cr.recs[0].h, l.cgroup, cr.sets[0])
			}
			return l.paths, l.err
		}
	}
	if has(cr.inAll, pid) {
		if !cr.recordedSet {
			cr.recorded, cr.recordedErr = cr.r.recordedPaths(cr.c, cr.keys, cr.recs, cr.sets)
			cr.recordedSet = true
		}
		return cr.recorded, cr.recordedErr
	}
	return cr.r.paths(pid, cr.keys, cr.sets)
}

// has reports whether sorted pids holds pid.
func has(pids []int, pid int) bool {
	_, ok := slices.BinarySearch(pids, pid)
	return ok
}

// keysOf are the hierarchies the wants need, "" on v2, else each v1
// controller, in the wants' order; and, for each, the files they read.
func keysOf(wants []Want, unified bool) ([]string, []fileSet) {
	var keys []string
	var sets []fileSet
	for _, w := range wants {
		key := w.Controller
		if unified {
			key = ""
		}
		i := slices.Index(keys, key)
		if i < 0 {
			keys, sets = append(keys, key), append(sets, fileSet{})
			i = len(keys) - 1
		}
		for _, f := range w.Files() {
			if !slices.Contains(sets[i].names, f) {
				sets[i].names = append(sets[i].names, f)
			}
		}
	}
	for i := range sets {
		sets[i].key = strings.Join(sets[i].names, ",")
	}
	return keys, sets
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

// listing is the pids cgroup rel of h lists, sorted, each once: the
// snapshot's when it read that cgroup for the container (m), else read
// here; a cgroup that is gone or unreadable lists none (the process's own
// read says what is wrong). The slice is shared: never written.
func (r *reader) listing(m *snapshot.Members, h *cgroup.Hierarchy, rel string) []int {
	for j, e := range m.Exps {
		if e.Hierarchy == h && e.Rel == rel {
			return m.Listed[j]
		}
	}
	k := procsKey{h, rel}
	if pids, ok := r.procs[k]; ok {
		return pids
	}
	_, pids, _ := cgroup.ReadProcs(r.l.Path(h, rel), nil, nil)
	slices.Sort(pids)
	pids = slices.Compact(pids)
	r.procs[k] = pids
	return pids
}

// procCgroup is /proc/<pid>/cgroup: the snapshot's read of it, or, when
// it made none, a read of its own, made once. The slice is shared: never
// written.
func (r *reader) procCgroup(pid int) ([]byte, error) {
	b, err := r.v.Cgroup(pid)
	if !errors.Is(err, snapshot.ErrNotRead) {
		return b, err
	}
	if cr, ok := r.cgroups[pid]; ok {
		return cr.b, cr.err
	}
	if r.proc == nil {
		r.proc = r.v.ProcFS().NewReader()
		r.cgroups = map[int]cgroupRead{}
	}
	b, err = r.proc.Cgroup(pid)
	cr := cgroupRead{b: slices.Clone(b), err: err}
	r.cgroups[pid] = cr
	return cr.b, cr.err
}

// listedInAll are the pids listed in the recorded cgroup of every
// hierarchy of recs (v1), sorted; none when one is not recorded.
func (r *reader) listedInAll(m *snapshot.Members, recs []recordedCgroup) []int {
	var in []int
	for i, rec := range recs {
		if !rec.ok {
			return nil
		}
		l := r.listing(m, rec.h, rec.rel)
		if i == 0 {
			in = slices.Clone(l)
			continue
		}
		in = slices.DeleteFunc(in, func(pid int) bool { return !has(l, pid) })
	}
	return in
}

// recordedPaths are the v1 Paths of a process in c's recorded cgroup
// (recs) of every hierarchy of keys; the slice is shared by those
// processes.
func (r *reader) recordedPaths(c *runcstate.Container, keys []string, recs []recordedCgroup, sets []fileSet) ([]Path, error) {
	var ps []Path
	for i, key := range keys {
		if !recs[i].ok {
			return nil, fmt.Errorf("no recorded cgroup for %q in %s", key, c.StatePath)
		}
		lvs, err := r.levelsOf(recs[i].h, recs[i].rel, key, sets[i])
		if err != nil {
			return ps, err
		}
		ps = append(ps, Path{Key: key, Cgroup: recs[i].rel, Levels: lvs})
	}
	return ps, nil
}

// listed is the v2 Path of a process cgroup.procs listed in cg.
func (r *reader) listed(h *cgroup.Hierarchy, cg string, set fileSet) ([]Path, error) {
	lvs, err := r.levelsOf(h, cg, "", set)
	if err != nil {
		return nil, err
	}
	return []Path{{Key: "", Cgroup: cg, Levels: lvs}}, nil
}

// paths reads pid's cgroup in each hierarchy of keys and the levels of
// each.
func (r *reader) paths(pid int, keys []string, sets []fileSet) ([]Path, error) {
	b, err := r.procCgroup(pid)
	if err != nil {
		return nil, err
	}
	var m cgroup.Membership
	if err := cgroup.ParseProcCgroup(b, &m); err != nil {
		return nil, fmt.Errorf("parse /proc/%d/cgroup: %w", pid, err)
	}
	var ps []Path
	for i, key := range keys {
		cg, ok := m.Lookup(key)
		if !ok {
			continue // in no such hierarchy: the judge says so
		}
		h := r.l.ForKey(key)
		if h == nil {
			return ps, fmt.Errorf("no mounted hierarchy for %q", key)
		}
		p := Path{Key: key, Cgroup: string(cg)}
		lvs, err := r.levelsOf(h, p.Cgroup, key, sets[i])
		if err != nil {
			return ps, err
		}
		p.Levels = lvs
		ps = append(ps, p)
	}
	return ps, nil
}

// levelsOf is every level from the first below the root down to cg, in
// the hierarchy of key, each with set's files; the slice is shared by the
// processes in cg.
func (r *reader) levelsOf(h *cgroup.Hierarchy, cg, key string, set fileSet) ([]Level, error) {
	k := levelKey{key, cg, set.key}
	if lvs, ok := r.levels[k]; ok {
		return lvs, nil
	}
	var lvs []Level
	for _, rel := range ancestry(cg) {
		lv, err := r.level(h, rel, set.names)
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

// level reads the files names of one cgroup and, on v2, its parent's
// subtree_control.
func (r *reader) level(h *cgroup.Hierarchy, rel string, names []string) (Level, error) {
	lv := Level{Cgroup: rel, Files: make(map[string]string, len(names))}
	for _, name := range names {
		fr := r.file(h, rel, name)
		if fr.err != nil {
			return lv, fr.err
		}
		if fr.exists {
			lv.Files[name] = fr.content
		}
	}
	if h.Unified {
		fr := r.file(h, path.Dir(rel), "cgroup.subtree_control")
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

// file reads file name of cgroup rel in hierarchy h; one that is not
// there (nor its cgroup) is not an error.
func (r *reader) file(h *cgroup.Hierarchy, rel, name string) fileRead {
	k := fileKey{h, rel, name}
	if fr, ok := r.files[k]; ok {
		return fr
	}
	b, err := r.cg.ReadFile(h, rel, name)
	fr := fileRead{content: strings.TrimSpace(string(b)), exists: err == nil}
	if err != nil && !errors.Is(err, cgroup.ErrNoCgroup) {
		fr.err = err // names the file
	}
	r.files[k] = fr
	return fr
}
