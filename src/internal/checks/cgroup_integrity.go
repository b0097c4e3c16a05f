package checks

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/evidence"
	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// CgroupIntegrity compares every container process's cgroups with the
// runtime state that created it.
type CgroupIntegrity struct {
	host *snapshot.Source
	// recheck waits and reads a suspect again (facts.Host.Recheck).
	recheck facts.Recheck
	// Confirm are the waits before an escape counts; nil means
	// recheckDelays.
	Confirm []time.Duration
	// Runc names the host's runc: a child of its `runc exec` may still be
	// joining (runcvouch.go). Now is the clock; nil means time.Now.
	Runc RuncFiles
	Now  func() time.Time
}

var _ validator.Check = (*CgroupIntegrity)(nil)

// recheckDelays let a process that is mid-way through joining its cgroups
// (runc exec writes one hierarchy after another) finish before it counts as
// escaped; only suspects pay for them. A suspect must still be outside after
// each wait. On a cell busy forking, each cgroup write of runc waits for the
// kernel's threadgroup lock, and a join was seen taking longer than 100ms
// (TestValidateUnderChurn); 1.5s in all is far beyond that, and a real
// escape does not heal by itself.
var recheckDelays = []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}

// Needs: the host snapshot.
func (*CgroupIntegrity) Needs() []facts.Kind { return []facts.Kind{facts.Snapshot} }

func (*CgroupIntegrity) Meta() validator.Meta {
	return validator.Meta{
		ID: "cgroup-integrity",
		// Every layout: the one hierarchy on v2, each controller's (and name=systemd) on v1.
		Layouts: everyLayout,
		Title:   "container processes are in the cgroups their runtime recorded",
		Severity: map[validator.Phase]validator.Severity{
			validator.PreStart: validator.Blocking,
			validator.Drain:    validator.Blocking,
		},
		Story: "A daemon run by monit in a non-delegated systemd unit created garden/<id> cgroups; " +
			"when systemd later realized cgroups for another unit it moved container processes back into " +
			"the unit's cgroup (or /). runc's state.json still pointed at garden/<id>, so `runc kill --all` " +
			"killed nothing and Garden looped destroying containers.",
		References: []string{
			"https://github.com/concourse/concourse/issues/3613",
			"https://github.com/cloudfoundry/garden-runc-release/issues/108",
			"https://systemd.io/CGROUP_DELEGATION/",
		},
		Fix: "Run `cellguard validate --fix` to move the processes back into their recorded cgroups, " +
			"then run the runtime's daemon in a delegated unit (`cellguard.daemons`, or " +
			"`cellguard.delegate_units` for a unit another release writes, e.g. garden.service): on v1 and " +
			"hybrid hosts Delegate= lists every v1 controller incl. blkio, so systemd stops moving processes; " +
			"on cgroup v2 Delegate=yes keeps the controllers enabled above the containers, so their limits stay. " +
			"A warning that the runtime's record is false (none of the cgroups its state names exists) is not an escape: " +
			"nothing is moved or created, the process runs where the runtime put it. With CPU throttling on, Garden " +
			"rewrites a privileged container's record to garden/good/<id>, which it never makes (guardian " +
			"throttle/enforcer_linux.go Release); that is Garden's record to correct.",
	}
}

// Escape is evidence.Escape, where the type now lives (heal and watch read
// it without importing the checks).
type Escape = evidence.Escape

// Escapes is evidence.Escapes.
func Escapes(fs []validator.Finding) []Escape { return evidence.Escapes(fs) }

// suspect is an escape the scan saw, with what confirming it needs: the
// container it is judged against and the pid namespace the scan read (0
// when not read); its start time is the Escape's.
type suspect struct {
	Escape
	c  *runcstate.Container
	cm *snapshot.Members
	ns uint64
}

