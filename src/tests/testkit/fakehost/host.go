package fakehost

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
)

// Host is a small fake host under Root, for unit tests: processes added
// one by one, in any cgroup mode. Every error fails the test.
type Host struct {
	*Tree
	Mode  cgroup.Mode
	hs    []Hierarchy
	procs map[int]*Proc
	batch bool
}

// Batch runs f with cgroup.procs rewritten once at the end instead of after
// every change: building a cell of thousands of processes stays fast.
func (h *Host) Batch(f func()) {
	h.batch = true
	f()
	h.batch = false
	h.syncProcs()
}

// Proc is a fake process.
type Proc struct {
	PID   int
	PPID  int
	Comm  string
	State byte   // 'S' when zero
	Start uint64 // stat field 22, ticks after BootTime
	NS    uint64 // pid namespace inode; HostNS when zero
	// MntNS is the mount namespace inode (/proc/<pid>/ns/mnt); none is
	// written when zero, as for a process whose namespaces are hidden.
	MntNS uint64
	Args  []string
	// Cgroup is the process's cgroup path in every hierarchy, except those
	// overridden in In (keyed by hierarchy directory: "cpu,cpuacct",
	// "systemd", "unified", or "" in v2 mode).
	Cgroup string
	In     map[string]string
	// FDs are /proc/<pid>/fd links: fd -> target ("pipe:[123]").
	FDs map[int]string
	// Exe is the executable's path under the root (Binary makes one):
	// /proc/<pid>/exe links to it, so stat through the link gives that
	// file's device and inode, as the kernel's link does. "" leaves no link.
	Exe string
}

// Binary writes an executable file at rel under the root (its content
// names it, so two binaries are two files) and returns rel, for Proc.Exe
// and a configured runtime binary.
func (h *Host) Binary(rel string) string {
	h.t.Helper()
	h.Write(rel, "#!/bin/false\n# "+rel+"\n")
	if err := os.Chmod(h.Path(rel), 0o755); err != nil {
		h.t.Fatal(err)
	}
	return rel
}

// New makes an empty host with pid 1 in /.
func New(t testing.TB, mode cgroup.Mode) *Host {
	t.Helper()
	switch mode {
	case cgroup.Legacy, cgroup.Hybrid, cgroup.Unified:
	default:
		t.Fatalf("fakehost: no layout for cgroup mode %v", mode)
	}
	h := &Host{Tree: NewTree(t), Mode: mode, hs: HierarchiesOf(mode), procs: map[int]*Proc{}}
	if err := writeLayout(h.Root, mode); err != nil {
		t.Fatal(err)
	}
	h.Write("proc/stat", string(procStat(100)))
	h.Add(Proc{PID: 1, Comm: "systemd", Args: []string{"/sbin/init"}, Cgroup: "/", Start: 1})
	return h
}

// Hierarchies returns the hierarchy directories of the host ("" is the
// v2 root in unified mode).
func (h *Host) Hierarchies() []string {
	dirs := make([]string, len(h.hs))
	for i, hier := range h.hs {
		dirs[i] = hier.Dir
	}
	return dirs
}

// Add adds (or replaces) a process and rewrites the tree.
func (h *Host) Add(p Proc) *Proc {
	h.t.Helper()
	if p.State == 0 {
		p.State = 'S'
	}
	if p.NS == 0 {
		p.NS = HostNS
	}
	if p.Comm == "" {
		p.Comm = "sleep"
	}
	if p.Cgroup == "" {
		p.Cgroup = "/"
	}
	cp := p
	h.procs[p.PID] = &cp
	h.writeProc(&cp)
	h.syncProcs()
	return &cp
}

// Get returns a process for changing; call Update after.
func (h *Host) Get(pid int) *Proc { return h.procs[pid] }

// Update rewrites a changed process.
func (h *Host) Update(p *Proc) {
	h.t.Helper()
	h.writeProc(p)
	h.syncProcs()
}

// Move puts pid into path in one hierarchy (the kernel's view changes: both
// /proc/<pid>/cgroup and cgroup.procs).
func (h *Host) Move(pid int, hier, path string) {
	h.t.Helper()
	p := h.procs[pid]
	if p.In == nil {
		p.In = map[string]string{}
	}
	p.In[hier] = path
	h.Update(p)
}

// Kill removes a process, as if it exited and was reaped.
func (h *Host) Kill(pid int) {
	h.t.Helper()
	delete(h.procs, pid)
	if err := os.RemoveAll(h.procDir(pid)); err != nil {
		h.t.Fatal(err)
	}
	h.syncProcs()
}

