package checks

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/runtimever"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// RuntimeVersions judges every runtime binary probed (runc, crun,
// containerd, containerd-shim-runc-v2, dockerd; configured paths and PATH)
// and reports each advisory (shipped or the operator's, OSV records) that
// matches its version. A hazard blocks pre-start while its conditions hold
// on the host; a security advisory warns unless its id is promoted.
type RuntimeVersions struct {
	// Phase picks each advisory's severity; "" means pre-start.
	Phase validator.Phase
	// Promoted are the security advisories' ids the operator made
	// blocking (validator.blocking_advisories).
	Promoted []string
}

var _ judge = RuntimeVersions{}

func (RuntimeVersions) Meta() validator.Meta {
	return validator.Meta{
		ID: "runtime-versions",
		// Every layout: binaries' versions (an advisory's own condition says where it applies).
		Layouts:  everyLayout,
		Measured: []string{"version_output"},
		Title:    "runc, crun, containerd, its runc shim and dockerd are not affected by a known advisory",
		Severity: map[validator.Phase]validator.Severity{
			// At drain the old runtime is on its way out and blocking
			// would stop the very update that replaces it.
			validator.PreStart: validator.Blocking,
			validator.Drain:    validator.Warning,
		},
		Story: "runc 1.0.0-rc93 hung in `runc init` on cells whose pipe soft limit was " +
			"exhausted, runc before 1.0.0-rc91 briefly denied every device on cgroup v1, runc 1.4.0's " +
			"exec fails on cgroup v2 when a container's cgroup is gone: hazards, which block pre-start " +
			"where their condition holds. Container breakouts (CVE-2019-5736, CVE-2024-21626, the " +
			"November 2025 runc CVEs) are security advisories: reported, and blocking only for ids the " +
			"operator promotes, so a runtime that lags the list does not stop every rollout. Each " +
			"finding names the advisory (an OSV record), its class, fixed versions and references; " +
			"`cellguard advisories` lists the set.",
		References: []string{
			"https://github.com/opencontainers/runc/pull/2871",
			"https://github.com/opencontainers/runc/security/advisories",
			"https://github.com/containerd/containerd/security/advisories",
			"https://github.com/containers/crun/security/advisories",
			"https://github.com/moby/moby/security/advisories",
		},
		Fix: "Upgrade the runtime (the garden-runc or containerd release, or the OS package) to a " +
			"version the finding names as fixed. A hazard's condition can also be defused " +
			"(fs.pipe-user-pages-soft = 0 for the rc93 hang). A distribution build that carries the fix " +
			"is declared in an OSV record of validator.advisories (database_specific.cellguard.backports); " +
			"validator.blocking_advisories promotes security advisories to blocking.",
	}
}

// Needs: the runtime binaries' facts.
func (RuntimeVersions) Needs() []facts.Kind { return []facts.Kind{facts.Runtimes} }

// Judge matches every probed binary against the advisories.
func (c RuntimeVersions) Judge(h *facts.Host) ([]validator.Finding, error) {
	rt := h.Runtimes()
	switch {
	case rt.AdvisoriesErr != nil:
		return nil, rt.AdvisoriesErr
	case rt.Err != nil:
		return nil, rt.Err
	}
	phase := c.Phase
	if phase == "" {
		phase = validator.PreStart
	}
	conds := advisoryConditions{pipeSoftLimit: rt.PipeSoftLimit, pipeSoftLimitErr: rt.PipeSoftLimitErr, mode: rt.Mode, modeErr: rt.ModeErr}
	var fs []validator.Finding
	for _, comp := range unknownRuntimeBinaries(rt.Configured) {
		fs = append(fs, validator.Finding{
			Subject: comp, Status: validator.Warn,
			Detail: fmt.Sprintf("validator.runtime_binaries names %q (%s), which is not a runtime cellguard probes: want one of %s",
				comp, rt.Configured[comp], strings.Join(runtimever.Components, ", ")),
			Data: map[string]string{"component": comp, "path": rt.Configured[comp]},
		})
	}
	for _, comp := range rt.Components {
		for _, m := range comp.Missing {
			// The operator named this binary: the runtime the cell runs is
			// not where the config says, so its version is unknown. An
			// error, not a skip (config check refuses it at pre-start).
			fs = append(fs, validator.Finding{
				Subject: m.Path, Status: validator.Error,
				Detail: fmt.Sprintf("configured %s binary %s is not there: %v; fix validator.runtime_binaries", comp.Name, m.Path, m.Err),
				Data:   map[string]string{"component": comp.Name},
			})
		}
		if len(comp.Probes) == 0 {
			if reportAbsent(comp.Name) {
				fs = append(fs, validator.Finding{
					Subject: comp.Name, Status: validator.Skip,
					Detail: fmt.Sprintf("no %s binary configured or on PATH (%s)", comp.Name, strings.Join(rt.Path, ":")),
					Data:   map[string]string{"component": comp.Name},
				})
			}
			continue
		}
		for _, p := range comp.Probes {
			if p.TimedOut {
				// No answer in time is a loaded host (or a TCG guest: make
				// cell's noble cells), not an unsafe runtime: a warning. A
				// version printed before the exec that hung (runc's
				// --version, then features) is still judged.
				known := p.Info.VersionErr == nil && p.Info.Version.Raw != ""
				what := "version unknown; advisories cannot be matched"
				if known {
					what = "judged by the version it printed"
				}
				fs = append(fs, validator.Finding{
					Subject: p.Binary.Path, Status: validator.Warn,
					Detail: fmt.Sprintf("%s at %s: no answer within %v, %s. On a loaded host give it longer (validator.probe_timeout): %v",
						comp.Name, p.Binary.Path, rt.ProbeTimeout, what, p.Err),
					Data: map[string]string{"component": comp.Name, "path": p.Binary.Path, "source": p.Binary.Source, "probe": "timed out"},
				})
				if known {
					fs = append(fs, judgeRuntime(p.Info, rt.Advisories, c.Promoted, phase, conds)...)
				}
				continue
			}
			if p.Err != nil {
				// A runtime that cannot even print its version is broken.
				fs = append(fs, validator.Finding{
					Subject: p.Binary.Path, Status: validator.Fail, Detail: p.Err.Error(),
					Data: map[string]string{"component": comp.Name, "path": p.Binary.Path, "source": p.Binary.Source},
				})
				continue
			}
			fs = append(fs, judgeRuntime(p.Info, rt.Advisories, c.Promoted, phase, conds)...)
		}
	}
	return fs, nil
}

