package checks

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/limits"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// LimitsIntact compares the limits each container's runtime recorded with
// what is in force along the cgroup each of its processes is in.
type LimitsIntact struct {
	// Runc names the host's runc: a child of it may still be joining its
	// container (runcvouch.go). Now is the clock; nil means time.Now.
	Runc RuncFiles
	Now  func() time.Time
}

func (LimitsIntact) Meta() validator.Meta {
	return validator.Meta{
		ID: "limits-intact",
		// Every layout: each controller's hierarchy on v1, cgroup.subtree_control along the path on v2.
		Layouts: everyLayout,
		Title:   "every container process runs under the limits its runtime recorded",
		Severity: map[validator.Phase]validator.Severity{
			// The tenant loses isolation, the VM keeps working: report,
			// do not hold a rollout; operators may make it blocking.
			validator.PreStart: validator.Warning,
			validator.Drain:    validator.Warning,
		},
		Story: "On cgroup v2, systemd writes `-cpuset -cpu -io` into the root's and each slice's cgroup.subtree_control " +
			"on every daemon-reload when no loaded unit needs those controllers: container cgroups directly below " +
			"them lose cpu.weight and io.weight with the processes unmoved and nothing in the journal above debug level (measured on " +
			"noble, systemd 255: issue 37). A `-memory` written into a parent's subtree_control removes memory.max the " +
			"same way, and Garden's CPU throttling moves processes into a cgroup that carries only cpu.weight.",
		References: []string{
			"https://github.com/systemd/systemd/blob/v255/src/core/cgroup.c",
			"https://docs.kernel.org/admin-guide/cgroup-v2.html#enabling-and-disabling",
			"https://github.com/opencontainers/cgroups/blob/main/fs2/fs2.go",
		},
		Fix: "Keep the controllers enabled above the runtime's cgroups: on v2, run the container daemon in a unit with " +
			"Delegate=yes (cellguard's delegated units do), which makes systemd enable cpu, io, memory and pids from the " +
			"root down; do not put containers directly below / or a slice. Then re-apply the recorded limits " +
			"(`runc update` with the container's resources) or recreate the container.",
		// pid and processes change as a container's processes come and go
		// while its limit stays lost.
		Measured: []string{"found", "value", "pid", "processes"},
	}
}

// Needs: the limits facts.
func (LimitsIntact) Needs() []facts.Kind { return []facts.Kind{facts.Limits} }

// Judge judges the limits facts; facts that could not be read at all make
// the check "could not judge". A process that is still the host's runc's
// (runcvouch.go) is not judged: while runc creates a Garden pea, its init
// is already in the pea's own cgroup, in the sandbox's pid namespace,
// before any state records the pea, so the snapshot can only tie it to the
// sandbox, whose limits it does not have (measured on a noble cell,
// TestFleet/noble/garden_v2: every pea's creation drew a finding from watch
// and its clearing a scan later).
func (li LimitsIntact) Judge(h *facts.Host) ([]validator.Finding, error) {
	lf := h.Limits()
	if lf.Err != nil {
		return nil, lf.Err
	}
	f := lf.Facts
	if v, err := h.Snapshot().Get(); err == nil {
		f = withoutJoining(f, v, newVoucher(v.ProcFS(), li.Runc, v.Boot(), li.Now, h.Recheck()))
		f = withoutLate(f, v, newLateStates(v, h.Recheck()))
	}
	return JudgeLimits(f), nil
}

// withoutLate is f without the processes (not a container's init) that
// are outside their container's cgroup in every hierarchy and, there, in a
// cgroup another container's state records now (lateStates): a pea made
// while the snapshot was read. f is not changed.
func withoutLate(f *limits.Facts, v *snapshot.Host, late *lateStates) *limits.Facts {
	return without(f, func(p *limits.Process) bool { return claimedElsewhere(p, v, late) })
}

func claimedElsewhere(p *limits.Process, v *snapshot.Host, late *lateStates) bool {
	if p.Err != "" || len(p.Paths) == 0 {
		return false
	}
	for _, path := range p.Paths {
		if cgroup.Under(path.Cgroup, p.Expected) {
			return false
		}
	}
	for i := range v.Discovery().Containers {
		if c := &v.Discovery().Containers[i]; c.StatePath == p.StatePath && c.State != nil && c.State.InitProcessPid == p.PID {
			return false
		}
	}
	for _, path := range p.Paths {
		h := v.Layout().ForKey(path.Key)
		if h == nil || !late.claimed(p.StatePath, h, path.Cgroup) {
			return false
		}
	}
	return true
}

