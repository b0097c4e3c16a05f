package facts

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/bpfiter"
	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/netns"
	"github.com/cloudfoundry/cellguard/src/internal/runtimever"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/sysctl"
)

// Kind names one provider's facts; checks declare the kinds they judge.
type Kind string

const (
	Snapshot Kind = "snapshot" // processes, cgroups, runtime state (snapshot.Source)
	Systemd  Kind = "systemd"  // versions, cgroup mode, kernel command line, KillMode=none units
	Units    Kind = "units"    // audited units' D-Bus properties
	Runtimes Kind = "runtimes" // runtime binaries' versions, advisories
	Sysctls  Kind = "sysctls"  // the profile's keys, live and at boot
	Netns    Kind = "netns"    // network namespaces held only by open files
	Limits   Kind = "limits"   // containers' recorded limits and the cgroup files in force
	Topology Kind = "topology" // v2: cgroup types, internal processes, daemons' and agent's cgroups
)

// ErrNotRead means a judge asked for a kind its check did not wait for: a
// bug in the check's Needs, reported as "could not judge", never a pass.
var ErrNotRead = errors.New("facts: not read")

// Deadlines are providers' own bounds, inside the run's. Systemd and
// Units keep the bounds the checks had (the manager's version 5s plus
// systemctl's 5s exec; the audit's 15s of D-Bus). The others have only the
// run's budget, as before: each runtime exec is bounded by boundedexec
// already, and a deadline of their own shorter than the budget would turn a
// slow read from "unfinished" (never blocks) into "could not judge", which
// blocks where the check does.
var Deadlines = map[Kind]time.Duration{
	Systemd: 15 * time.Second,
	Units:   15 * time.Second,
}

// Spec is where the host is and what the job configured the providers to
// read. Zero values are usable: a fixture root with no D-Bus.
type Spec struct {
	// Root prefixes every host path; "/" or "" is the live host.
	Root string
	// Snapshot is the run's read of processes, cgroups and runtime state;
	// nil reads snapshot.Spec{Root, RuntimeRoots, Namespaces} lazily.
	Snapshot *snapshot.Source

	// Running reads the running manager's version (D-Bus); nil asks none.
	Running SystemdVersioner
	// Installed reads the packaged systemd's; nil runs systemctl under Root.
	Installed SystemdVersioner
	// Mode detects the cgroup mode; nil means cgroup.DetectMode.
	Mode func(root string) (cgroup.Mode, error)

	// Units connects to the manager for the unit facts; nil (a fixture
	// root) reads none.
	Units SystemdDialer
	// Daemons are the configured daemons whose units are read.
	Daemons []Daemon
	// DelegateUnits are other releases' units delegated in place.
	DelegateUnits []string

	// RuntimeBinaries are configured runtime paths per component.
	RuntimeBinaries map[string]string
	// RuntimePath is the search path under Root; nil means
	// runtimever.DefaultPath.
	RuntimePath []string
	// Advisories are the operator's records (config judged them), merged
	// over the shipped ones.
	Advisories    []runtimever.Advisory
	AdvisoriesErr error
	// Prober probes each binary (its Cache keeps versions across watch's
	// scans).
	Prober runtimever.Prober

	// RuntimeRoots and Namespaces are where runtime state is found, for
	// the snapshot read when Snapshot is nil; empty roots mean runcstate's
	// standard ones.
	RuntimeRoots []string
	Namespaces   []string

	// Sysctl is the operator's sysctl settings.
	Sysctl sysctl.Settings

	// NetnsProbe lets the leaked-netns provider touch other processes:
	// the BPF task_file iterator, duplicating their sockets (pidfd_getfd)
	// from a thread that joins their cgroups, entering a leaked namespace.
	// Off, it reads /proc only and leaves sockets unasked.
	NetnsProbe bool
	// NetNS and NetnsFiles replace the live probe and file source (tests).
	NetNS      netns.Probe
	NetnsFiles netns.FileSource
	// Kernel is the BTF the iterators load with, read once per run.
	Kernel *bpfiter.Kernel
	// Sleep waits before a leak is confirmed; nil means time.Sleep.
	Sleep func(time.Duration)

	// Recheck confirms the snapshot's suspects; nil means LiveRecheck
	// (Host.Recheck).
	Recheck Recheck
}

// Host is one run's facts: each kind read once, by its provider, and kept.
type Host struct {
	spec  Spec
	snap  *snapshot.Source
	mu    sync.Mutex
	reads map[Kind]*read

	systemd  SystemdFacts
	units    UnitFacts
	runtimes RuntimeFacts
	sysctls  SysctlFacts
	netns    NetnsFacts
	limits   LimitsFacts
	topology TopologyFacts
}

// read is one kind's read: done closes when its facts are set.
type read struct {
	done chan struct{}
}

