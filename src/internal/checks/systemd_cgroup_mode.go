package checks

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// systemd releases that change what a cgroup v1 host can do.
const (
	// systemdRefusesV1 refuses to boot on cgroup v1 (legacy or hybrid)
	// unless SYSTEMD_CGROUP_ENABLE_LEGACY_FORCE=1 is on the kernel command
	// line (systemd v256 NEWS).
	systemdRefusesV1 = 256
	// systemdDropsV1 has no cgroup v1 support at all (systemd v258).
	systemdDropsV1 = 258
	legacyForceArg = "SYSTEMD_CGROUP_ENABLE_LEGACY_FORCE=1"
)

// SystemdCgroupMode checks that the host's systemd can keep running on the
// host's cgroup mode, and reports units relying on the deprecated
// KillMode=none.
type SystemdCgroupMode struct{}

var _ judge = SystemdCgroupMode{}

func (SystemdCgroupMode) Meta() validator.Meta {
	return validator.Meta{
		ID: "systemd-cgroup-mode",
		// Every layout: v1 and hybrid for whether systemd boots there, every one for KillMode=none.
		Layouts: everyLayout,
		Title:   "systemd supports the host's cgroup mode",
		Severity: map[validator.Phase]validator.Severity{
			validator.PreStart: validator.Blocking,
			validator.Drain:    validator.Warning,
		},
		Story: "systemd 256 refuses to boot on cgroup v1 (legacy or hybrid, what CF cells and " +
			"Concourse workers on older stemcells use) unless SYSTEMD_CGROUP_ENABLE_LEGACY_FORCE=1 " +
			"is on the kernel command line, and systemd 258 removed cgroup v1 support: a stemcell " +
			"or OS upgrade that brings either leaves the cell unbootable. KillMode=none, which " +
			"keeps systemd from killing a unit's leftover processes, is deprecated since systemd 246.",
		References: []string{
			"https://github.com/systemd/systemd/releases/tag/v256",
			"https://github.com/systemd/systemd/releases/tag/v258",
			"https://github.com/systemd/systemd/releases/tag/v246",
		},
		Fix: "Move the host to cgroup v2 (systemd.unified_cgroup_hierarchy=1 on the kernel command " +
			"line and a v2-capable runtime), or keep systemd below 256; as a stopgap for 256 and " +
			"257 only, add SYSTEMD_CGROUP_ENABLE_LEGACY_FORCE=1 to the kernel command line. For " +
			"KillMode=none units, plan a KillMode=mixed or control-group replacement.",
	}
}

// Needs: the systemd facts.
func (SystemdCgroupMode) Needs() []facts.Kind { return []facts.Kind{facts.Systemd} }

// Judge says whether each systemd version read boots on the host's cgroup
// mode, and lists the KillMode=none units once systemd deprecates them.
func (SystemdCgroupMode) Judge(h *facts.Host) ([]validator.Finding, error) {
	f := h.Systemd()
	switch {
	case f.Err != nil:
		return nil, f.Err
	case f.ModeErr != nil:
		return nil, f.ModeErr
	}
	var sources []source
	var fs []validator.Finding
	switch {
	case f.RunningAsked && f.RunningErr != nil && f.Mode != cgroup.Unified:
		return nil, fmt.Errorf("read running systemd version: %w", f.RunningErr)
	case f.RunningAsked && f.RunningErr != nil:
		// Every systemd supports v2: the unanswered version decides nothing
		// here, so a slow D-Bus must not block a rollout.
		fs = append(fs, validator.Finding{Subject: "systemd running", Status: validator.Skip,
			Detail: fmt.Sprintf("the running systemd did not say its version (%v); on cgroup %s every systemd supports the mode, so the installed version is judged", f.RunningErr, f.Mode)})
	case f.RunningAsked:
		sources = append(sources, source{"running", f.Running})
	case f.RunningConfigured:
		fs = append(fs, validator.Finding{Subject: "systemd", Status: validator.Skip,
			Detail: "systemd is not the init system here (no /run/systemd/system); only the installed version is checked"})
	}
	switch {
	case errors.Is(f.InstalledErr, facts.ErrNoSystemctl):
		fs = append(fs, validator.Finding{Subject: "systemd", Status: validator.Skip, Detail: f.InstalledErr.Error()})
	case f.InstalledErr != nil:
		return nil, f.InstalledErr
	case len(sources) == 1 && sources[0].v == f.Installed:
		sources[0].name = "running and installed"
	default:
		sources = append(sources, source{"installed", f.Installed})
	}
	if len(sources) == 0 {
		return fs, nil
	}
	forced := slices.Contains(f.Cmdline, legacyForceArg)
	maxV := 0
	for _, s := range sources {
		maxV = max(maxV, s.v)
		fs = append(fs, judgeSystemd(s, f.Mode, forced))
	}
	if maxV < facts.KillModeNoneDeprecatedSince {
		return fs, nil
	}
	if f.KillModeNoneErr != nil {
		return nil, f.KillModeNoneErr
	}
	for _, u := range f.KillModeNone {
		// Information, not a failure: systemd still honours it.
		fs = append(fs, validator.Finding{Subject: u.Name, Status: validator.Pass,
			Detail: fmt.Sprintf("%s sets KillMode=none (%s), deprecated since systemd %d and logged as unsafe by systemd %d", u.Name, u.Path, facts.KillModeNoneDeprecatedSince, maxV),
			Data:   map[string]string{"level": "info", "path": u.Path, "kill_mode": "none"}})
	}
	return fs, nil
}

// source is one systemd version read: the running manager's or the
// installed binary's.
type source struct {
	name string
	v    int
}

// judgeSystemd says whether systemd of version s boots on a host in cgroup
// mode (forced: with the kernel's legacy-force argument).
func judgeSystemd(s source, mode cgroup.Mode, forced bool) validator.Finding {
	v1 := mode == cgroup.Legacy || mode == cgroup.Hybrid
	d := map[string]string{"systemd": strconv.Itoa(s.v), "which": s.name, "cgroup_mode": mode.String(),
		"legacy_force": strconv.FormatBool(forced)}
	f := validator.Finding{Subject: "systemd " + s.name, Data: d}
	switch {
	case !v1 || s.v < systemdRefusesV1:
		f.Status = validator.Pass
		f.Detail = fmt.Sprintf("systemd %d (%s) supports the %s cgroup mode", s.v, s.name, mode)
	case s.v >= systemdDropsV1:
		f.Status = validator.Fail
		f.Detail = fmt.Sprintf("systemd %d (%s) has no cgroup v1 support (removed in %d) and this host uses cgroup %s: it will not boot", s.v, s.name, systemdDropsV1, mode)
	case forced:
		f.Status = validator.Warn
		f.Detail = fmt.Sprintf("systemd %d (%s) on cgroup %s boots only because the kernel command line has %s; systemd %d drops cgroup v1 entirely", s.v, s.name, mode, legacyForceArg, systemdDropsV1)
	default:
		f.Status = validator.Fail
		f.Detail = fmt.Sprintf("systemd %d (%s) refuses to boot on cgroup v1 and this host uses cgroup %s without %s on the kernel command line", s.v, s.name, mode, legacyForceArg)
	}
	return f
}
