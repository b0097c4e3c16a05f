// Package fakehost writes fake container hosts for tests and benchmarks:
// /proc pid directories, cgroup hierarchies in the v1, hybrid or v2
// layout, runc state files and /proc/sys, under one root that the code
// under test reads as its Root. It models what the kernel and runc write,
// not how they behave: moving a process through cgroup.procs does not
// update /proc/<pid>/cgroup here.
//
// Three builders share one layout (Hierarchies), one stat and cgroup file
// format, one boot time and host pid namespace:
//   - Host (New) is a small host for unit tests, process by process, in
//     any cgroup mode, failing the test on any error;
//   - Generate writes a cell at scale (Cell: 250·k containers of 20
//     processes), sharing identical files by hard link, for the benchmarks
//     and cellbench;
//   - Tree is a bare root with file helpers and /proc/sys keys, for the
//     sysctl tests.
package fakehost

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
)

// BootTime is every fake host's btime; start ticks count from it.
var BootTime = time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)

// HostNS is the pid namespace inode of host processes.
const HostNS = 4026531836

// HostMntNS is the host's mount namespace inode, for processes a test
// gives one (Proc.MntNS).
const HostMntNS = 4026531841

// Hierarchy is one mounted cgroup hierarchy.
type Hierarchy struct {
	Dir  string // under sys/fs/cgroup; "" is the v2 root of a unified host
	Name string // as the validator reports it
	ID   int    // hierarchy id in /proc/<pid>/cgroup
	// Keys are the state.json cgroup_paths keys runc writes for it.
	Keys []string
	// Moved is true when systemd moves a unit's processes in it: the
	// hierarchies an escaped process leaves (Generate).
	Moved bool
}

// unified reports whether h is a cgroup v2 hierarchy: its line in
// /proc/<pid>/cgroup is "0::<path>".
func (h Hierarchy) unified() bool { return h.Keys[0] == "" }

// Hierarchies is the hybrid layout of an Ubuntu stemcell: v1 controllers
// with cpu and cpuacct co-mounted, systemd's named hierarchy, and v2 at
// unified/. Escapes happen where systemd realizes a unit's cgroup
// (name=systemd, v2 and the controllers it enables for accounting);
// devices, freezer and cpuset keep the container's path.
var Hierarchies = []Hierarchy{
	{Dir: "systemd", Name: "name=systemd", ID: 9, Keys: []string{"name=systemd"}, Moved: true},
	{Dir: "pids", Name: "pids", ID: 8, Keys: []string{"pids"}, Moved: true},
	{Dir: "blkio", Name: "blkio", ID: 7, Keys: []string{"blkio"}, Moved: true},
	{Dir: "freezer", Name: "freezer", ID: 6, Keys: []string{"freezer"}},
	{Dir: "devices", Name: "devices", ID: 5, Keys: []string{"devices"}},
	{Dir: "memory", Name: "memory", ID: 4, Keys: []string{"memory"}, Moved: true},
	{Dir: "cpuset", Name: "cpuset", ID: 3, Keys: []string{"cpuset"}},
	{Dir: "cpu,cpuacct", Name: "cpu,cpuacct", ID: 2, Keys: []string{"cpu", "cpuacct"}, Moved: true},
	{Dir: "unified", Name: "unified", ID: 0, Keys: []string{""}, Moved: true},
}

// unifiedRoot is the one hierarchy of a pure cgroup v2 host.
var unifiedRoot = Hierarchy{Dir: "", Name: "unified", ID: 0, Keys: []string{""}, Moved: true}

// HierarchiesOf returns the hierarchies mounted in mode.
func HierarchiesOf(mode cgroup.Mode) []Hierarchy {
	switch mode {
	case cgroup.Unified:
		return []Hierarchy{unifiedRoot}
	case cgroup.Legacy:
		return Hierarchies[:len(Hierarchies)-1]
	}
	return Hierarchies
}

// writeLayout makes the cgroup mounts of mode under root: a directory per
// hierarchy, cpu and cpuacct as symlinks to the co-mounted one, and
// cgroup.controllers where a v2 hierarchy is.
func writeLayout(root string, mode cgroup.Mode) error {
	base := filepath.Join(root, cgroup.MountDir)
	if mode == cgroup.Unified {
		return writeFile(filepath.Join(base, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"))
	}
	for _, h := range HierarchiesOf(mode) {
		if err := os.MkdirAll(filepath.Join(base, h.Dir), 0o755); err != nil {
			return fmt.Errorf("fakehost: %w", err)
		}
	}
	for _, l := range []string{"cpu", "cpuacct"} {
		if err := os.Symlink("cpu,cpuacct", filepath.Join(base, l)); err != nil {
			return fmt.Errorf("fakehost: %w", err)
		}
	}
	if mode == cgroup.Hybrid {
		return writeFile(filepath.Join(base, "unified/cgroup.controllers"), nil)
	}
	return nil
}

func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("fakehost: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("fakehost: write %s: %w", path, err)
	}
	return nil
}

// procStat is /proc/stat of a host that has forked processes so far.
func procStat(processes int) []byte {
	return fmt.Appendf(nil, "cpu  4705 150 1120 1632338 1018 0 17 0 0 0\nintr 0\nctxt 0\nbtime %d\nprocesses %d\nprocs_running 1\nprocs_blocked 0\n",
		BootTime.Unix(), processes)
}

// statLine renders /proc/<pid>/stat with the kernel's 52 fields.
func statLine(b []byte, pid int, comm string, state byte, ppid int, start uint64) []byte {
	b = fmt.Appendf(b[:0], "%d (%s) %c %d %d %d 0 -1 4194560 1523 0 2 0 12 7 0 0 20 0 1 0 %d 12451840 2211 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		pid, comm, state, ppid, pid, pid, start)
	return b
}

// cgroupFile renders /proc/<pid>/cgroup: one line per hierarchy of hs,
// with the path pathOf gives.
func cgroupFile(hs []Hierarchy, pathOf func(Hierarchy) string) []byte {
	var b []byte
	for _, h := range hs {
		name := h.Name
		if h.unified() {
			name = ""
		}
		b = fmt.Appendf(b, "%d:%s:%s\n", h.ID, name, pathOf(h))
	}
	return b
}