// withoutJoining is f without the processes vouch excuses: children of the
// host's runc within its grace. f is not changed.
func withoutJoining(f *limits.Facts, v *snapshot.Host, vouch *voucher) *limits.Facts {
	return without(f, func(p *limits.Process) bool {
		pr := v.Find(p.PID)
		return pr != nil && vouch.runcChild(pr.Stat.PPID, pr.Stat.StartTime)
	})
}

// without is f without the processes drop says; f is not changed.
func without(f *limits.Facts, drop func(*limits.Process) bool) *limits.Facts {
	keep := make([]limits.Process, 0, len(f.Processes))
	for i := range f.Processes {
		if !drop(&f.Processes[i]) {
			keep = append(keep, f.Processes[i])
		}
	}
	if len(keep) == len(f.Processes) {
		return f
	}
	out := *f
	out.Processes = keep
	return &out
}

// JudgeLimits is the check's judgement of facts: one finding per container,
// recorded limit and what is there instead (the processes it names are
// those it applies to), one per thing that could not be read, and a
// summary. One per process would say the same thing for each of a
// container's processes, and the cap on a check's findings
// (validator.MaxProblemFindings) would then name the first container or
// two of a cell whose every container lost a limit.
func JudgeLimits(f *limits.Facts) []validator.Finding {
	var fs []validator.Finding
	var lost []lostGroup
	at := map[lostKey]int{}
	for _, p := range f.Problems {
		fs = append(fs, validator.Finding{Subject: "limits", Status: validator.Warn, Detail: "could not read: " + p})
	}
	checked := 0
	for i := range f.Processes {
		p := &f.Processes[i]
		if p.Err != "" {
			fs = append(fs, validator.Finding{Subject: p.Container, Status: validator.Warn,
				Detail: fmt.Sprintf("pid %d: could not read its cgroups: %s", p.PID, p.Err),
				Data:   map[string]string{"container": p.Container, "pid": strconv.Itoa(p.PID), "state": p.StatePath}})
			continue
		}
		checked++
		for _, w := range p.Wants {
			l, ok := judgeLimit(p, w, f.Unified)
			if ok {
				continue
			}
			k := lostKey{p.Container, p.Expected, p.StatePath, w.Limit, w.File, w.Value, l}
			if i, seen := at[k]; seen {
				lost[i].pids = append(lost[i].pids, p.PID)
				continue
			}
			at[k] = len(lost)
			lost = append(lost, lostGroup{p: p, w: w, l: l, pids: []int{p.PID}})
		}
	}
	for _, g := range lost {
		fs = append(fs, g.l.finding(g.p, g.w, g.pids))
	}
	fs = append(fs, validator.Finding{Status: validator.Pass,
		Detail: fmt.Sprintf("%s with recorded limits checked (%s running)", processes(checked), plural(f.Containers, "container")),
		Data:   map[string]string{"processes": strconv.Itoa(checked), "containers": strconv.Itoa(f.Containers)}})
	return fs
}

// Kinds of a lost limit, Data["found"].
const (
	LimitAbsent  = "absent"  // the file is not there: controller not enabled, or no cgroup
	LimitDefault = "default" // the kernel's value for a new cgroup
	LimitOther   = "other"   // another value
)

// lostKey is one container's recorded limit lost in one way at one cgroup:
// the processes that share it are one finding.
type lostKey struct {
	container, expected, state string
	limit, file, value         string
	lost                       lostLimit
}

// lostGroup is a lostKey's finding-to-be: the first process, in the facts'
// order, and every pid it applies to.
type lostGroup struct {
	p    *limits.Process
	w    limits.Want
	l    lostLimit
	pids []int
}

// lostLimit is what judgeLimit found instead of a recorded limit.
type lostLimit struct {
	kind   string
	cgroup string // the process's cgroup in the limit's hierarchy
	value  string // what is there (kinds default and other)
	why    string // for absent: why the file is not there
}

