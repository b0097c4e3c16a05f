package fakehost

// This file writes a cell at scale: /proc pid directories, a hybrid cgroup
// v1 + v2 tree and runc state files under one root, for benchmarks of the
// validator against what an operator would otherwise run by hand. It
// writes only what the validator and the operator's shell loop read, and
// shares identical files by hard link, so 25,000 containers fit a few GB
// of tmpfs and are written in seconds.
//
// Per process it writes proc/<pid>/stat (all 52 fields, as the kernel
// does), proc/<pid>/cgroup (one line per hierarchy; a hard link to the
// file its cgroup peers share) and the proc/<pid>/ns/pid link. cmdline and
// fd/ are left out: the validator reads them only for processes named
// runc*, and the cell has none. Every container has a pid namespace of its
// own, as Garden's do, so a process that escaped its cgroups is still
// known by its namespace.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
)

// Spec says what cell to write.
type Spec struct {
	Containers        int
	ProcsPerContainer int
	HostProcs         int // pid 1 included
	// EscapedShare is the fraction of container processes that systemd
	// moved out of their container's cgroups (0..1), as in seed-000.
	EscapedShare float64
	// Seed picks the escaped processes; the same spec writes the same cell.
	Seed uint64
	// RuntimeRoot is the runc state root, e.g. /run/runc.
	RuntimeRoot string
}

// Cell returns the reference cell scaled by k: 250·k containers of 20
// processes and 1,000·k host processes.
func Cell(k int) Spec {
	return Spec{Containers: 250 * k, ProcsPerContainer: 20, HostProcs: 1000 * k, RuntimeRoot: "/run/runc"}
}

// Processes is the number of pid directories the spec writes.
func (s Spec) Processes() int { return s.Containers*s.ProcsPerContainer + s.HostProcs }

func (s Spec) validate() error {
	switch {
	case s.Containers < 0 || s.ProcsPerContainer < 1 || s.HostProcs < 1:
		return fmt.Errorf("fakehost: need ProcsPerContainer >= 1 and HostProcs >= 1, got %+v", s)
	case s.EscapedShare < 0 || s.EscapedShare > 1:
		return fmt.Errorf("fakehost: EscapedShare %v outside 0..1", s.EscapedShare)
	case !strings.HasPrefix(s.RuntimeRoot, "/"):
		return fmt.Errorf("fakehost: RuntimeRoot %q is not absolute", s.RuntimeRoot)
	}
	return nil
}

// The limits every container of the cell records (cellstate.go) and has
// in force in its v1 cgroups, in the files runc's fs setters write. No
// memory.memsw.limit_in_bytes: limits-intact accepts its absence, as on a
// host without swap accounting. A cell of real processes (cellbench
// --live) writes the same files, and memsw (CellMemory) where the host has it.
const CellMemory, cellCPUShares, cellPids = 1073741824, 1024, 1024

// LimitFile is one limit file of a container's cgroup: Dir is the v1
// hierarchy's mount name.
type LimitFile struct {
	Dir, Name string
	Value     int
}

// CellLimitFiles are the files that hold the cell's recorded limits.
var CellLimitFiles = []LimitFile{
	{"memory", "memory.limit_in_bytes", CellMemory},
	{"cpu,cpuacct", "cpu.shares", cellCPUShares},
	{"pids", "pids.max", cellPids},
}

// limits links the cell's limit files into cgroup rel of each hierarchy
// that has one (written once, in layout).
func (g *gen) limits(rel string) error {
	for _, f := range CellLimitFiles {
		if err := link(filepath.Join(g.shared, "limit-"+f.Name), g.path("sys/fs/cgroup/"+f.Dir+rel+"/"+f.Name)); err != nil {
			return err
		}
	}
	return nil
}

// EscapeCgroup is where escaped processes end up: the unit of the daemon
// that created the containers.
const EscapeCgroup = "/system.slice/garden.service"