func (ci *CgroupIntegrity) Run(ctx context.Context) ([]validator.Finding, error) {
	v, err := ci.host.Get()
	if err != nil {
		return nil, err
	}
	escapes, nContainers, nProcs, skipped, err := ci.scan(ctx, v)
	if err != nil {
		return nil, err
	}
	if len(escapes) > 0 {
		// Confirm: only processes still outside after every wait count.
		delays := ci.Confirm
		if delays == nil {
			delays = recheckDelays
		}
		rr := ci.recheck.Rereader(v)
		vouch := newVoucher(v.ProcFS(), ci.Runc, v.Boot(), ci.Now, ci.recheck)
		for _, d := range delays {
			ci.recheck.Sleep(d)
			if escapes = confirm(rr, escapes, vouch); len(escapes) == 0 {
				break
			}
		}
		if len(escapes) > 0 {
			escapes = unclaimed(escapes, newLateStates(v, ci.recheck))
		}
	}
	var fs []validator.Finding
	fs = append(fs, skipped...)
	for _, e := range escapes {
		fs = append(fs, e.Finding())
	}
	fs = append(fs, runtimesFound(v)...)
	fs = append(fs, validator.Finding{
		Status: validator.Pass,
		Detail: fmt.Sprintf("%d containers, %d container processes checked on a %s cgroup host", nContainers, nProcs, v.Layout().Mode),
		Data: map[string]string{"containers": strconv.Itoa(nContainers), "processes": strconv.Itoa(nProcs),
			"cgroup_mode": v.Layout().Mode.String(), "unreadable_processes": strconv.Itoa(v.Denied())},
	})
	return fs, nil
}

// scan finds the escapes of every container.
func (ci *CgroupIntegrity) scan(ctx context.Context, v *snapshot.Host) (escapes []suspect, nContainers, nProcs int, skipped []validator.Finding, err error) {
	j := judging{v: v}
	// "Everything in its pid namespace": the processes no container cgroup
	// lists (escaped from every hierarchy), each attributed to one
	// container. A listed process is checked against the container that
	// lists it.
	unlisted := v.UnlistedOwners()
	for i := range v.Discovery().Containers {
		if err := ctx.Err(); err != nil {
			return nil, 0, 0, nil, err
		}
		c := &v.Discovery().Containers[i]
		cm := v.Members(i)
		if len(cm.Exps) == 0 {
			skipped = append(skipped, uncheckable(c, cm))
			continue
		}
		nContainers++
		n, err := j.container(c, cm, unlisted[i], &escapes)
		if err != nil {
			return nil, 0, 0, nil, err
		}
		nProcs += n
		skipped = append(skipped, j.falseRecords(c)...)
	}
	return escapes, nContainers, nProcs, skipped, nil
}

// uncheckable is the finding of a container with no cgroup to check: none
// at all (a rootless container) is nothing to check; cgroups on no
// hierarchy mounted here means we cannot check.
func uncheckable(c *runcstate.Container, cm *snapshot.Members) validator.Finding {
	f := validator.Finding{
		Subject: c.Name(), Status: validator.Skip,
		Detail: fmt.Sprintf("state %s records no cgroups", c.StatePath),
		Data:   map[string]string{"state": c.StatePath},
	}
	if len(cm.Unmapped) > 0 {
		f.Status = validator.Warn
		f.Detail = fmt.Sprintf("cannot check: state %s records cgroups (%s) on no hierarchy mounted under %s",
			c.StatePath, strings.Join(cm.Unmapped, ", "), cgroup.MountDir)
		f.Data["unmapped"] = strings.Join(cm.Unmapped, ",")
	}
	return f
}

// judging is one scan's snapshot and reused buffers.
type judging struct {
	v       *snapshot.Host
	m       cgroup.Membership
	members []int
	// absent are the current container's false records, one per
	// hierarchy, when none of its recorded cgroups exists.
	absent []falseRecord
}

// falseRecord is a container's record in one hierarchy naming a cgroup
// that does not exist, and the first of its processes found elsewhere
// (its init when that is among them).
type falseRecord struct {
	want   snapshot.Expectation
	pid    int
	comm   string
	actual string
	n      int // processes of the container outside the recorded cgroup
}

