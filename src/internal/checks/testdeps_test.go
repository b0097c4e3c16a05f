package checks

import (
	"context"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/netns"
	"github.com/cloudfoundry/cellguard/src/internal/runtimever"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/sysctl"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// testDeps is how these tests describe a run in one struct: where the
// host is (facts.Spec) and how the checks judge (Policy), split by all.
type testDeps struct {
	Root             string
	RuntimeRoots     []string
	Namespaces       []string
	ExtraCgroupRoots []string
	RuncInitMaxAge   time.Duration
	Snapshot         *snapshot.Source
	Reread           snapshot.Rereader
	Confirm          []time.Duration
	Now              func() time.Time
	Sleep            func(time.Duration)
	Phase            validator.Phase
	RuntimeBinaries  map[string]string
	RuncPaths        []string
	Advisories       []runtimever.Advisory
	ProbeCache       *runtimever.ProbeCache
	Systemd          facts.SystemdVersioner
	SystemdUnits     facts.SystemdDialer
	Daemons          []facts.Daemon
	DelegateUnits    []string
	Sysctl           sysctl.Settings
	NetNS            netns.Probe
}

// all is All over d's facts and policy.
func all(d testDeps) []validator.Check {
	snap := d.Snapshot
	if snap == nil {
		snap = snapshot.Lazy(snapshot.Spec{Root: d.Root, RuntimeRoots: d.RuntimeRoots, Namespaces: d.Namespaces})
	}
	h := facts.New(facts.Spec{Root: d.Root, Snapshot: snap, Running: d.Systemd, Units: d.SystemdUnits,
		Daemons: d.Daemons, DelegateUnits: d.DelegateUnits, RuntimeBinaries: d.RuntimeBinaries,
		Advisories: d.Advisories, Prober: runtimever.Prober{Cache: d.ProbeCache},
		Sysctl: d.Sysctl, NetNS: d.NetNS, Sleep: d.Sleep, Recheck: recheckOf(d)})
	return All(h, Policy{Phase: d.Phase, RuncInitMaxAge: d.RuncInitMaxAge, ExtraCgroupRoots: d.ExtraCgroupRoots,
		RuntimeBinaries: d.RuntimeBinaries, RuncPaths: d.RuncPaths, Confirm: d.Confirm, Now: d.Now})
}

// systemdCase is systemd-cgroup-mode over a fixture root and fake
// versions, as its tests build it.
type systemdCase struct {
	Root               string
	Running, Installed facts.SystemdVersioner
}

func (c *systemdCase) Run(ctx context.Context) ([]validator.Finding, error) {
	h := facts.New(facts.Spec{Root: c.Root, Running: c.Running, Installed: c.Installed})
	return bound{SystemdCgroupMode{}, h}.Run(ctx)
}

// runtimeCase is runtime-versions over a fixture root.
type runtimeCase struct {
	Root       string
	Binaries   map[string]string
	Advisories []runtimever.Advisory
	Promoted   []string
	Phase      validator.Phase
	Path       []string
	Prober     runtimever.Prober
	// Mode is the fixture's cgroup layout; 0 (unavailable) detects it
	// from the root.
	Mode cgroup.Mode
}

func (c *runtimeCase) Run(ctx context.Context) ([]validator.Finding, error) {
	spec := facts.Spec{Root: c.Root, RuntimeBinaries: c.Binaries, Advisories: c.Advisories,
		RuntimePath: c.Path, Prober: c.Prober}
	if c.Mode != cgroup.Unavailable {
		spec.Mode = func(string) (cgroup.Mode, error) { return c.Mode, nil }
	}
	return bound{RuntimeVersions{Phase: c.Phase, Promoted: c.Promoted}, facts.New(spec)}.Run(ctx)
}

// netnsCase is leaked-netns on a root with its file source given.
type netnsCase struct {
	Root  string
	Files netns.FileSource
	Probe bool
	Sleep func(time.Duration)
}

func (c *netnsCase) Run(ctx context.Context) ([]validator.Finding, error) {
	h := facts.New(facts.Spec{Root: c.Root, NetnsFiles: c.Files, NetnsProbe: c.Probe, Sleep: c.Sleep})
	return bound{LeakedNetns{}, h}.Run(ctx)
}

func (c *runtimeCase) Meta() validator.Meta { return RuntimeVersions{}.Meta() }

// recheckOf is the live recheck with d's wait and re-read, nil when d
// sets neither (the host's default: no wait under a fixture root).
func recheckOf(d testDeps) facts.Recheck {
	if d.Sleep == nil && d.Reread == nil {
		return nil
	}
	return facts.LiveRecheck{Wait: d.Sleep, Reread: d.Reread}
}