// Escape is one process outside its container's cgroup in one hierarchy:
// what a correct validator must report, and nothing else.
type Escape struct {
	PID       int
	Container string
	Hierarchy string // Hierarchy.Name
	Expected  string
	Actual    string
}

// String is the form the bench compares: "pid hierarchy expected actual".
func (e Escape) String() string {
	return fmt.Sprintf("%d %s %s %s", e.PID, e.Hierarchy, e.Expected, e.Actual)
}

// Written is a cell on disk.
type Written struct {
	Root string
	Spec Spec
	// Escapes lists every (pid, hierarchy) escape, sorted.
	Escapes []Escape
	// EscapedPIDs lists the escaped processes, sorted.
	EscapedPIDs []int
	// Files and Bytes count what was written (hard links not counted).
	Files, Bytes int64
	Elapsed      time.Duration

	containerOf map[int]int // escaped pid -> container index
}

// container numbering: pids of container c are firstPID(c)+0..n-1, the
// first being init.
func (s Spec) firstPID(c int) int { return s.containerBase() + c*s.ProcsPerContainer }

// containerBase leaves room after the host pids, rounded up for legibility.
func (s Spec) containerBase() int { return (s.HostProcs/10000 + 1) * 10000 }

// ContainerID is container c's id: c000000, c000001, ...
func ContainerID(c int) string { return fmt.Sprintf("c%06d", c) }

func containerNS(c int) uint64 { return HostNS + 10000 + uint64(c) }

// hostServices are where host processes live, round robin; index 0 is the
// container daemon, whose cgroup escaped processes land in.
var hostServices = []string{
	EscapeCgroup, "/system.slice/containerd.service", "/system.slice/monit.service",
	"/system.slice/ssh.service", "/system.slice/systemd-journald.service", "/system.slice/rsyslog.service",
	"/system.slice/cron.service", "/system.slice/chrony.service", "/system.slice/bosh-agent.service",
	"/user.slice/user-0.slice/session-1.scope", "/system.slice/auditd.service", "/system.slice/rep.service",
}

// Generate writes the cell under root, which must be empty or absent.
func Generate(root string, s Spec) (*Written, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	if ents, err := os.ReadDir(root); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("fakehost: %s is not empty", root)
	}
	w := &Written{Root: root, Spec: s, containerOf: map[int]int{}}
	g := &gen{w: w, s: s, shared: filepath.Join(root, sharedDir)}
	if err := g.layout(); err != nil {
		return nil, err
	}
	escaped := g.pickEscapes()
	if err := g.host(); err != nil {
		return nil, err
	}
	if err := g.containers(escaped); err != nil {
		return nil, err
	}
	sort.Ints(w.EscapedPIDs)
	// Escaped processes sit in the daemon's unit cgroup now.
	if err := g.escapeTarget(w.EscapedPIDs); err != nil {
		return nil, err
	}
	sort.Slice(w.Escapes, func(i, j int) bool { return w.Escapes[i].String() < w.Escapes[j].String() })
	w.Elapsed = time.Since(start)
	return w, nil
}

type gen struct {
	w      *Written
	s      Spec
	shared string // files hard-linked into proc/ and sys/ live here

	mu           sync.Mutex
	files, bytes int64
}

func (g *gen) path(rel string) string { return filepath.Join(g.w.Root, rel) }

func (g *gen) write(path string, b []byte) error {
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("fakehost: write %s: %w", path, err)
	}
	g.mu.Lock()
	g.files++
	g.bytes += int64(len(b))
	g.w.Files, g.w.Bytes = g.files, g.bytes
	g.mu.Unlock()
	return nil
}

func mkdir(d string) error {
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("fakehost: mkdir %s: %w", d, err)
	}
	return nil
}

func link(old, new string) error {
	if err := os.Link(old, new); err != nil {
		return fmt.Errorf("fakehost: link %s: %w", new, err)
	}
	return nil
}