// container appends the suspects among c's processes (its init, the
// processes its cgroups list, and unlisted, those only its pid namespace
// ties to it) to escapes and returns how many processes it checked. A
// process listed in every hierarchy is inside; the snapshot read
// /proc/<pid>/cgroup of the others.
func (j *judging) container(c *runcstate.Container, cm *snapshot.Members, unlisted []int, escapes *[]suspect) (int, error) {
	j.members = j.members[:0]
	j.absent = j.absent[:0]
	initPID := 0 // known to be the container's by its start time
	if p := j.v.InitOf(c); p != nil {
		j.members = append(j.members, p.PID)
		initPID = p.PID
	}
	j.members = append(j.members, unlisted...)
	j.members = append(j.members, cm.Any()...) // one copy of each listed pid, not one per hierarchy
	sort.Ints(j.members)
	j.members = compactInts(j.members)
	falseRecord := cm.NoneExists()
	nProcs := 0
	for _, pid := range j.members {
		if cm.InAll(pid) {
			nProcs++
			continue
		}
		b, err := j.v.Cgroup(pid)
		if procfs.IsGone(err) || procfs.IsDenied(err) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if err := cgroup.ParseProcCgroup(b, &j.m); err != nil {
			return 0, fmt.Errorf("parse %s: %w", j.v.ProcFS().Path(pid, "cgroup"), err)
		}
		if pid != initPID && reused(cm, pid, &j.m) {
			continue
		}
		nProcs++
		for _, e := range cm.Exps {
			actual, ok := j.m.Lookup(e.Key)
			if !ok || cgroup.Under(string(actual), e.Rel) {
				continue
			}
			if falseRecord {
				// Not an escape: nothing can leave a cgroup that never
				// existed, nor be moved back into it.
				j.recordFalse(e, pid, pid == initPID, string(actual))
				continue
			}
			esc := suspect{Escape: Escape{Container: c.Name(), Runtime: c.Runtime, State: c.StatePath, PID: pid,
				Want: e, Actual: string(actual)}, c: c, cm: cm}
			if p := j.v.Find(pid); p != nil {
				esc.Comm, esc.StartTime, esc.ns = p.Stat.Comm, p.Stat.StartTime, p.NS
			}
			*escapes = append(*escapes, esc)
		}
	}
	return nProcs, nil
}

// recordFalse notes pid, in actual, outside the recorded cgroup of e that
// does not exist.
func (j *judging) recordFalse(e snapshot.Expectation, pid int, isInit bool, actual string) {
	comm := ""
	if p := j.v.Find(pid); p != nil {
		comm = p.Stat.Comm
	}
	for i := range j.absent {
		if r := &j.absent[i]; r.want.Hierarchy == e.Hierarchy {
			r.n++
			if isInit {
				r.pid, r.comm, r.actual = pid, comm, actual
			}
			return
		}
	}
	j.absent = append(j.absent, falseRecord{want: e, pid: pid, comm: comm, actual: actual, n: 1})
}

// falseRecords are the warnings of the container's false records: the
// runtime's state names a cgroup that does not exist while its processes
// run elsewhere. Healing has nowhere to move them (and makes no cgroup
// the runtime did not), so this is the runtime's record to fix, not an
// escape.
func (j *judging) falseRecords(c *runcstate.Container) []validator.Finding {
	var fs []validator.Finding
	for _, r := range j.absent {
		who := fmt.Sprintf("pid %d (%s) is", r.pid, r.comm)
		if r.n > 1 {
			who = fmt.Sprintf("pid %d (%s) and %d more of its processes are", r.pid, r.comm, r.n-1)
		}
		fs = append(fs, validator.Finding{
			Subject: c.Name(), Status: validator.Warn,
			Detail: fmt.Sprintf("%s in %s, but state says %s (%s), a cgroup that does not exist: "+
				"the runtime's record is false, not an escape, and nothing moves the process there",
				who, r.actual, r.want.Rel, r.want.Hierarchy.Name),
			Data: map[string]string{
				"container": c.Name(), "runtime": c.Runtime, "state": c.StatePath,
				"pid": strconv.Itoa(r.pid), "comm": r.comm, "hierarchy": r.want.Hierarchy.Name,
				"recorded": r.want.Rel, "recorded_exists": "false", "actual": r.actual,
				"processes": strconv.Itoa(r.n),
			},
			Measured: falseRecordMeasured,
		})
	}
	return fs
}

// falseRecordMeasured: which process is named, where, and how many change
// while the record stays false.
var falseRecordMeasured = []string{"pid", "comm", "actual", "processes"}

