package checks

import (
	"fmt"
	"strconv"

	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/sysctl"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// SysctlProfile checks that the container-host sysctl profile, as the job
// configured it, is in force now and will be after a reboot.
type SysctlProfile struct{}

var _ judge = SysctlProfile{}

func (SysctlProfile) Meta() validator.Meta {
	return validator.Meta{
		ID: "sysctl-profile",
		// Every layout: kernel parameters are no cgroup's.
		Layouts:  everyLayout,
		Measured: []string{"live"},
		Title:    "the container-host sysctl profile is in force, live and at boot",
		Severity: map[validator.Phase]validator.Severity{
			// Pre-start runs `cellguard sysctl apply` first, so drift here is
			// what apply cannot fix: another sysctl.d file or /etc/sysctl.conf
			// wins at boot, or the kernel lacks the key. After a reboot BOSH
			// runs no pre-start, so the cell would silently lose the values.
			validator.PreStart: validator.Blocking,
			// At drain the values are the outgoing deployment's; the
			// update's pre-start applies them again.
			validator.Drain: validator.Warning,
		},
		Story: "runc 1.0.0-rc93's `runc init` hung writing into a pipe that the kernel had shrunk " +
			"to minimal size once root's pipes passed fs.pipe-user-pages-soft; keyring quotas " +
			"(kernel.keys.*) fail container creation with 'disk quota exceeded'. The profile sets each " +
			"value with its reason and source; each finding names the live and wanted value and which " +
			"file wins at boot.",
		References: []string{
			"https://github.com/opencontainers/runc/issues/2828",
			"https://man7.org/linux/man-pages/man8/systemd-sysctl.service.8.html",
			"https://man7.org/linux/man-pages/man5/sysctl.d.5.html",
		},
		Fix: "Run `cellguard sysctl apply --config /var/vcap/jobs/cellguard/config/cellguard.json` for a " +
			"live drift; for a boot drift remove or reorder the sysctl.d file the finding names (or set " +
			"the value in cellguard.sysctl.set); drop a key this kernel lacks with cellguard.sysctl.remove.",
	}
}

// Needs: the sysctl facts.
func (SysctlProfile) Needs() []facts.Kind { return []facts.Kind{facts.Sysctls} }

// Judge reports every key of the profile not in force, live or at boot.
func (SysctlProfile) Judge(h *facts.Host) ([]validator.Finding, error) {
	f := h.Sysctls()
	switch {
	case f.Err != nil:
		return nil, f.Err
	case f.ResolveErr != nil:
		return nil, f.ResolveErr
	case len(f.Profile.Entries) == 0:
		return []validator.Finding{{Subject: "sysctl", Status: validator.Skip,
			Detail: fmt.Sprintf("sysctl profile %q with no keys set: nothing to check", f.Profile.Name)}}, nil
	case f.NoProcSys:
		// A fixture tree without /proc/sys models a host part this check
		// does not read; every live host has one.
		return []validator.Finding{{Subject: "sysctl", Status: validator.Skip,
			Detail: fmt.Sprintf("no proc/sys under %s: kernel parameters cannot be read", hostroot.Dir(h.Root()))}}, nil
	case f.ReportErr != nil:
		return nil, f.ReportErr
	}
	p, rep := f.Profile, f.Report
	why := map[string]sysctl.Entry{}
	for _, e := range p.Entries {
		why[e.Key] = e
	}
	var fs []validator.Finding
	for _, k := range rep.Keys {
		if k.InForce() {
			continue
		}
		e := why[k.Key]
		wanted := sysctl.WantedLabel(k.Mode, k.Wanted) // ">=N" for a floor
		d := map[string]string{
			"key": k.Key, "wanted": k.Wanted, "mode": string(k.Mode), "live": k.Live, "status": k.Status,
			"boot_set": strconv.FormatBool(k.BootSet), "from": e.From,
		}
		if k.BootSet {
			d["boot"], d["boot_from"] = k.Boot, k.BootFrom
		}
		if e.Why != "" {
			d["why"] = e.Why
		}
		if e.Source != "" {
			d["source"] = e.Source
		}
		f := validator.Finding{Subject: k.Key, Status: validator.Fail, Data: d}
		switch k.Status {
		case sysctl.Unreadable:
			f.Status = validator.Error
			f.Detail = fmt.Sprintf("cannot read it (wanted %s): %s", wanted, k.Error)
			d["error"] = k.Error
		case sysctl.Missing:
			f.Detail = fmt.Sprintf("wanted %s: %s", wanted, k.Explanation)
		case sysctl.BootDrift:
			f.Detail = fmt.Sprintf("live %s is as wanted, but not after a reboot: %s", k.Live, k.Explanation)
		default:
			f.Detail = fmt.Sprintf("live %s, wanted %s (%s): %s", k.Live, wanted, k.Status, k.Explanation)
		}
		fs = append(fs, f)
	}
	fs = append(fs, validator.Finding{
		Subject: "sysctl", Status: validator.Pass,
		Detail: fmt.Sprintf("profile %s: %d of %d keys in force, persisted in %s", p.Name, len(rep.Keys)-len(fs), len(rep.Keys), p.File),
		Data: map[string]string{"profile": p.Name, "file": p.File, "keys": strconv.Itoa(len(rep.Keys)),
			"drifted": strconv.Itoa(len(fs))},
	})
	return fs, nil
}