// RemoveProcDir removes /proc/<pid> but leaves the process in cgroup.procs:
// the process exited between the listing and the read.
func (h *Host) RemoveProcDir(pid int) {
	h.t.Helper()
	if err := os.RemoveAll(h.procDir(pid)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *Host) procDir(pid int) string { return filepath.Join(h.Root, "proc", strconv.Itoa(pid)) }

// CgroupOf returns the path of p in hierarchy dir hier.
func (p *Proc) CgroupOf(hier string) string {
	if v, ok := p.In[hier]; ok {
		return v
	}
	return p.Cgroup
}

func (h *Host) writeProc(p *Proc) {
	dir := h.procDir(p.PID)
	if err := os.RemoveAll(dir); err != nil {
		h.t.Fatal(err)
	}
	h.mkdir(filepath.Join(dir, "ns"))
	h.mkdir(filepath.Join(dir, "fd"))
	h.writeAbs(filepath.Join(dir, "stat"), string(statLine(nil, p.PID, p.Comm, p.State, p.PPID, p.Start)))
	h.writeAbs(filepath.Join(dir, "comm"), p.Comm+"\n")
	args := p.Args
	if args == nil {
		args = []string{p.Comm}
	}
	h.writeAbs(filepath.Join(dir, "cmdline"), strings.Join(args, "\x00")+"\x00")
	h.writeAbs(filepath.Join(dir, "cgroup"), string(cgroupFile(h.hs, func(hier Hierarchy) string { return p.CgroupOf(hier.Dir) })))
	if err := os.Symlink(fmt.Sprintf("pid:[%d]", p.NS), filepath.Join(dir, "ns/pid")); err != nil {
		h.t.Fatal(err)
	}
	if p.MntNS != 0 {
		if err := os.Symlink(fmt.Sprintf("mnt:[%d]", p.MntNS), filepath.Join(dir, "ns/mnt")); err != nil {
			h.t.Fatal(err)
		}
	}
	if p.Exe != "" {
		if err := os.Symlink(h.Path(p.Exe), filepath.Join(dir, "exe")); err != nil {
			h.t.Fatal(err)
		}
	}
	for fd, target := range p.FDs {
		if err := os.Symlink(target, filepath.Join(dir, "fd", strconv.Itoa(fd))); err != nil {
			h.t.Fatal(err)
		}
	}
}

// syncProcs rewrites every cgroup.procs from the process table.
func (h *Host) syncProcs() {
	if h.batch {
		return
	}
	members := map[string][]int{} // cgroup dir -> pids
	for _, hier := range h.Hierarchies() {
		base := filepath.Join(h.Root, "sys/fs/cgroup", hier)
		members[base] = members[base][:0]
		for _, p := range h.procs {
			d := filepath.Join(base, p.CgroupOf(hier))
			members[d] = append(members[d], p.PID)
		}
	}
	// Clear old files first: a process may have left a cgroup.
	_ = filepath.Walk(filepath.Join(h.Root, "sys/fs/cgroup"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Name() == "cgroup.procs" {
			_ = os.WriteFile(p, nil, 0o644)
		}
		return nil
	})
	for d, pids := range members {
		sort.Ints(pids)
		var b strings.Builder
		for _, pid := range pids {
			fmt.Fprintf(&b, "%d\n", pid)
		}
		h.mkdir(d)
		h.writeAbs(filepath.Join(d, "cgroup.procs"), b.String())
	}
	h.fillProcs()
}

// fillProcs gives every cgroup directory a cgroup.procs, as the kernel does.
func (h *Host) fillProcs() {
	_ = filepath.Walk(filepath.Join(h.Root, "sys/fs/cgroup"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() {
			if _, err := os.Stat(filepath.Join(p, "cgroup.procs")); err != nil {
				_ = os.WriteFile(filepath.Join(p, "cgroup.procs"), nil, 0o644)
			}
		}
		return nil
	})
}

// Cgroup makes an empty cgroup in every hierarchy.
func (h *Host) Cgroup(path string) {
	for _, hier := range h.Hierarchies() {
		h.mkdir(filepath.Join(h.Root, "sys/fs/cgroup", hier, path))
	}
	if !h.batch {
		h.fillProcs()
	}
}

// Container describes a runc container for State.
type Container struct {
	RuntimeRoot string // e.g. /run/runc
	Namespace   string // containerd namespace directory, "" for runc-style
	ID          string
	Cgroup      string // e.g. /garden/c1
	Init        int    // pid of init (must be added with Add, or absent for a ghost)
	InitStart   uint64 // recorded init_process_start
	SharedPidNS bool   // no NEWPID: the host's pid namespace
	// JoinPidNS, when set, is the namespace inode of another container this
	// one joined (NEWPID with a path), as Garden's peas join their sandbox.
	JoinPidNS uint64
	Created   bool // exec.fifo present
	// StartAsString writes init_process_start as a string (runc < 1.0.0-rc5).
	StartAsString bool
	// Crun writes crun's status file and config.json instead of runc's
	// state.json (RuntimeRoot /run/crun).
	Crun bool
	// Resources are more members of config.cgroups, as runc records a
	// container's limits ("memory", "cpu_weight": configs.Resources).
	Resources map[string]any
	// Recorded, when set, is the cgroup state.json's cgroup_paths name
	// instead of Cgroup, and nothing makes it: the record guardian's CPU
	// throttler writes for a privileged container (throttle/enforcer_linux.go
	// Release at c2d9348), whose processes stay in Cgroup.
	Recorded string
}

// State writes state.json for c as runc writes it (cgroup_paths per
// controller, "" for v2) and returns its path under the root.
func (h *Host) State(c Container) string {
	h.t.Helper()
	if c.Crun {
		return h.crunStatus(c)
	}
	recorded := c.Cgroup
	if c.Recorded != "" {
		recorded = c.Recorded
	}
	paths := map[string]string{}
	for _, hier := range h.hs {
		for _, k := range hier.Keys {
			paths[k] = filepath.Join(cgroup.MountDir, hier.Dir, recorded)
		}
	}
	h.Cgroup(c.Cgroup)
	namespaces := []map[string]string{{"type": "NEWNET", "path": ""}, {"type": "NEWNS", "path": ""}}
	nsPaths := map[string]string{"NEWNET": fmt.Sprintf("/proc/%d/ns/net", c.Init)}
	if c.JoinPidNS != 0 {
		namespaces = append([]map[string]string{{"type": "NEWPID", "path": "/proc/1/ns/pid-of-sandbox"}}, namespaces...)
	} else if !c.SharedPidNS {
		namespaces = append([]map[string]string{{"type": "NEWPID", "path": ""}}, namespaces...)
		nsPaths["NEWPID"] = fmt.Sprintf("/proc/%d/ns/pid", c.Init)
	}
	var start any = c.InitStart
	if c.StartAsString {
		start = strconv.FormatUint(c.InitStart, 10)
	}
	st := map[string]any{
		"id":                 c.ID,
		"init_process_pid":   c.Init,
		"init_process_start": start,
		"created":            BootTime.Add(time.Duration(c.InitStart) * 10 * time.Millisecond).Format(time.RFC3339Nano),
		"config": map[string]any{
			"rootfs":     "/var/vcap/data/garden/rootfs/" + c.ID,
			"cgroups":    cgroupsConfig(c),
			"namespaces": namespaces,
			"mounts":     []any{map[string]any{"source": "proc", "destination": "/proc", "device": "proc"}},
		},
		"rootless":        false,
		"cgroup_paths":    paths,
		"namespace_paths": nsPaths,
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		h.t.Fatal(err)
	}
	dir := filepath.Join(h.Root, c.RuntimeRoot, c.Namespace, c.ID)
	h.mkdir(dir)
	path := filepath.Join(dir, "state.json")
	h.writeAbs(path, string(b))
	if c.Created {
		h.writeAbs(filepath.Join(dir, "exec.fifo"), "")
	}
	return path
}

// cgroupsConfig is state.json's config.cgroups for c: its path and the
// resources it records.
func cgroupsConfig(c Container) map[string]any {
	cg := map[string]any{"path": c.Cgroup, "scope_prefix": "", "Systemd": false}
	for k, v := range c.Resources {
		cg[k] = v
	}
	return cg
}

// RunContainer adds a container with init and n-1 more processes in its
// pid namespace and cgroup, all started at tick start; pids from firstPID.
// Its pid namespace inode is NSOf(firstPID) unless shared or joined.
func (h *Host) RunContainer(c Container, firstPID, n int, start uint64) {
	h.t.Helper()
	ns := NSOf(firstPID)
	if c.SharedPidNS {
		ns = HostNS
	}
	if c.JoinPidNS != 0 {
		ns = c.JoinPidNS
	}
	c.Init, c.InitStart = firstPID, start
	for i := 0; i < n; i++ {
		comm := "app"
		if i == 0 {
			comm = "garden-init"
		}
		h.procs[firstPID+i] = &Proc{PID: firstPID + i, PPID: firstPID, Comm: comm, State: 'S', Start: start, NS: ns,
			MntNS: MntNSOf(firstPID), Cgroup: c.Cgroup}
		h.writeProc(h.procs[firstPID+i])
	}
	h.State(c)
	h.syncProcs()
}

// MntNSOf is the mount namespace inode RunContainer gives a container whose
// first pid is firstPID (every runc container has one of its own).
func MntNSOf(firstPID int) uint64 { return uint64(6000000000 + firstPID) }

// NSOf is the pid namespace inode RunContainer gives a container whose
// first pid is firstPID.
func NSOf(firstPID int) uint64 { return uint64(5000000000 + firstPID) }
