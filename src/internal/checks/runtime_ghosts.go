package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// RuntimeGhosts finds runtime state whose init process is gone or is now
// another process, and processes in a runtime's cgroup subtree that no state
// claims.
type RuntimeGhosts struct {
	host *snapshot.Source
	// ExtraRoots are cgroup paths searched for orphans besides the parents
	// of known containers' cgroups (e.g. "/garden" when no container runs,
	// or kubelet's "/kubepods.slice", which the job accepts only as an
	// explicit slice root).
	ExtraRoots []string
	// Confirm are the waits before a ghost counts, as cgroup-integrity's
	// (nil: recheckDelays), each through recheck: a state whose file is
	// gone after one of them was a destroy in flight (the init killed, the
	// state not yet deleted), not a ghost.
	recheck facts.Recheck
	Confirm []time.Duration
	// Runc names the host's runc: a child of its `runc create` may sit in
	// the new cgroup before the state exists (runcvouch.go). Now is the
	// clock; nil means time.Now.
	Runc RuncFiles
	Now  func() time.Time
}

var _ validator.Check = (*RuntimeGhosts)(nil)

// Needs: the host snapshot.
func (*RuntimeGhosts) Needs() []facts.Kind { return []facts.Kind{facts.Snapshot} }

func (*RuntimeGhosts) Meta() validator.Meta {
	return validator.Meta{
		ID: "runtime-ghosts",
		// Every layout: orphans are searched in v2's hierarchy, else v1's memory, pids or name=systemd.
		Layouts: everyLayout,
		Title:   "runtime state and container processes agree",
		Severity: map[validator.Phase]validator.Severity{
			validator.PreStart: validator.Warning,
			validator.Drain:    validator.Warning,
		},
		Story: "Runtime state that outlived its container (init gone, or its pid now " +
			"another process), and container processes left in the runtime's cgroups with no state to " +
			"claim them, so nothing would ever stop them (Garden restarting beside stranded garden-init " +
			"processes).",
		References: []string{
			"https://github.com/cloudfoundry/garden-runc-release/issues/120",
			"https://github.com/cloudfoundry/guardian/issues/53",
			"https://github.com/opencontainers/runc/blob/main/libcontainer/container_linux.go",
		},
		Fix: "For a ghost state, `runc --root <root> delete --force <id>`, or its owner's destroy while the owner still knows " +
			"the container (Garden's API; a ghost of Garden's says what gdn's next start cleans and leaves). For orphan " +
			"processes, find their owner from the evidence and stop them; cellguard never kills processes itself.",
	}
}

func (g *RuntimeGhosts) Run(ctx context.Context) ([]validator.Finding, error) {
	v, err := g.host.Get()
	if err != nil {
		return nil, err
	}
	var fs []validator.Finding
	for _, p := range v.Discovery().Problems {
		fs = append(fs, validator.Finding{
			Subject: p.Path, Status: validator.Fail,
			Detail: fmt.Sprintf("unreadable runtime state: %v", p.Err),
			Data:   map[string]string{"state": p.Path, "kind": "bad-state"},
		})
	}
	var ghosts []validator.Finding
	for i := range v.Discovery().Containers {
		c := &v.Discovery().Containers[i]
		if f, ok := ghost(v, c); ok {
			remaining(v, v.Members(i), &f)
			gardenRestart(c, &f)
			ghosts = append(ghosts, f)
		}
	}
	ghosts = g.confirm(ghosts)
	fs = append(fs, ghosts...)
	orphans, err := g.orphans(ctx, v)
	if err != nil {
		return nil, err
	}
	fs = append(fs, orphans...)
	fs = append(fs, validator.Finding{
		Status: validator.Pass,
		Detail: fmt.Sprintf("%d states under %s, %d ghosts, %d orphan processes",
			len(v.Discovery().Containers), strings.Join(v.Discovery().Roots, ", "), len(ghosts), len(orphans)),
	})
	return fs, nil
}

// confirm keeps the ghosts whose state file is still there after each
// wait. Garden's destroy kills the init and waits for it before the shim
// deletes the state: a scan in between saw a ghost (measured with real
// Garden under churn, src/tests/garden TestTodayOnNoble).
func (g *RuntimeGhosts) confirm(ghosts []validator.Finding) []validator.Finding {
	if len(ghosts) == 0 {
		return nil
	}
	delays := g.Confirm
	if delays == nil {
		delays = recheckDelays
	}
	for _, d := range delays {
		g.recheck.Sleep(d)
		kept := ghosts[:0]
		for _, f := range ghosts {
			if g.recheck.StateExists(f.Data["state"]) {
				kept = append(kept, f)
			}
		}
		if ghosts = kept; len(ghosts) == 0 {
			break
		}
	}
	return ghosts
}

