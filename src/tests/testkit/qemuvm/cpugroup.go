package qemuvm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// CPUGroup is the cgroup (v1 cpu controller) every TCG guest's qemu on
// this host runs in, this kit's and the QEMU CPI's alike
// (src/tests/bosh/cpi/qemu-cpi, cpu_group: the same path and values).
//
// nice alone did not keep a guest's clock: on a cgroup v1 host without
// systemd as PID 1 every process sits in the cpu root, where CFS weighs
// each runnable task on its own, and make test's box shapes bring up
// directors and compile beside the guests with 30-47 tasks runnable. A
// guest at nice -10 (weight 9548) then gets a third of a core: the CPI test's agent answered 4m25s after create_vm (60 s on a
// quiet host), which held the host lock and the fleet's noble lane behind
// it (CI-U, 2026-12-08). A group is weighed as one entity: at cpu.shares
// 65536 (64 nice-0 tasks) its guests get 1.15 of 2 cores against the 47
// runnable tasks seen here, 1.7 against 10, and both cores when nothing
// else runs (the end of make test: src/tests/qemu's two guests alone). No
// quota: a cap of 1.5 cores would have slowed exactly that end.
const CPUGroup = "/sys/fs/cgroup/cpu/cellguard-qemu"

// cpuGroupShares is the group's cpu.shares.
const cpuGroupShares = 65536

// errNoCPUGroup: the host has no v1 cpu hierarchy (a unified host); the
// guest then has its nice value alone.
var errNoCPUGroup = errors.New("no cgroup v1 cpu hierarchy at /sys/fs/cgroup/cpu")

// joinCPUGroup moves process pid, every thread of it, into CPUGroup,
// making the group when it is missing. Another process's removeCPUGroup
// may take the group away between the steps (it removes only an empty
// one): the steps are tried again from the start.
func joinCPUGroup(pid int) error {
	return joinCPUGroupAt(CPUGroup, pid)
}

func joinCPUGroupAt(group string, pid int) error {
	if !HasCPUGroups() {
		return errNoCPUGroup
	}
	var err error
	for range 3 {
		if err = os.Mkdir(group, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			break
		}
		err = writeCPUGroup(group, "cpu.shares", cpuGroupShares)
		if err == nil {
			err = writeCPUGroup(group, "cgroup.procs", pid)
		}
		if !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("put qemu pid %d in %s: %w", pid, group, err)
	}
	return nil
}

func writeCPUGroup(group, file string, n int) error {
	return os.WriteFile(filepath.Join(group, file), []byte(strconv.Itoa(n)), 0o644)
}

// removeCPUGroup removes CPUGroup when no process is left in it; while a
// guest of this or another process runs, the kernel refuses (EBUSY) and
// the group stays for it.
func removeCPUGroup() {
	removeCPUGroupAt(CPUGroup)
}

func removeCPUGroupAt(group string) {
	if err := syscall.Rmdir(group); err != nil && !errors.Is(err, syscall.EBUSY) && !errors.Is(err, syscall.ENOENT) {
		fmt.Fprintf(os.Stderr, "qemuvm: remove %s: %v\n", group, err)
	}
}

// HasCPUGroups says whether the host has the v1 cpu hierarchy CPUGroup is in.
func HasCPUGroups() bool {
	_, err := os.Stat(filepath.Join(filepath.Dir(CPUGroup), "cpu.shares"))
	return err == nil
}

// CPUGroupOf is the v1 cpu cgroup process pid is in ("" when unknown).
func CPUGroupOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		// hierarchy-ID:controller-list:path, where the list holds cpu.
		f := strings.SplitN(l, ":", 3)
		if len(f) == 3 && f[1] != "" && f[0] != "0" {
			for _, c := range strings.Split(f[1], ",") {
				if c == "cpu" {
					return f[2]
				}
			}
		}
	}
	return ""
}