func (g *gen) layout() error {
	if err := writeLayout(g.w.Root, cgroup.Hybrid); err != nil {
		return err
	}
	g.files++ // unified/cgroup.controllers
	for _, d := range []string{g.shared, g.path("proc"), g.path(g.s.RuntimeRoot)} {
		if err := mkdir(d); err != nil {
			return err
		}
	}
	for _, f := range CellLimitFiles {
		if err := g.write(filepath.Join(g.shared, "limit-"+f.Name), []byte(strconv.Itoa(f.Value)+"\n")); err != nil {
			return err
		}
	}
	return g.write(g.path("proc/stat"), procStat(g.s.Processes()))
}

// pickEscapes chooses round(share · container processes) distinct ones.
func (g *gen) pickEscapes() map[int]bool {
	total := g.s.Containers * g.s.ProcsPerContainer
	n := int(g.s.EscapedShare*float64(total) + 0.5)
	r := rand.New(rand.NewPCG(g.s.Seed, 0x5eed000))
	out := make(map[int]bool, n)
	for _, i := range r.Perm(total)[:n] {
		out[g.s.containerBase()+i] = true
	}
	return out
}

// sharedDir holds, under the root, the files hard-linked into proc/ and sys/.
const sharedDir = "fakehost-shared"

// cgroupFileOf is /proc/<pid>/cgroup of a cell process in cgroup path, or
// escaped to EscapeCgroup in the hierarchies systemd moves.
func cgroupFileOf(path string, escaped bool) []byte {
	return cgroupFile(Hierarchies, func(h Hierarchy) string {
		if escaped && h.Moved {
			return EscapeCgroup
		}
		return path
	})
}

// proc writes /proc/<pid> with its cgroup file hard-linked from cg.
func (g *gen) proc(buf []byte, pid int, comm string, ppid int, start uint64, ns uint64, cg string) ([]byte, error) {
	dir := g.path("proc/" + strconv.Itoa(pid))
	if err := os.MkdirAll(dir+"/ns", 0o755); err != nil {
		return buf, fmt.Errorf("fakehost: mkdir %s: %w", dir, err)
	}
	buf = statLine(buf, pid, comm, 'S', ppid, start)
	if err := g.write(dir+"/stat", buf); err != nil {
		return buf, err
	}
	if err := link(cg, dir+"/cgroup"); err != nil {
		return buf, err
	}
	if err := os.Symlink("pid:["+strconv.FormatUint(ns, 10)+"]", dir+"/ns/pid"); err != nil {
		return buf, fmt.Errorf("fakehost: %w", err)
	}
	return buf, nil
}

func (g *gen) host() error {
	s := g.s
	procs := map[string][]int{} // cgroup -> pids
	// pid 1 in the root cgroup, as systemd is on a stemcell.
	rootCg := filepath.Join(g.shared, "cg-root")
	if err := g.write(rootCg, cgroupFileOf("/init.scope", false)); err != nil {
		return err
	}
	buf, err := g.proc(nil, 1, "systemd", 0, 1, HostNS, rootCg)
	if err != nil {
		return err
	}
	procs["/init.scope"] = []int{1}
	for _, svc := range hostServices {
		procs[svc] = nil // every unit's cgroup exists, populated or not
	}
	for i, svc := range hostServices {
		if err := g.write(filepath.Join(g.shared, "cg-host-"+strconv.Itoa(i)), cgroupFileOf(svc, false)); err != nil {
			return err
		}
	}
	comms := []string{"gdn", "containerd", "monit", "sshd", "systemd-journal", "rsyslogd", "cron", "chronyd", "bosh-agent", "bash", "auditd", "rep"}
	for pid := 2; pid <= s.HostProcs; pid++ {
		i := pid % len(hostServices)
		if buf, err = g.proc(buf, pid, comms[i], 1, uint64(100+pid), HostNS,
			filepath.Join(g.shared, "cg-host-"+strconv.Itoa(i))); err != nil {
			return err
		}
		procs[hostServices[i]] = append(procs[hostServices[i]], pid)
	}
	for cg, pids := range procs {
		if err := g.cgroupProcs(cg, pids, nil); err != nil {
			return err
		}
	}
	// The runtime's parent cgroup, empty, in every hierarchy.
	for _, h := range Hierarchies {
		d := g.path("sys/fs/cgroup/" + h.Dir + "/garden")
		if err := mkdir(d); err != nil {
			return err
		}
		if err := g.write(d+"/cgroup.procs", nil); err != nil {
			return err
		}
	}
	return nil
}