// judgeRuntime turns one probed binary into findings: one summary, one per
// matching advisory.
func judgeRuntime(info runtimever.Info, advs []runtimever.Advisory, promoted []string, phase validator.Phase, conds advisoryConditions) []validator.Finding {
	base := probeData(info)
	if info.VersionErr != nil {
		d := cloneData(base)
		return []validator.Finding{{
			Subject: info.Path, Status: validator.Warn, Data: d,
			Detail: fmt.Sprintf("%s at %s: version unknown (%v); advisories cannot be matched", info.Component, info.Path, info.VersionErr),
		}}
	}
	base["version"] = info.Version.Raw
	base["version_source"] = info.VersionSource
	name := fmt.Sprintf("%s %s", info.Component, info.Version.Raw)
	if info.Distro != "" {
		name += " (package " + info.Distro + ")"
	}
	var out []validator.Finding
	matched := 0
	for _, a := range advs {
		verdict, backport := a.Match(info.Component, info.Version, info.Distro, info.Commit)
		if verdict == runtimever.NotAffected {
			continue
		}
		d := advisoryData(base, a)
		if verdict == runtimever.Backported {
			d["backport"] = backport
			out = append(out, validator.Finding{
				Subject: info.Path, Status: validator.Pass, Data: d,
				Detail: fmt.Sprintf("%s: %s at %s is in an affected range but its distribution build carries the fix (backport %s)", a.ID, name, info.Path, backport),
			})
			continue
		}
		matched++
		out = append(out, judgeAdvisory(a, info, name, d, slices.Contains(promoted, a.ID), phase, conds))
	}
	summary := fmt.Sprintf("%s at %s (%s, version from %s)", name, info.Path, info.Source, info.VersionSource)
	if matched == 0 {
		summary += ": no known advisory"
	} else {
		summary += fmt.Sprintf(": %d advisories", matched)
	}
	if len(info.Notes) > 0 {
		summary += "; " + strings.Join(info.Notes, "; ")
	}
	return append([]validator.Finding{{Subject: info.Path, Status: validator.Pass, Detail: summary, Data: base}}, out...)
}

// advisoryData is what a finding says about advisory a, over base.
func advisoryData(base map[string]string, a runtimever.Advisory) map[string]string {
	d := cloneData(base)
	d["advisory"] = a.ID
	d["class"] = a.Class
	if a.Impact != "" {
		d["impact"] = a.Impact
	}
	if len(a.Aliases) > 0 {
		d["aliases"] = strings.Join(a.Aliases, ",")
	}
	d["fixed_in"] = strings.Join(a.FixedIn(), ",")
	d["references"] = strings.Join(a.References, " ")
	return d
}

