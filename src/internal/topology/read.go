package topology

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
)

// Facts are one read of the v2 topology. On a v1 or hybrid host only Mode
// is set: nothing else is read.
type Facts struct {
	Mode cgroup.Mode
	// Containers are the running containers, with their cgroups' types.
	Containers []Container
	// Trees are the runtime's trees walked, sorted.
	Trees []string
	// Internal are cgroups in those trees with processes and a non-empty
	// cgroup.subtree_control.
	Internal []Internal
	// Daemons are the configured daemons' pids and cgroups.
	Daemons []Daemon
	// Agent is where the BOSH agent runs; nil when the root is no BOSH VM
	// (no /var/vcap/bosh).
	Agent *Agent
	// Problems are what could not be read (a state, a cgroup file).
	Problems []string
}

// Container is one running container's cgroup as its state records it.
type Container struct {
	Name, StatePath, Cgroup string
	// Absent, when set, is the cgroup the state records, which does not
	// exist: Cgroup is then where the container's init is (a record the
	// runtime got wrong, not a place anything left).
	Absent string
	// Types are cgroup.type of the container's cgroup and of each ancestor
	// inside its tree, leaf first.
	Types []Type
}

// Type is one cgroup's cgroup.type.
type Type struct{ Cgroup, Type string }

// Internal is a cgroup holding processes while enabling controllers below.
type Internal struct {
	Cgroup, SubtreeControl string
	PIDs                   []int
}

// Daemon is a configured daemon's process and the cgroup it is in.
type Daemon struct {
	Name, PIDFile string
	PID           int
	Cgroup        string
	Err           string // could not read the pidfile or the process's cgroup
}

// Agent is every bosh-agent process and the cgroup it is in.
type Agent struct {
	Processes []AgentProcess
}

// AgentProcess is one bosh-agent process.
type AgentProcess struct {
	PID    int
	Cgroup string
}

// DaemonSpec names a configured daemon and its pidfile under the root.
type DaemonSpec struct{ Name, PIDFile string }

// AgentComm is the bosh-agent's command name in /proc/<pid>/stat.
const AgentComm = "bosh-agent"

// BoshDir marks a BOSH VM.
const BoshDir = "/var/vcap/bosh"

// Read reads the facts of the run's snapshot v. v says which containers
// there are and which run (the init is the process runc started), whether
// their recorded cgroups exist, where an init whose record is false is,
// and which processes are bosh-agent: read once, for every check. Read
// adds what only cgroup-topology needs: cgroup.type along each container's
// cgroup, and the cgroup.subtree_control (and, where that is not empty and
// the snapshot did not list it, cgroup.procs) of each cgroup of the
// runtime's trees; the daemons' pidfiles, and the /proc/<pid>/cgroup the
// snapshot did not read.
func Read(v *snapshot.Host, daemons []DaemonSpec) *Facts {
	l := v.Layout()
	f := &Facts{Mode: l.Mode}
	if l.Mode != cgroup.Unified {
		return f
	}
	r := reader{v: v, l: l, h: l.Hierarchies[0], f: f, listed: map[string][]int{}}
	defer r.close()
	disc := v.Discovery()
	for _, p := range disc.Problems {
		f.Problems = append(f.Problems, fmt.Sprintf("read %s: %v", p.Path, p.Err))
	}
	trees := map[string]bool{}
	for i := range disc.Containers {
		if c, tree, ok := r.container(v.Members(i), &disc.Containers[i]); ok {
			f.Containers = append(f.Containers, c)
			trees[tree] = true
		}
	}
	for t := range trees {
		f.Trees = append(f.Trees, t)
	}
	slices.Sort(f.Trees)
	for _, t := range f.Trees {
		r.walk(t)
	}
	for _, d := range daemons {
		f.Daemons = append(f.Daemons, r.daemon(v.Root(), d))
	}
	if _, err := os.Stat(filepath.Join(v.Root(), BoshDir)); err == nil {
		f.Agent = r.agent()
	}
	return f
}