// cgroupProcs writes cgroup.procs of cgroup rel in every hierarchy: pids,
// minus moved in the hierarchies systemd moves processes in. Identical
// files are one inode, hard-linked.
func (g *gen) cgroupProcs(rel string, pids, moved []int) error {
	all := procsFile(pids, nil)
	var kept []byte
	if len(moved) > 0 {
		kept = procsFile(pids, moved)
	}
	var firstAll, firstKept string
	for _, h := range Hierarchies {
		d := g.path("sys/fs/cgroup/" + h.Dir + rel)
		if err := mkdir(d); err != nil {
			return err
		}
		p := d + "/cgroup.procs"
		content, first := all, &firstAll
		if len(moved) > 0 && h.Moved {
			content, first = kept, &firstKept
		}
		if *first != "" {
			if err := link(*first, p); err != nil {
				return err
			}
			continue
		}
		if err := g.write(p, content); err != nil {
			return err
		}
		*first = p
	}
	return nil
}

func procsFile(pids, minus []int) []byte {
	skip := map[int]bool{}
	for _, p := range minus {
		skip[p] = true
	}
	var b []byte
	for _, p := range pids {
		if !skip[p] {
			b = strconv.AppendInt(b, int64(p), 10)
			b = append(b, '\n')
		}
	}
	return b
}