// New returns a Host that reads nothing until a kind is waited for.
func New(spec Spec) *Host {
	snap := spec.Snapshot
	if snap == nil {
		snap = snapshot.Lazy(snapshot.Spec{Root: spec.Root, RuntimeRoots: spec.RuntimeRoots, Namespaces: spec.Namespaces})
	}
	return &Host{spec: spec, snap: snap, reads: map[Kind]*read{}}
}

// Read returns a Host already reading needs, each in its own goroutine:
// the providers run at once, so a run spends the slowest read, not the sum.
func Read(ctx context.Context, spec Spec, needs []Kind) *Host {
	h := New(spec)
	for _, k := range needs {
		h.start(ctx, k)
	}
	return h
}

// Root is the host's root prefix.
func (h *Host) Root() string { return h.spec.Root }

// Spec is what the Host reads.
func (h *Host) Spec() Spec { return h.spec }

// Wait waits until every kind is read (starting what has not started),
// or ctx ends. A kind that could not be read is not an error here: its
// facts say why.
func (h *Host) Wait(ctx context.Context, kinds ...Kind) error {
	for _, k := range kinds {
		r := h.start(ctx, k)
		select {
		case <-r.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (h *Host) start(ctx context.Context, k Kind) *read {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r, ok := h.reads[k]; ok {
		return r
	}
	r := &read{done: make(chan struct{})}
	h.reads[k] = r
	go func() {
		defer close(r.done)
		rctx, cancel := ctx, context.CancelFunc(func() {})
		if d, ok := Deadlines[k]; ok {
			rctx, cancel = context.WithTimeout(ctx, d)
		}
		defer cancel()
		h.readKind(rctx, k)
	}()
	return r
}

// readKind runs kind k's provider and keeps its facts. A provider that
// panics leaves its kind unread with the panic as the error: one broken
// reader must not take the validator down.
func (h *Host) readKind(ctx context.Context, k Kind) {
	defer func() {
		if p := recover(); p != nil {
			h.failed(k, fmt.Errorf("read %s facts: panicked: %v", k, p))
		}
	}()
	switch k {
	case Snapshot:
		_, _ = h.snap.Get() // the Source keeps its result and error
	case Systemd:
		h.systemd = readSystemd(ctx, h.spec)
	case Units:
		h.units = readUnits(ctx, h.spec, h.snap)
	case Runtimes:
		h.runtimes = readRuntimes(ctx, h.spec)
	case Sysctls:
		h.sysctls = readSysctls(ctx, h.spec)
	case Netns:
		h.netns = readNetns(ctx, h.spec, h.snap)
	case Limits:
		h.limits = readLimits(h.snap)
	case Topology:
		h.topology = readTopology(h.spec, h.snap)
	default:
		panic(fmt.Sprintf("unknown fact kind %q", k))
	}
}

func (h *Host) failed(k Kind, err error) {
	switch k {
	case Systemd:
		h.systemd = SystemdFacts{Err: err}
	case Units:
		h.units = UnitFacts{Err: err}
	case Runtimes:
		h.runtimes = RuntimeFacts{Err: err}
	case Sysctls:
		h.sysctls = SysctlFacts{Err: err}
	case Netns:
		h.netns = NetnsFacts{Err: err}
	case Limits:
		h.limits = LimitsFacts{Err: err}
	case Topology:
		h.topology = TopologyFacts{Err: err}
	}
}

// done reports whether kind k was read; before that its facts are
// ErrNotRead.
func (h *Host) done(k Kind) bool {
	h.mu.Lock()
	r, ok := h.reads[k]
	h.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func notRead(k Kind) error { return fmt.Errorf("%s: %w", k, ErrNotRead) }

// Snapshot is the run's read of processes, cgroups and runtime state.
func (h *Host) Snapshot() *snapshot.Source { return h.snap }

// Systemd is the systemd facts, once waited for.
func (h *Host) Systemd() SystemdFacts {
	if !h.done(Systemd) {
		return SystemdFacts{Err: notRead(Systemd)}
	}
	return h.systemd
}

// Units is the unit facts, once waited for.
func (h *Host) Units() UnitFacts {
	if !h.done(Units) {
		return UnitFacts{Err: notRead(Units)}
	}
	return h.units
}

// Runtimes is the runtime binaries' facts, once waited for.
func (h *Host) Runtimes() RuntimeFacts {
	if !h.done(Runtimes) {
		return RuntimeFacts{Err: notRead(Runtimes)}
	}
	return h.runtimes
}

// Sysctls is the sysctl facts, once waited for.
func (h *Host) Sysctls() SysctlFacts {
	if !h.done(Sysctls) {
		return SysctlFacts{Err: notRead(Sysctls)}
	}
	return h.sysctls
}

// Netns is the leaked-netns facts, once waited for.
func (h *Host) Netns() NetnsFacts {
	if !h.done(Netns) {
		return NetnsFacts{Err: notRead(Netns)}
	}
	return h.netns
}