// confirm re-reads each suspect and keeps those still outside (and still
// the same process, and still the container's). A process outside in
// several hierarchies is several escapes in a row: it is read once for all.
func confirm(rr snapshot.Rereader, escapes []suspect, vouch *voucher) []suspect {
	var out []suspect
	for i := 0; i < len(escapes); {
		j := i + 1
		for j < len(escapes) && escapes[j].PID == escapes[i].PID && escapes[j].c == escapes[i].c {
			j++
		}
		if now, err := rr.Reread(escapes[i].PID); err == nil {
			out = append(out, stillOutside(&now, &escapes[i], vouch)...)
		}
		i = j
	}
	return out
}

// stillOutside judges the suspect e0 (one escape of the process; the
// others differ only in hierarchy) as it is now and returns its escapes:
// it is the process the scan saw (start time), still the container's (in
// one of its cgroups, or in the pid namespace that tied it to the
// container), and each hierarchy it is outside in now is one escape. Under
// fast pid reuse a pid can go to another process within the clock tick the
// start time counts in; such a process is outside every container cgroup
// and in the host's namespace, so it is dropped here.
func stillOutside(now *snapshot.Now, e0 *suspect, vouch *voucher) []suspect {
	if now.Stat.StartTime != e0.StartTime {
		return nil
	}
	if e0.PID != e0.c.State.InitProcessPid && vouch.runcChild(now.Stat.PPID, now.Stat.StartTime) {
		// A `runc exec` still joining: the host's runc writes its child's
		// cgroups only after the child entered the container's namespaces,
		// one hierarchy after another, and on a cell busy forking each
		// write can take tens of milliseconds. Its comm says nothing: only
		// its parent's executable and its age excuse it (runcvouch.go).
		return nil
	}
	// Every hierarchy is judged again, not only the suspect ones: systemd
	// moves a unit's processes one controller after another, and a scan
	// that came in between must heal (or report) the whole move at once,
	// not half of it now and the rest in the next scan.
	var out []suspect
	inside := false
	for _, x := range e0.cm.Exps {
		actual, ok := now.Cgroup(x.Key)
		if !ok {
			continue
		}
		if cgroup.Under(actual, x.Rel) {
			inside = true
			continue
		}
		e := *e0
		e.Want, e.Actual = x, actual
		e.PidNS = now.PidNS // as confirmed: the identity heal checks
		out = append(out, e)
	}
	if len(out) == 0 || inside {
		return out // inside in another hierarchy: the container's
	}
	if e0.ns == 0 || now.PidNS != e0.ns {
		return nil
	}
	return out
}

// unclaimed drops the confirmed escapes of a process (not a container's
// init) that is, in every hierarchy it is outside in, in a cgroup another
// container's state records now (lateStates).
func unclaimed(escapes []suspect, late *lateStates) []suspect {
	out := escapes[:0]
	for i := 0; i < len(escapes); {
		j, all := i, true
		for ; j < len(escapes) && escapes[j].PID == escapes[i].PID && escapes[j].c == escapes[i].c; j++ {
			e := &escapes[j]
			all = all && e.PID != e.c.State.InitProcessPid && late.claimed(e.c.StatePath, e.Want.Hierarchy, e.Actual)
		}
		if !all {
			out = append(out, escapes[i:j]...)
		}
		i = j
	}
	return out
}

// reused reports whether pid, listed by the container in some hierarchy,
// now belongs to a process outside the container in every hierarchy that
// listed it: the listed process exited between the reads of two
// cgroup.procs files and its pid went to another process (a pid counter
// that wrapped hands pids out again at once). That process never was the
// container's. A real escapee is still inside where it is still listed; one
// moved out of every hierarchy is found by its pid namespace.
func reused(m *snapshot.Members, pid int, now *cgroup.Membership) bool {
	listed := false
	for j, l := range m.Listed {
		i := sort.SearchInts(l, pid)
		if i == len(l) || l[i] != pid {
			continue
		}
		listed = true
		if actual, ok := now.Lookup(m.Exps[j].Key); !ok || cgroup.Under(string(actual), m.Exps[j].Rel) {
			return false
		}
	}
	return listed
}

func compactInts(s []int) []int {
	if len(s) == 0 {
		return s
	}
	out := s[:1]
	for _, x := range s[1:] {
		if x != out[len(out)-1] {
			out = append(out, x)
		}
	}
	return out
}