// judgeAdvisory is one matching advisory's finding: its class (and the
// operator's promotion) give its severity in phase, which a blocking one
// keeps only while every condition it names holds on this host.
func judgeAdvisory(a runtimever.Advisory, info runtimever.Info, name string, d map[string]string, promoted bool, phase validator.Phase, conds advisoryConditions) validator.Finding {
	sev := validator.Severity(a.SeverityIn(runtimever.Phase(phase), promoted))
	text := a.Summary
	if text == "" {
		text = firstLineOf(a.Details)
	}
	kind := a.Class
	if promoted {
		kind += ", promoted to blocking"
		d["promoted"] = "true"
	}
	detail := fmt.Sprintf("%s (%s): %s at %s is affected; fixed in %s. %s", a.ID, kind, name, info.Path, advisoryFixedText(a), text)
	if len(a.Conditions) > 0 {
		all := true
		var evidence []string
		for _, c := range a.Conditions {
			holds, ev := conds.eval(c, info)
			all = all && holds
			evidence = append(evidence, c+": "+ev)
		}
		d["condition"] = strings.Join(a.Conditions, ",")
		d["condition_holds"] = strconv.FormatBool(all)
		d["condition_evidence"] = strings.Join(evidence, "; ")
		if !all && sev == validator.Blocking {
			sev = validator.Warning
		}
		detail += fmt.Sprintf(" Condition %s.", strings.Join(evidence, "; "))
	}
	d["severity"] = string(sev)
	return validator.Finding{Subject: info.Path, Status: advisoryStatus(sev), Detail: detail, Data: d}
}

// probeData is what every finding of a probed binary says about it.
func probeData(info runtimever.Info) map[string]string {
	d := map[string]string{
		"component": info.Component, "path": info.Path, "source": info.Source,
		"version_output": firstLineOf(info.RawVersion),
	}
	if info.Distro != "" {
		d["package_version"] = info.Distro
	}
	if info.Commit != "" {
		d["commit"] = info.Commit
	}
	if info.Component == runtimever.Runc {
		d["runc_features"] = strconv.FormatBool(info.Features)
	}
	if len(info.Notes) > 0 {
		d["notes"] = strings.Join(info.Notes, "; ")
	}
	return d
}

// advisoryStatus maps an advisory's severity in this phase to a finding: a
// blocking advisory fails the check, a warning warns, info passes with
// the evidence attached.
func advisoryStatus(s validator.Severity) validator.Status {
	switch s {
	case validator.Blocking:
		return validator.Fail
	case validator.Info:
		return validator.Pass
	}
	return validator.Warn
}

func advisoryFixedText(a runtimever.Advisory) string {
	if f := a.FixedIn(); len(f) > 0 {
		return strings.Join(f, " / ")
	}
	return "no release yet"
}

// advisoryConditions evaluates advisory conditions: host ones from the
// facts read, binary ones from each probed binary.
type advisoryConditions struct {
	pipeSoftLimit    int64
	pipeSoftLimitErr error
	mode             cgroup.Mode
	modeErr          error
}

func (c advisoryConditions) eval(name string, info runtimever.Info) (bool, string) {
	switch name {
	case runtimever.ConditionCrunLibkrun:
		// a property of this binary, not of the host
		if strings.Contains(info.RawVersion, "+LIBKRUN") {
			return true, "its --version lists +LIBKRUN"
		}
		return false, "its --version does not list +LIBKRUN"
	case runtimever.ConditionPipeSoftLimit:
		if c.pipeSoftLimitErr != nil {
			// cannot tell: assume the worst
			return true, fmt.Sprintf("assumed active: %v", c.pipeSoftLimitErr)
		}
		return c.pipeSoftLimit != 0, fmt.Sprintf("fs.pipe-user-pages-soft = %d", c.pipeSoftLimit)
	case runtimever.ConditionCgroupV1Devices, runtimever.ConditionCgroupV2:
		if c.modeErr != nil {
			return true, fmt.Sprintf("assumed to hold: %v", c.modeErr)
		}
		v1 := c.mode == cgroup.Legacy || c.mode == cgroup.Hybrid
		if name == runtimever.ConditionCgroupV2 {
			return c.mode == cgroup.Unified, "cgroup layout " + c.mode.String()
		}
		return v1, "cgroup layout " + c.mode.String()
	}
	return true, "unknown condition, assumed to hold"
}

// reportAbsent: runc and containerd are what cells run, so not finding them
// is worth a line; crun, the runc shim and dockerd are reported only where
// they are (or are configured and missing).
func reportAbsent(component string) bool {
	return component == runtimever.Runc || component == runtimever.Containerd
}

// unknownRuntimeBinaries lists configured component names runtime-versions
// does not probe, sorted: a typo would otherwise go unchecked silently.
func unknownRuntimeBinaries(configured map[string]string) []string {
	var out []string
	for comp := range configured {
		if !runtimever.KnownComponent(comp) {
			out = append(out, comp)
		}
	}
	sort.Strings(out)
	return out
}

func cloneData(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+8)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
