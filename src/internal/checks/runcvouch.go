package checks

import (
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
)

// What excuses a process that looks like runc's own (issue 38, hole 2).
// A comm, an argv and a parent's comm are the process's to choose: a
// tenant names itself runc:[2:INIT] with one prctl. Only facts it cannot
// forge excuse it:
//
//   - it is a runtime state's init, by pid and start time (stat field 22,
//     which runc records as init_process_start);
//   - it is a child of a host runc process, by that process's executable
//     (the kernel's /proc/<pid>/exe: device and inode of the file it runs),
//     and it started less than runcGrace ago.
//
// The second is what runc does: nsexec clones its stage-1 and stage-2
// (runc:[2:INIT]) processes with CLONE_PARENT, so each is a child of the
// `runc exec` or `runc create` process itself (opencontainers/runc
// 76d9cf5d, libcontainer/nsenter/nsexec.c:322, 867, 1132), and that
// process writes the stage-2 pid into the container's cgroups only after it
// has joined the namespaces (process_linux.go:457-488, setnsProcess.start:
// execSetns, then addIntoCgroup); `runc create` writes state.json after the
// init is in its cgroups and the hooks have run. Until then the process is
// outside its cgroups, or in a cgroup no state claims. runc's own
// re-executed binary is not the host's file (a memfd or a sealed copy), so
// the parent is what is checked, not the process.

// runcGrace bounds how long a child of the host's runc is excused: a join
// takes milliseconds (tens of them on a cell busy forking, 1.5s at most in
// TestValidateUnderChurn), a create as long as its hooks. A child of runc
// still outside its container after this is reported like any process:
// runc exec also stays the parent of the command it ran, whose escape must
// not be excused for as long as that command lives.
const runcGrace = 30 * time.Second

// RuncFiles name the host's runc binaries: the configured one
// (validator.runtime_binaries.runc), every runc on the fixed PATH
// runtime-versions searches, and Paths, all under the root.
type RuncFiles struct {
	Configured map[string]string
	Paths      []string
}

// voucher decides the excuses of one run: the host's runc binaries, read
// through the recheck door on first use, and the clock.
type voucher struct {
	fs      procfs.FS
	files   RuncFiles
	boot    time.Time
	now     func() time.Time
	recheck facts.Recheck
	runcs   map[facts.FileID]bool
}

// newVoucher judges processes under fs's root; files name the host's
// runc, now is the clock (nil: time.Now), recheck reads the files' and
// processes' identities.
func newVoucher(fs procfs.FS, files RuncFiles, boot time.Time, now func() time.Time, recheck facts.Recheck) *voucher {
	if now == nil {
		now = time.Now
	}
	return &voucher{fs: fs, files: files, boot: boot, now: now, recheck: recheck}
}

// runcChild reports whether a process started at start (stat ticks) with
// parent ppid is a child of the host's runc within runcGrace.
func (v *voucher) runcChild(ppid int, start uint64) bool {
	return v.age(start) <= runcGrace && v.isRunc(ppid)
}

// isRunc reports whether pid runs one of the host's runc binaries. Stat
// through /proc/<pid>/exe follows the kernel's link to the executed file,
// whatever the process calls itself and wherever its mount namespace puts
// the file.
func (v *voucher) isRunc(pid int) bool {
	if v.runcs == nil {
		v.runcs = v.recheck.RuncFiles(v.fs.Root, v.files.Configured, v.files.Paths)
	}
	if pid <= 0 || len(v.runcs) == 0 {
		return false
	}
	id, ok := v.recheck.FileID(v.fs.Path(pid, "exe"))
	return ok && v.runcs[id]
}

// age is how long ago a process started at start (stat ticks) started.
func (v *voucher) age(start uint64) time.Duration {
	return v.now().Sub(procfs.StartedAt(v.boot, start))
}
