package checks

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// DefaultRuncInitMaxAge is how long a `runc init` may live. It lives from
// `runc create` until `runc start` (Garden and containerd call start right
// after create: milliseconds, seconds on a loaded cell) or, for `runc exec`,
// until the process execs. Five minutes is far above any healthy gap, below
// BOSH's usual update watch time, so a rollout sees the hang while it can
// still stop.
const DefaultRuncInitMaxAge = 5 * time.Minute

// minPipePages is the kernel's default pipe capacity (16 pages). A runc
// pipe below it means the user hit fs.pipe-user-pages-soft and new pipes
// got one page: what made runc 1.0.0-rc93 hang in runc init.
const minPipePages = 16

// StuckRuncInit finds `runc init` processes older than MaxAge and pipes
// held by runc processes with less than the default capacity.
type StuckRuncInit struct {
	host   *snapshot.Source
	MaxAge time.Duration
	Now    func() time.Time
	// PipeCapacity reads a pipe's capacity; nil means procfs.PipeCapacity.
	PipeCapacity func(fs procfs.FS, pid, fd int) (int, error)
	// Runc names the host's runc, whose children are vouched for
	// (runcvouch.go).
	Runc RuncFiles
	// Recheck vouches for runc's children (runcvouch.go); nil means
	// facts.LiveRecheck.
	Recheck facts.Recheck
}

var _ validator.Check = (*StuckRuncInit)(nil)

// Needs: the host snapshot.
func (*StuckRuncInit) Needs() []facts.Kind { return []facts.Kind{facts.Snapshot} }

func (*StuckRuncInit) Meta() validator.Meta {
	return validator.Meta{
		ID: "stuck-runc-init",
		// Every layout: runc init's age and its pipes are no cgroup's.
		Layouts:  everyLayout,
		Measured: []string{"age_seconds", "capacity_bytes", "pipes", "probed", "small_pipes"},
		Title:    "no runc init is stuck and runc's pipes have their full capacity",
		Severity: map[validator.Phase]validator.Severity{
			validator.PreStart: validator.Warning,
			validator.Drain:    validator.Warning,
		},
		Story: "With fs.pipe-user-pages-soft exhausted, new pipes got a single page; runc " +
			"1.0.0-rc93 wrote the seccomp filter into such a pipe before reading it and `runc init` blocked forever, so " +
			"container creation hung and Garden piled up runc init processes.",
		References: []string{
			"https://github.com/opencontainers/runc/pull/2871",
			"https://github.com/cloudfoundry/garden-runc-release/issues/121",
			"https://man7.org/linux/man-pages/man7/pipe.7.html",
		},
		Fix: "Upgrade runc past 1.0.0-rc93; raise fs.pipe-user-pages-soft (or set it to 0) with " +
			"`cellguard sysctl apply`; then stop the stuck `runc init` processes by destroying their " +
			"containers through Garden/containerd.",
	}
}

func (s *StuckRuncInit) Run(ctx context.Context) ([]validator.Finding, error) {
	v, err := s.host.Get()
	if err != nil {
		return nil, err
	}
	maxAge := s.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultRuncInitMaxAge
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	capOf := s.PipeCapacity
	if capOf == nil {
		capOf = procfs.PipeCapacity
	}
	minCap := minPipePages * syscall.Getpagesize()
	// Which container a runc init belongs to: its pid is the state's init.
	byInit := map[int]*runcstate.Container{}
	for i := range v.Discovery().Containers {
		c := &v.Discovery().Containers[i]
		byInit[c.State.InitProcessPid] = c
	}
	vouch := newVoucher(v.ProcFS(), s.Runc, v.Boot(), now, s.recheck())
	r := v.ProcFS().NewReader()
	defer r.Close()
	var fs []validator.Finding
	inits, runcs := 0, 0
	for i := range v.Procs() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := &v.Procs()[i]
		if !strings.HasPrefix(p.Stat.Comm, "runc") {
			continue
		}
		args, err := r.Cmdline(p.PID)
		if err != nil && !procfs.IsGone(err) {
			return nil, err
		}
		if err != nil {
			continue
		}
		runcs++
		if isRuncInit(p.Stat.Comm, args) {
			inits++
			if f, ok := stuckInit(p, byInit[p.PID], vouch, maxAge); ok {
				fs = append(fs, f)
			}
		}
		fs = append(fs, s.smallPipes(v, r, p, capOf, minCap)...)
	}
	fs = append(fs, validator.Finding{
		Status: validator.Pass,
		Detail: fmt.Sprintf("%d runc processes, %d runc init, limit %s", runcs, inits, maxAge),
	})
	return fs, nil
}