// containers writes the containers on two goroutines (this is I/O into
// tmpfs, bound by syscalls, and the machine has two cores).
func (g *gen) containers(escaped map[int]bool) error {
	s := g.s
	tmpl := stateTemplate()
	workers := 2
	errs := make([]error, workers)
	var wg sync.WaitGroup
	var emu sync.Mutex
	for wk := 0; wk < workers; wk++ {
		wg.Add(1)
		go func(wk int) {
			defer wg.Done()
			var buf, state []byte
			for c := wk; c < s.Containers; c += workers {
				var esc []Escape
				var err error
				buf, state, esc, err = g.container(c, escaped, tmpl, buf, state)
				if err != nil {
					errs[wk] = err
					return
				}
				if len(esc) > 0 {
					emu.Lock()
					g.w.Escapes = append(g.w.Escapes, esc...)
					for _, e := range esc {
						if g.w.containerOf[e.PID] == 0 {
							g.w.containerOf[e.PID] = c + 1
							g.w.EscapedPIDs = append(g.w.EscapedPIDs, e.PID)
						}
					}
					emu.Unlock()
				}
			}
		}(wk)
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (g *gen) container(c int, escaped map[int]bool, tmpl *template, buf, state []byte) ([]byte, []byte, []Escape, error) {
	s := g.s
	id := ContainerID(c)
	rel := "/garden/" + id
	first := s.firstPID(c)
	start := uint64(50000 + c) // ticks after boot
	ns := containerNS(c)
	cg := filepath.Join(g.shared, "cg-"+id)
	if err := g.write(cg, cgroupFileOf(rel, false)); err != nil {
		return buf, state, nil, err
	}
	var pids, moved []int
	var escapes []Escape
	for i := 0; i < s.ProcsPerContainer; i++ {
		pid := first + i
		comm, ppid := "app", first
		if i == 0 {
			comm, ppid = "garden-init", 2
		}
		file := cg
		if escaped[pid] {
			file = filepath.Join(g.shared, "cg-esc-"+strconv.Itoa(pid))
			if err := g.write(file, cgroupFileOf(rel, true)); err != nil {
				return buf, state, nil, err
			}
			moved = append(moved, pid)
			for _, h := range Hierarchies {
				if h.Moved {
					escapes = append(escapes, Escape{PID: pid, Container: id, Hierarchy: h.Name, Expected: rel, Actual: EscapeCgroup})
				}
			}
		}
		var err error
		if buf, err = g.proc(buf, pid, comm, ppid, start, ns, file); err != nil {
			return buf, state, nil, err
		}
		pids = append(pids, pid)
	}
	if err := g.cgroupProcs(rel, pids, moved); err != nil {
		return buf, state, nil, err
	}
	if err := g.limits(rel); err != nil {
		return buf, state, nil, err
	}
	dir := g.path(s.RuntimeRoot + "/" + id)
	if err := mkdir(dir); err != nil {
		return buf, state, nil, err
	}
	state = tmpl.render(state[:0], id, first, start)
	if err := g.write(dir+"/state.json", state); err != nil {
		return buf, state, nil, err
	}
	return buf, state, escapes, nil
}

// Heal puts every escaped process back into its container's cgroups,
// rewriting only the files the escapes touched: the same cell, clean.
func (w *Written) Heal() error {
	g := &gen{w: w, s: w.Spec, shared: filepath.Join(w.Root, sharedDir)}
	byContainer := map[int][]int{}
	for _, pid := range w.EscapedPIDs {
		c := w.containerOf[pid] - 1
		byContainer[c] = append(byContainer[c], pid)
	}
	for c, moved := range byContainer {
		id := ContainerID(c)
		for _, pid := range moved {
			p := g.path("proc/" + strconv.Itoa(pid) + "/cgroup")
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("fakehost: heal: %w", err)
			}
			if err := link(filepath.Join(g.shared, "cg-"+id), p); err != nil {
				return err
			}
		}
		var pids []int
		for i := 0; i < w.Spec.ProcsPerContainer; i++ {
			pids = append(pids, w.Spec.firstPID(c)+i)
		}
		// The moved hierarchies share one inode: rewrite it in place.
		for _, h := range Hierarchies {
			if h.Moved {
				p := g.path("sys/fs/cgroup/" + h.Dir + "/garden/" + id + "/cgroup.procs")
				if err := os.WriteFile(p, procsFile(pids, nil), 0o644); err != nil {
					return fmt.Errorf("fakehost: heal: %w", err)
				}
				break
			}
		}
	}
	if err := g.escapeTarget(nil); err != nil {
		return err
	}
	w.Escapes, w.EscapedPIDs, w.containerOf = nil, nil, map[int]int{}
	return nil
}

// escapeTarget rewrites EscapeCgroup's cgroup.procs in the moved
// hierarchies: its own processes plus the escaped ones.
func (g *gen) escapeTarget(escaped []int) error {
	var own []int
	for pid := 2; pid <= g.s.HostProcs; pid++ {
		if hostServices[pid%len(hostServices)] == EscapeCgroup {
			own = append(own, pid)
		}
	}
	for _, h := range Hierarchies {
		p := g.path("sys/fs/cgroup/" + h.Dir + EscapeCgroup + "/cgroup.procs")
		pids := own
		if h.Moved {
			pids = append(append([]int{}, own...), escaped...)
			sort.Ints(pids)
		}
		// Replace, not rewrite: host() hard-linked these files.
		tmp := p + ".new"
		if err := os.WriteFile(tmp, procsFile(pids, nil), 0o644); err != nil {
			return fmt.Errorf("fakehost: write %s: %w", p, err)
		}
		if err := os.Rename(tmp, p); err != nil {
			return fmt.Errorf("fakehost: %w", err)
		}
	}
	return nil
}