// ghost says whether c's init process is gone or reused.
func ghost(v *snapshot.Host, c *runcstate.Container) (validator.Finding, bool) {
	st := c.State
	if st.InitProcessPid <= 0 {
		return validator.Finding{}, false
	}
	data := map[string]string{
		"container": c.Name(), "runtime": c.Runtime, "state": c.StatePath,
		"pid": strconv.Itoa(st.InitProcessPid), "recorded_start": strconv.FormatUint(uint64(st.InitProcessStart), 10),
	}
	f := validator.Finding{Subject: c.Name(), Status: validator.Fail, Data: data}
	p := v.Find(st.InitProcessPid)
	switch {
	case p == nil:
		data["kind"] = "init-gone"
		f.Detail = fmt.Sprintf("init pid %d is gone; state %s is a ghost", st.InitProcessPid, c.StatePath)
	case p.Stat.StartTime != uint64(st.InitProcessStart):
		data["kind"] = "pid-reused"
		data["comm"] = p.Stat.Comm
		data["actual_start"] = strconv.FormatUint(p.Stat.StartTime, 10)
		f.Detail = fmt.Sprintf("init pid %d is now %q (started at tick %d, state recorded %d): the pid was reused; state %s is a ghost",
			st.InitProcessPid, p.Stat.Comm, p.Stat.StartTime, st.InitProcessStart, c.StatePath)
	case p.Stat.State == 'Z':
		data["kind"] = "init-zombie"
		f.Detail = fmt.Sprintf("init pid %d exited and was not reaped; state %s is a ghost", st.InitProcessPid, c.StatePath)
	default:
		return validator.Finding{}, false
	}
	return f, true
}

// gardenNamespace is the containerd namespace Garden (guardian) keeps its
// containers in, in containerd mode.
const gardenNamespace = "garden"

// gardenRestart adds to a ghost of Garden's what Garden itself will clean,
// because "let Garden destroy it" is not true once gdn has forgotten the
// container. gdn's start destroys every container of its namespace that it
// cannot restore, and it restores only those whose properties it saved at
// its last signalled stop; that destroy skips the network of each, as
// measured with gdn v1.58.0 in boxes and on the fleet (docs/garden.md,
// "Seed 002").
func gardenRestart(c *runcstate.Container, f *validator.Finding) {
	if c.Runtime != "containerd" || c.Namespace != gardenNamespace {
		return
	}
	f.Detail += "; Garden's restart: gdn's next start destroys it only if it cannot restore it (a gdn killed rather than " +
		"stopped saved no properties and restores none), and then leaves its bridge and iptables rules"
}

// maxRemainingListed bounds the pids a ghost's finding lists.
const maxRemainingListed = 20

// remaining adds to a ghost's finding the processes still in its recorded
// cgroups (seed 002: after a worker or daemon restarted behind the
// platform's back, a container's init is gone while its other processes
// run on, and nothing that reads the state will stop them).
func remaining(v *snapshot.Host, m *snapshot.Members, f *validator.Finding) {
	var pids []int
	for _, l := range m.Listed {
		pids = append(pids, l...)
	}
	sort.Ints(pids)
	pids = compactInts(pids)
	if len(pids) == 0 {
		return
	}
	var ps []string
	for _, pid := range pids[:min(len(pids), maxRemainingListed)] {
		comm := "?"
		if p := v.Find(pid); p != nil {
			comm = p.Stat.Comm
		}
		ps = append(ps, fmt.Sprintf("%d (%s)", pid, comm))
	}
	if len(pids) > maxRemainingListed {
		// A tenant forks as many as it likes: list a few, count the rest.
		ps = append(ps, fmt.Sprintf("and %d more", len(pids)-maxRemainingListed))
	}
	f.Data["remaining_pids"] = strings.Join(ps, " ")
	n := "1 process"
	if len(pids) > 1 {
		n = strconv.Itoa(len(pids)) + " processes"
	}
	f.Detail += fmt.Sprintf("; %s still in its cgroup: %s", n, strings.Join(ps, ", "))
}