// stuckInit judges a process that looks like runc init (its comm or argv
// say so, which it chooses). Only what it cannot forge earns it maxAge:
// being c's init by pid and start time (a created container waiting for
// `runc start`), or a child of the host's runc (a create or exec under
// way). Anything else gets runcGrace, then is a finding: a name is no
// alibi (issue 38, hole 2).
func stuckInit(p *snapshot.Proc, c *runcstate.Container, vouch *voucher, maxAge time.Duration) (validator.Finding, bool) {
	if c != nil && uint64(c.State.InitProcessStart) != p.Stat.StartTime {
		c = nil // the pid, not the process, the state recorded
	}
	vouched := c != nil || vouch.isRunc(p.Stat.PPID)
	limit := maxAge
	if !vouched {
		limit = runcGrace
	}
	age := vouch.age(p.Stat.StartTime)
	if age <= limit {
		return validator.Finding{}, false
	}
	started := procfs.StartedAt(vouch.boot, p.Stat.StartTime)
	subject, name := "pid "+strconv.Itoa(p.PID), ""
	if c != nil {
		subject, name = c.Name(), c.Name()
	}
	f := validator.Finding{
		Subject: subject, Status: validator.Fail,
		Detail: fmt.Sprintf("runc init pid %d (%s) has run for %s (limit %s)", p.PID, p.Stat.Comm, age.Round(time.Second), maxAge),
		Data: map[string]string{
			"kind": "stuck-init", "pid": strconv.Itoa(p.PID), "comm": p.Stat.Comm, "ppid": strconv.Itoa(p.Stat.PPID),
			"started_at": started.UTC().Format(time.RFC3339), "age_seconds": strconv.Itoa(int(age.Seconds())),
			"container": name,
		},
	}
	if !vouched {
		f.Data["kind"] = "unvouched-init"
		f.Detail = fmt.Sprintf("pid %d calls itself runc init (%s) but is no runtime state's init (pid and start time) and no child of the host's runc (parent pid %d); it has run for %s (grace %s)",
			p.PID, p.Stat.Comm, p.Stat.PPID, age.Round(time.Second), runcGrace)
	}
	return f, true
}

// isRuncInit recognises runc init in each of its stages: nsexec renames it
// runc:[0:PARENT], runc:[1:CHILD], runc:[2:INIT]; before that it is
// "runc init" on the command line.
func isRuncInit(comm string, args []string) bool {
	if strings.HasPrefix(comm, "runc:[") {
		return true
	}
	return len(args) >= 2 && args[1] == "init"
}

// fdWalkMax bounds the descriptors read per process and pipeProbeMax the
// pipes probed per process: a process holds as many as its fd limit lets
// it (fs.nr_open, up to a million), and its owner chooses (issue 38, hole
// 3). runc itself holds a handful.
const (
	fdWalkMax    = 1 << 16
	pipeProbeMax = 1024
)

// pipeCount is what one process's descriptors showed.
type pipeCount struct {
	walked, pipes, probed, small, smallest, failed int
	more                                           bool  // descriptors past fdWalkMax
	firstErr                                       error // of the failed probes
}