// judgeLimit reports whether w is in force for p: some cgroup along p's
// path holds the recorded value (Garden sets limits on /garden/<h> and
// puts runc's init in /garden/<h>/init: guardian
// rundmc/runcontainerd/cgroup_manager_linux.go). Otherwise it says what is
// at p's own cgroup.
func judgeLimit(p *limits.Process, w limits.Want, unified bool) (lostLimit, bool) {
	path := p.PathFor(w, unified)
	if path == nil {
		return lostLimit{kind: LimitAbsent, why: fmt.Sprintf("the process is in no %s hierarchy", w.Controller)}, false
	}
	leaf := path.Leaf()
	if leaf == nil {
		return lostLimit{kind: LimitAbsent, cgroup: path.Cgroup, why: "the process is in the root cgroup, where no limit applies"}, false
	}
	for _, lv := range path.Levels {
		if holds(lv, w) {
			return lostLimit{}, true
		}
	}
	file, v, ok := w.File, "", false
	if v, ok = leaf.Files[w.File]; !ok && w.AltFile != "" {
		file, v, ok = w.AltFile, leaf.Files[w.AltFile], hasFile(leaf, w.AltFile)
	}
	if !ok {
		if w.Optional {
			return lostLimit{}, true // runc writes it only where the kernel has it
		}
		return lostLimit{kind: LimitAbsent, cgroup: path.Cgroup, why: absentWhy(path, w)}, false
	}
	v = limits.Normalize(file, v)
	if v == w.Default {
		return lostLimit{kind: LimitDefault, cgroup: path.Cgroup, value: v}, false
	}
	return lostLimit{kind: LimitOther, cgroup: path.Cgroup, value: v}, false
}

func holds(lv limits.Level, w limits.Want) bool {
	if v, ok := lv.Files[w.File]; ok && limits.Normalize(w.File, v) == w.Value {
		return true
	}
	v, ok := lv.Files[w.AltFile]
	return w.AltFile != "" && ok && limits.Normalize(w.AltFile, v) == w.AltValue
}

func hasFile(lv *limits.Level, f string) bool { _, ok := lv.Files[f]; return ok }

// absentWhy names the highest cgroup on the path whose parent does not
// enable w's controller (v2), which is where it was switched off.
func absentWhy(path *limits.Path, w limits.Want) string {
	for _, lv := range path.Levels {
		if lv.ParentEnables != nil && !slices.Contains(lv.ParentEnables, w.Controller) {
			return fmt.Sprintf("the %s controller is not enabled in %s's cgroup.subtree_control", w.Controller, parentOf(lv.Cgroup))
		}
	}
	return w.File + " does not exist there"
}

func parentOf(cg string) string {
	for i := len(cg) - 1; i > 0; i-- {
		if cg[i] == '/' {
			return cg[:i]
		}
	}
	return "/"
}

// finding names p's container, w and what is there; pids are the
// processes it applies to, p's first.
func (l lostLimit) finding(p *limits.Process, w limits.Want, pids []int) validator.Finding {
	var what string
	switch l.kind {
	case LimitAbsent:
		what = "absent: " + l.why
	case LimitDefault:
		what = "the default " + l.value
	default:
		what = l.value
	}
	where := l.cgroup
	if where == "" {
		where = "(none)"
	}
	return validator.Finding{
		Subject: p.Container, Status: validator.Fail,
		Detail: fmt.Sprintf("%s: %s %s (recorded for %s) is %s at %s", pidList(pids), w.Limit, w.Value, p.Expected, what, where),
		Data: map[string]string{"container": p.Container, "pid": strconv.Itoa(p.PID), "processes": strconv.Itoa(len(pids)),
			"state": p.StatePath, "limit": w.Limit, "file": w.File, "recorded": w.Value, "expected_cgroup": p.Expected,
			"cgroup": l.cgroup, "found": l.kind, "value": l.value},
	}
}

// pidList is "pid 7", "pids 7, 9" or, past three, "pids 7, 9, 12 and 17 more".
func pidList(pids []int) string {
	if len(pids) == 1 {
		return "pid " + strconv.Itoa(pids[0])
	}
	var b []byte
	for i, pid := range pids[:min(3, len(pids))] {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, int64(pid), 10)
	}
	if len(pids) > 3 {
		b = fmt.Appendf(b, " and %d more", len(pids)-3)
	}
	return "pids " + string(b)
}

func processes(n int) string {
	if n == 1 {
		return "1 container process"
	}
	return strconv.Itoa(n) + " container processes"
}