type reader struct {
	v *snapshot.Host
	l *cgroup.Layout
	h *cgroup.Hierarchy
	f *Facts
	// listed are the unified cgroups the snapshot listed (the
	// containers' recorded ones that exist), by path: walk takes their
	// processes from there.
	listed map[string][]int
	// proc reads the /proc/<pid>/cgroup the snapshot did not (the
	// daemons', the agent's); opened on first use.
	proc *procfs.Reader
}

func (r *reader) close() {
	if r.proc != nil {
		r.proc.Close()
	}
}

func (r *reader) problem(format string, a ...any) {
	r.f.Problems = append(r.f.Problems, fmt.Sprintf(format, a...))
}

// container reads c's recorded cgroup and the types along it, when c is
// running (its init is the process runc started); tree is where the
// runtime's tree containing it begins. m is what the snapshot listed in
// c's cgroups.
func (r *reader) container(m *snapshot.Members, c *runcstate.Container) (Container, string, bool) {
	if c.Created || c.State == nil || c.State.InitProcessPid <= 0 {
		return Container{}, "", false
	}
	if p := r.v.Find(c.State.InitProcessPid); p == nil || p.Stat.StartTime != uint64(c.State.InitProcessStart) {
		return Container{}, "", false // gone: runtime-ghosts judges those
	}
	cg, ok := r.recorded(c)
	if !ok {
		r.problem("read %s: no cgroup for the unified hierarchy recorded", c.StatePath)
		return Container{}, "", false
	}
	out := Container{Name: c.Name(), StatePath: c.StatePath, Cgroup: cg}
	if r.absent(m, cg) {
		// A false record (guardian's CPU throttler writes /garden/good/<h>
		// for a privileged container runc put elsewhere): nothing there
		// to read, and cgroup-integrity reports it. Judge where the init
		// is instead; if that cannot be read either, it is going.
		var err error
		if out.Cgroup, err = r.cgroupOf(c.State.InitProcessPid); err != nil {
			return Container{}, "", false
		}
		out.Absent = cg
	}
	cg = out.Cgroup
	tree := Tree(cg)
	for p := cg; ; p = path.Dir(p) {
		t, err := r.file(p, "cgroup.type")
		if err != nil {
			r.problem("read cgroup.type of %s: %v", p, err)
		} else {
			out.Types = append(out.Types, Type{Cgroup: p, Type: t})
		}
		if p == tree {
			break
		}
	}
	return out, tree, true
}

// absent says whether the unified cgroup cg, which m's container records,
// does not exist, as the snapshot found when it listed it (and keeps that
// listing for walk); a cgroup the snapshot did not list is looked at.
func (r *reader) absent(m *snapshot.Members, cg string) bool {
	for j, e := range m.Exps {
		if e.Hierarchy == r.h && e.Rel == cg {
			if !m.Absent[j] {
				r.listed[cg] = m.Listed[j]
			}
			return m.Absent[j]
		}
	}
	_, err := os.Stat(r.l.Path(r.h, cg))
	return errors.Is(err, fs.ErrNotExist)
}

func (r *reader) recorded(c *runcstate.Container) (string, bool) {
	if c.CgroupPath != "" {
		return path.Clean("/" + c.CgroupPath), true // crun: one path for all
	}
	abs, ok := c.State.CgroupPaths[""]
	if !ok {
		return "", false
	}
	_, rel, ok := r.l.Split(abs)
	return rel, ok
}

// Tree is where the runtime's tree holding cgroup cg begins: the highest
// ancestor of cg (or cg itself) below the nearest systemd unit above it
// (a .slice, .service or .scope) or below the root. /garden/h/init is in
// /garden's tree; /system.slice/garden/c2 in /system.slice/garden's; a
// container directly below a slice is a tree of its own, and so is a
// unit's own cgroup (runc's systemd driver puts each container in a scope).
func Tree(cg string) string {
	parts := strings.Split(strings.TrimPrefix(cg, "/"), "/")
	start := 0
	for i, p := range parts[:len(parts)-1] {
		if isUnit(p) {
			start = i + 1
		}
	}
	if isUnit(parts[len(parts)-1]) {
		return cg
	}
	return "/" + strings.Join(parts[:start+1], "/")
}