// smallPipes reports p's pipes below the default capacity as one finding
// (and its unreadable pipes as one skip), however many it holds: one
// finding per holder, its descriptors walked and probed up to the bounds.
func (s *StuckRuncInit) smallPipes(v *snapshot.Host, r *procfs.Reader, p *snapshot.Proc, capOf func(procfs.FS, int, int) (int, error), minCap int) []validator.Finding {
	c, ok := countPipes(v.ProcFS(), r, p.PID, capOf, minCap)
	if !ok {
		return nil // gone, or not ours to read
	}
	var out []validator.Finding
	subject, pid := "pid "+strconv.Itoa(p.PID), strconv.Itoa(p.PID)
	if c.failed > 0 {
		out = append(out, validator.Finding{
			Subject: subject, Status: validator.Skip,
			Detail: fmt.Sprintf("could not read the capacity of %d of its pipes (first: %v)", c.failed, c.firstErr),
		})
	}
	if c.small == 0 {
		return out
	}
	held := fmt.Sprintf("%d pipes", c.pipes)
	if c.more {
		held = fmt.Sprintf("at least %d pipes (read %d descriptors)", c.pipes, c.walked)
	}
	page := syscall.Getpagesize()
	return append(out, validator.Finding{
		Subject: subject, Status: validator.Fail,
		Detail: fmt.Sprintf("pid %d (%s) holds %s; %d of the %d probed have less than the default capacity (smallest %d bytes, %d pages; default %d pages): fs.pipe-user-pages-soft is exhausted for its user",
			p.PID, p.Stat.Comm, held, c.small, c.probed, c.smallest, c.smallest/page, minPipePages),
		Data: map[string]string{
			"kind": "small-pipe", "pid": pid, "comm": p.Stat.Comm, "pipes": strconv.Itoa(c.pipes),
			"probed": strconv.Itoa(c.probed), "small_pipes": strconv.Itoa(c.small), "capacity_bytes": strconv.Itoa(c.smallest),
		},
	})
}

// countPipes walks pid's descriptors, at most fdWalkMax, and probes at most
// pipeProbeMax of its anonymous pipes. ok is false when the fd directory
// cannot be read. Descriptors that vanish or cannot be opened are skipped.
func countPipes(fs procfs.FS, r *procfs.Reader, pid int, capOf func(procfs.FS, int, int) (int, error), minCap int) (c pipeCount, ok bool) {
	more, err := fs.EachFDName(pid, fdWalkMax, func(names []string) {
		sort.Slice(names, func(i, j int) bool {
			return len(names[i]) < len(names[j]) || len(names[i]) == len(names[j]) && names[i] < names[j]
		})
		for _, name := range names {
			c.walked++
			c.probe(fs, r, pid, name, capOf, minCap)
		}
	})
	if err != nil {
		return c, false
	}
	c.more = more
	return c, true
}

// probe counts one descriptor: a pipe, and its capacity while probes last.
func (c *pipeCount) probe(fs procfs.FS, r *procfs.Reader, pid int, name string, capOf func(procfs.FS, int, int) (int, error), minCap int) {
	fd, err := strconv.Atoi(name)
	if err != nil {
		return
	}
	l, err := r.Readlink(pid, "fd/"+name)
	if err != nil || !strings.HasPrefix(string(l), "pipe:[") {
		return
	}
	c.pipes++
	if c.probed >= pipeProbeMax {
		return
	}
	c.probed++
	n, err := capOf(fs, pid, fd)
	switch {
	case err != nil:
		if !procfs.IsGone(err) && !errors.Is(err, procfs.ErrNotPipe) && !errors.Is(err, iofs.ErrPermission) {
			if c.failed++; c.firstErr == nil {
				c.firstErr = fmt.Errorf("%s on fd %d: %w", l, fd, err)
			}
		}
	case n < minCap:
		if c.small++; c.smallest == 0 || n < c.smallest {
			c.smallest = n
		}
	}
}

func (s *StuckRuncInit) recheck() facts.Recheck {
	if s.Recheck == nil {
		return facts.LiveRecheck{}
	}
	return s.Recheck
}
