package checks

import (
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/bpfiter"
	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/netns"
	"github.com/cloudfoundry/cellguard/src/internal/runtimever"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/sysctl"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// Deps is what checks may read: where the host is and what the job
// configured. Add fields here with a targeted edit; keep zero values usable.
type Deps struct {
	// Root prefixes every host path (/proc, /sys/fs/cgroup, runtime roots),
	// so checks run on fixture trees; "/" or "" is the live host.
	Root string
	// RuntimeRoots are runc state roots; empty means runcstate.StandardRoots.
	RuntimeRoots []string
	// Namespaces filters containerd namespaces; empty means all.
	Namespaces []string
	// ExtraCgroupRoots are cgroup paths (e.g. "/garden") searched for
	// processes no runtime state claims, besides the parents of known
	// containers' cgroups.
	ExtraCgroupRoots []string
	// RuncInitMaxAge is how old a `runc init` may get; 0 means the default.
	RuncInitMaxAge time.Duration
	// Snapshot is the run's read of the host, shared by the checks that
	// judge processes and cgroups; nil reads it under Root, RuntimeRoots and
	// Namespaces when the first check asks. watch passes its own per scan.
	Snapshot *snapshot.Source
	// Reread reads a suspect again to confirm it; nil reads /proc.
	Reread snapshot.Rereader
	// Confirm are the waits before a suspected escape counts (each one a
	// re-read); nil means the validator's 1.5s in four rounds. watch passes
	// a shorter schedule to report within a second (docs/validator.md).
	Confirm []time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Sleep waits before a suspected escape is confirmed; nil means
	// time.Sleep on the live root and no wait under another Root: a tree
	// under a prefix is a snapshot (fixtures, benchmarks), where waiting
	// 1.5s for a join in flight only adds latency. Tests use it to change
	// the fixture in between.
	Sleep func(time.Duration)
	// Phase is the run's phase; runtime-versions picks each advisory's
	// severity by it. "" means pre-start.
	Phase validator.Phase
	// RuntimeBinaries are configured runc/containerd paths
	// (the job's validator.runtime_binaries); PATH is searched too.
	RuntimeBinaries map[string]string
	// RuncPaths are where the host's runtime may keep runc besides
	// RuntimeBinaries and PATH (BOSH's package path, from cli): the files
	// whose processes vouch for their children (runcvouch.go).
	RuncPaths []string
	// AdvisoriesFile is the operator's advisory list, merged by id over the
	// one shipped in runtimever (validator.advisories_file).
	AdvisoriesFile string
	// ProbeCache, when set, keeps runtime versions across runs of the
	// checks for binaries whose files did not change (cellguard watch).
	ProbeCache *runtimever.ProbeCache
	// Systemd reads the running manager's version (D-Bus Version
	// property); nil checks only the installed systemd.
	Systemd SystemdVersioner
	// SystemdUnits connects to the manager for delegation-audit; nil (a
	// fixture root) skips it.
	SystemdUnits SystemdDialer
	// Daemons are the configured daemons whose units delegation-audit reads
	// (validator.daemons, with each daemon's pidfile).
	Daemons []AuditedDaemon
	// DelegateUnits are other releases' units delegated in place
	// (delegate_units), which delegation-audit reads too.
	DelegateUnits []string
	// Sysctl is the operator's sysctl settings, for sysctl-profile.
	Sysctl sysctl.Settings
	// Kernel is the kernel's BTF for the run's BPF iterators (the
	// snapshot's stats, leaked-netns's open files), read once; nil reads it
	// per iterator. watch leaves it nil: it would keep the types.
	Kernel *bpfiter.Kernel
	// NetNS resolves sockets' network namespaces for leaked-netns; nil
	// means the kernel's (pidfd_getfd, SIOCGSKNS) on the live root and
	// none under a fixture root.
	NetNS netns.Probe
}

// All is the one list of the validator's checks, in report order.
func All(d Deps) []validator.Check {
	h := d.Snapshot
	if h == nil {
		h = snapshot.Lazy(snapshot.Spec{Root: d.Root, RuntimeRoots: d.RuntimeRoots, Namespaces: d.Namespaces})
	}
	if d.Sleep == nil && !hostroot.IsLive(d.Root) {
		d.Sleep = func(time.Duration) {}
	}
	runc := RuncFiles{Configured: d.RuntimeBinaries, Paths: d.RuncPaths}
	return []validator.Check{
		&CgroupIntegrity{host: h, Sleep: d.Sleep, Confirm: d.Confirm, Reread: d.Reread, Runc: runc, Now: d.Now},
		&RuntimeGhosts{host: h, ExtraRoots: d.ExtraCgroupRoots, Sleep: d.Sleep, Confirm: d.Confirm, Runc: runc, Now: d.Now},
		&StuckRuncInit{host: h, MaxAge: d.RuncInitMaxAge, Now: d.Now, Runc: runc},
		&RuntimeVersions{Root: d.Root, Binaries: d.RuntimeBinaries, AdvisoriesFile: d.AdvisoriesFile, Phase: d.Phase,
			Prober: runtimever.Prober{Cache: d.ProbeCache}},
		&SystemdCgroupMode{Root: d.Root, Running: d.Systemd},
		&DelegationAudit{host: h, Dial: d.SystemdUnits, Daemons: d.Daemons, Units: d.DelegateUnits},
		&SysctlProfile{Root: d.Root, Settings: d.Sysctl},
		&LeakedNetns{Root: d.Root, Probe: d.NetNS, Sleep: d.Sleep, Kernel: d.Kernel, host: h},
		&DevicesCgroup{host: h},
		&LimitsIntact{Facts: limitsFacts(d)},
	}
}

// OnEvent names the checks `cellguard watch` runs after each systemd
// event (a job finished, a unit appeared, a cgroup setting changed): they
// read only the shared scan, and what they look at is what systemd changes
// when it realizes cgroups. The others read binaries, sysctls and unit
// properties over D-Bus, which change with deploys, so watch runs them on
// its period only.
var OnEvent = []string{"cgroup-integrity", "runtime-ghosts", "stuck-runc-init"}