func isUnit(name string) bool {
	return strings.HasSuffix(name, ".slice") || strings.HasSuffix(name, ".service") || strings.HasSuffix(name, ".scope")
}

// file reads one cgroup file, trimmed.
func (r *reader) file(cg, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(r.l.Path(r.h, cg), name))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// walk finds the cgroups of tree that hold processes and enable
// controllers for their children.
func (r *reader) walk(tree string) {
	err := cgroup.Walk(r.l.Path(r.h, tree), tree, func(dir, rel string) error {
		sc, err := r.file(rel, "cgroup.subtree_control")
		if errors.Is(err, fs.ErrNotExist) {
			return fs.SkipDir // removed meanwhile
		}
		if err != nil {
			r.problem("read cgroup.subtree_control of %s: %v", rel, err)
			return nil
		}
		if sc == "" {
			return nil
		}
		pids, listed := r.listed[rel]
		if listed {
			pids = slices.Clone(pids) // sorted already; the snapshot's own
		} else {
			_, pids, err = cgroup.ReadProcs(dir, nil, nil)
			if err != nil {
				if !errors.Is(err, cgroup.ErrNoCgroup) {
					r.problem("read cgroup.procs of %s: %v", rel, err)
				}
				return nil
			}
			slices.Sort(pids)
		}
		if len(pids) > 0 {
			r.f.Internal = append(r.f.Internal, Internal{Cgroup: rel, SubtreeControl: sc, PIDs: pids})
		}
		return nil
	})
	if err != nil {
		r.problem("walk %s: %v", tree, err)
	}
}

// cgroupOf is pid's cgroup in the unified hierarchy (its 0:: line), from
// the snapshot's read of /proc/<pid>/cgroup where it made one.
func (r *reader) cgroupOf(pid int) (string, error) {
	b, err := r.v.Cgroup(pid)
	if errors.Is(err, snapshot.ErrNotRead) {
		if r.proc == nil {
			r.proc = r.v.ProcFS().NewReader()
		}
		b, err = r.proc.Cgroup(pid)
	}
	if err != nil {
		return "", fmt.Errorf("read /proc/%d/cgroup: %w", pid, err)
	}
	var m cgroup.Membership
	if err := cgroup.ParseProcCgroup(b, &m); err != nil {
		return "", fmt.Errorf("parse /proc/%d/cgroup: %w", pid, err)
	}
	cg, ok := m.Lookup("")
	if !ok {
		return "", fmt.Errorf("/proc/%d/cgroup has no 0:: line", pid)
	}
	return string(cg), nil
}

func (r *reader) daemon(root string, d DaemonSpec) Daemon {
	out := Daemon{Name: d.Name, PIDFile: d.PIDFile}
	b, err := os.ReadFile(filepath.Join(root, d.PIDFile))
	if err != nil {
		out.Err = fmt.Sprintf("read pidfile %s: %v", d.PIDFile, err)
		return out
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		out.Err = fmt.Sprintf("read pidfile %s: no pid in %q", d.PIDFile, strings.TrimSpace(string(b)))
		return out
	}
	out.PID = pid
	if out.Cgroup, err = r.cgroupOf(pid); err != nil {
		out.Err = err.Error()
	}
	return out
}

// agent finds every process named bosh-agent among the snapshot's, and
// its cgroup; processes that exit meanwhile are left out.
func (r *reader) agent() *Agent {
	a := &Agent{}
	for _, p := range r.v.Procs() {
		if p.Stat.Comm != AgentComm {
			continue
		}
		cg, err := r.cgroupOf(p.PID)
		if err != nil {
			continue
		}
		a.Processes = append(a.Processes, AgentProcess{PID: p.PID, Cgroup: cg})
	}
	return a
}
