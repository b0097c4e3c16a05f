package facts

import (
	"context"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/runtimever"
)

// RuntimeFacts is what runtime-versions judges: the advisories, and every
// runtime binary configured or on the search path, probed.
type RuntimeFacts struct {
	// Err is set when the binaries could not all be probed (the deadline
	// passed, or the provider panicked).
	Err error
	// Advisories are the shipped list merged with the operator's.
	Advisories    []runtimever.Advisory
	AdvisoriesErr error
	// Configured are the job's validator.runtime_binaries.
	Configured map[string]string
	// Path is the search path that was used.
	Path []string
	// ProbeTimeout is how long each probe's exec could take
	// (validator.probe_timeout).
	ProbeTimeout time.Duration
	// Components are runtimever.Components, in order, each with what was
	// found.
	Components []Component
	// PipeSoftLimit is fs.pipe-user-pages-soft, the condition of runc
	// rc93's hang; PipeSoftLimitErr when it could not be read.
	PipeSoftLimit    int64
	PipeSoftLimitErr error
	// Mode is the host's cgroup layout, the condition of the hazards that
	// bite on one layout only; ModeErr when it could not be told.
	Mode    cgroup.Mode
	ModeErr error
}

// Component is one runtime's binaries: the configured ones not there,
// and every one found, probed.
type Component struct {
	Name    string
	Missing []runtimever.Missing
	Probes  []Probe
}

// Probe is one binary's version read, or why not.
type Probe struct {
	Binary runtimever.Binary
	Info   runtimever.Info
	Err    error
	// TimedOut: Err is the binary not answering within ProbeTimeout (it
	// was killed), not a binary that could not run or failed.
	TimedOut bool
}

func readRuntimes(ctx context.Context, s Spec) RuntimeFacts {
	f := RuntimeFacts{Configured: s.RuntimeBinaries, Path: s.RuntimePath, ProbeTimeout: s.Prober.Bound()}
	if f.Path == nil {
		f.Path = runtimever.DefaultPath
	}
	f.Advisories, f.AdvisoriesErr = runtimever.Load(s.Advisories)
	if s.AdvisoriesErr != nil {
		f.AdvisoriesErr = s.AdvisoriesErr
	}
	if f.AdvisoriesErr != nil {
		// Nothing to match against: probing would only spend time.
		return f
	}
	f.PipeSoftLimit, f.PipeSoftLimitErr = runtimever.PipeSoftLimit(s.Root)
	detect := s.Mode
	if detect == nil {
		detect = cgroup.DetectMode
	}
	f.Mode, f.ModeErr = detect(s.Root)
	loc := runtimever.Locator{Root: s.Root, Configured: s.RuntimeBinaries, Path: s.RuntimePath}
	for _, comp := range runtimever.Components {
		found, missing := loc.Locate(comp)
		c := Component{Name: comp, Missing: missing}
		for _, b := range found {
			if err := ctx.Err(); err != nil {
				f.Err = err
				return f
			}
			info, err := s.Prober.Probe(ctx, b)
			c.Probes = append(c.Probes, Probe{Binary: b, Info: info, Err: err, TimedOut: runtimever.TimedOut(err)})
		}
		f.Components = append(f.Components, c)
	}
	return f
}
