package checks

import (
	"context"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// Policy is how the checks judge, set at the edge from the job's config
// and the run: thresholds and the phase, never where the host is (that is
// facts.Spec). Zero values are usable.
type Policy struct {
	// Phase is the run's phase; runtime-versions picks each advisory's
	// severity by it. "" means pre-start.
	Phase validator.Phase
	// BlockingAdvisories are security advisories' ids the operator
	// promoted to blocking (runtime-versions).
	BlockingAdvisories []string
	// RuncInitMaxAge is how old a `runc init` may get; 0 means the default.
	RuncInitMaxAge time.Duration
	// ExtraCgroupRoots are cgroup paths (e.g. "/garden") searched for
	// processes no runtime state claims, besides the parents of known
	// containers' cgroups.
	ExtraCgroupRoots []string
	// RuntimeBinaries are configured runc/containerd paths; RuncPaths are
	// where the host's runtime may keep runc besides them and PATH (BOSH's
	// package path): the files whose processes vouch for their children
	// (runcvouch.go).
	RuntimeBinaries map[string]string
	RuncPaths       []string
	// Confirm are the waits before a suspected escape counts (each one a
	// re-read); nil means the validator's 1.5s in four rounds. watch passes
	// a shorter schedule to report within a second (docs/validator.md).
	Confirm []time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// judge is a check that only judges facts: what it Needs is read before
// Judge is called, by the facts package.
type judge interface {
	Meta() validator.Meta
	Needs() []facts.Kind
	Judge(h *facts.Host) ([]validator.Finding, error)
}

// bound is a judge bound to one run's facts: the validator runs it as a
// Check (in parallel with the others, within the run's budget).
type bound struct {
	judge
	h *facts.Host
}

// Run waits for the judge's facts, then judges them. A run that ends
// first leaves the check unfinished; a fact that could not be read makes
// it an error ("could not judge"), never a pass.
func (b bound) Run(ctx context.Context) ([]validator.Finding, error) {
	if err := b.h.Wait(ctx, b.Needs()...); err != nil {
		return nil, err
	}
	return b.Judge(b.h)
}

// All is the one list of the validator's checks, in report order, bound
// to one run's facts h and judging by p.
func All(h *facts.Host, p Policy) []validator.Check {
	var snap *snapshot.Source
	var recheck facts.Recheck
	if h != nil {
		snap, recheck = h.Snapshot(), h.Recheck()
	}
	runc := RuncFiles{Configured: p.RuntimeBinaries, Paths: p.RuncPaths}
	return []validator.Check{
		&CgroupIntegrity{host: snap, recheck: recheck, Confirm: p.Confirm, Runc: runc, Now: p.Now},
		&RuntimeGhosts{host: snap, recheck: recheck, ExtraRoots: p.ExtraCgroupRoots, Confirm: p.Confirm, Runc: runc, Now: p.Now},
		&StuckRuncInit{host: snap, MaxAge: p.RuncInitMaxAge, Now: p.Now, Runc: runc, Recheck: recheck},
		bound{RuntimeVersions{Phase: p.Phase, Promoted: p.BlockingAdvisories}, h},
		bound{SystemdCgroupMode{}, h},
		bound{DelegationAudit{}, h},
		bound{SysctlProfile{}, h},
		bound{LeakedNetns{}, h},
		&DevicesCgroup{host: snap},
		bound{LimitsIntact{Runc: runc, Now: p.Now}, h},
		bound{CgroupTopology{}, h},
	}
}

// IDs are the checks' ids, sorted, for --help and the config's lists:
// the registry over no host, which reads nothing.
func IDs() []string { return validator.IDs(All(nil, Policy{})) }

// Needs is every kind of fact the checks judge, once each, in order.
func Needs(cs []validator.Check) []facts.Kind {
	var out []facts.Kind
	seen := map[facts.Kind]bool{}
	for _, c := range cs {
		n, ok := c.(interface{ Needs() []facts.Kind })
		if !ok {
			continue
		}
		for _, k := range n.Needs() {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// OnEvent names the checks `cellguard watch` runs after each systemd
// event (a job finished, a unit appeared, a cgroup setting changed) and
// each write to a v2 cgroup.subtree_control above a container: they read
// the host's cgroups and runtime state, and what they look at is what
// systemd changes when it realizes cgroups (limits-intact: the
// controllers a daemon-reload switches off). The others read binaries,
// sysctls and unit properties over D-Bus, which change with deploys, so
// watch runs them on its period only.
var OnEvent = []string{"cgroup-integrity", "runtime-ghosts", "stuck-runc-init", "limits-intact"}