// orphans walks the runtime's cgroup subtrees in one reference hierarchy
// (a process leaked by a failed destroy sits in every hierarchy, so one is
// enough) and reports processes in cgroups no state owns.
func (g *RuntimeGhosts) orphans(ctx context.Context, v *snapshot.Host) ([]validator.Finding, error) {
	ref := referenceHierarchy(v.Layout())
	if ref == nil {
		return nil, nil
	}
	owned, claimedNS, parents := claimed(v, ref)
	for _, r := range g.ExtraRoots {
		parents[path.Clean("/"+r)] = true
	}
	roots := outermost(parents)
	vouch := newVoucher(v.ProcFS(), g.Runc, v.Boot(), g.Now, g.recheck)
	var out []validator.Finding
	var buf []byte
	var pids []int
	for _, rel := range roots {
		err := cgroup.Walk(v.Layout().Path(ref, rel), rel, func(dir, rel string) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if ownedBy(owned, rel) {
				return fs.SkipDir
			}
			var err error
			buf, pids, err = cgroup.ReadProcs(dir, buf, pids[:0])
			if errors.Is(err, cgroup.ErrNoCgroup) {
				return nil // removed meanwhile; Walk skips what is gone
			}
			if err != nil {
				return err
			}
			for _, pid := range pids {
				p := v.Find(pid)
				if p == nil {
					continue // started after the scan or already gone
				}
				if _, listed := v.ListedBy(pid); listed || claimedNS[p.NS] {
					continue // a container's process out of place: cgroup-integrity's finding
				}
				if vouch.runcChild(p.Stat.PPID, p.Stat.StartTime) {
					// a container being created by the host's runc, before
					// its state exists (seen with real Garden under churn),
					// within the grace; its comm and argv say nothing
					continue
				}
				out = append(out, validator.Finding{
					Subject: rel, Status: validator.Fail,
					Detail: fmt.Sprintf("pid %d (%s) is in %s:%s, which no runtime state claims", pid, p.Stat.Comm, ref.Name, rel),
					Data: map[string]string{
						"kind": "orphan", "pid": strconv.Itoa(pid), "comm": p.Stat.Comm,
						"hierarchy": ref.Name, "cgroup": rel,
					},
				})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// claimed is what the runtimes' states claim: the containers' cgroups in
// the reference hierarchy, their pid namespaces, and the runtime parents
// those cgroups sit in (where orphans walks).
func claimed(v *snapshot.Host, ref *cgroup.Hierarchy) (owned map[string]bool, claimedNS map[uint64]bool, parents map[string]bool) {
	owned, claimedNS, parents = map[string]bool{}, map[uint64]bool{}, map[string]bool{}
	for i := range v.Discovery().Containers {
		c := &v.Discovery().Containers[i]
		if ns := v.PidNS(c); ns != 0 {
			claimedNS[ns] = true
		}
		for _, abs := range c.State.CgroupPaths {
			h, rel, ok := v.Layout().Split(abs)
			if !ok || h != ref {
				continue
			}
			owned[rel] = true
			if p := path.Dir(rel); runtimeParent(p) {
				parents[p] = true
			}
		}
	}
	return owned, claimedNS, parents
}

// ownedBy reports whether cgroup rel or one of its ancestors is owned: what
// cgroup.Under against every owned path says, in as many lookups as rel is
// deep rather than one per container (quadratic at 25,000 containers).
func ownedBy(owned map[string]bool, rel string) bool {
	for {
		if owned[rel] {
			return true
		}
		if rel == "/" || rel == "." || rel == "" {
			return false
		}
		rel = path.Dir(rel)
	}
}

// referenceHierarchy picks the hierarchy orphans are searched in: v2 when
// it is the only one, else memory (runc and Garden always join it), else
// pids, else whatever is mounted.
func referenceHierarchy(l *cgroup.Layout) *cgroup.Hierarchy {
	if l.Mode == cgroup.Unified {
		return l.ForKey("")
	}
	for _, k := range []string{"memory", "pids", "name=systemd", ""} {
		if h := l.ForKey(k); h != nil {
			return h
		}
	}
	if len(l.Hierarchies) > 0 {
		return l.Hierarchies[0]
	}
	return nil
}

// runtimeParent reports whether a container cgroup's parent belongs to the
// runtime (garden/, a runtime's own directory) rather than to systemd: a
// slice, service or scope holds unrelated processes and the root holds
// everything.
func runtimeParent(p string) bool {
	if p == "/" || p == "." {
		return false
	}
	base := path.Base(p)
	if podSlice(base) {
		return true
	}
	for _, suf := range []string{".slice", ".service", ".scope"} {
		if strings.HasSuffix(base, suf) {
			return false
		}
	}
	return true
}

// podSlice reports whether a slice is one pod's, as kubelet's systemd
// cgroup driver names them (kubepods-pod<uid>.slice for Guaranteed pods,
// kubepods-burstable-pod<uid>.slice, kubepods-besteffort-pod<uid>.slice):
// it holds that pod's container scopes and nothing else, so a process in
// it that no state claims is an orphan.
func podSlice(base string) bool {
	name, ok := strings.CutSuffix(base, ".slice")
	if !ok || !strings.HasPrefix(name, "kubepods-") {
		return false
	}
	i := strings.LastIndex(name, "-pod")
	return i >= len("kubepods")-1 && len(name) > i+len("-pod")
}

// outermost drops paths nested in another path of the set.
func outermost(set map[string]bool) []string {
	var all []string
	for p := range set {
		all = append(all, p)
	}
	sort.Strings(all)
	var out []string
	for _, p := range all {
		if len(out) > 0 && cgroup.Under(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return out
}
