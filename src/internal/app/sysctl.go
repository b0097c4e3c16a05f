package app

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/config"
	"github.com/cloudfoundry/cellguard/src/internal/sysctl"
)

// DefaultSysctlFile is where apply persists the profile.
const DefaultSysctlFile = sysctl.DefaultFile

// ErrSysctlInvalid is input the kernel or the profile refuses: nothing was
// persisted and live changes were rolled back.
var ErrSysctlInvalid = sysctl.ErrInvalid

// SysctlProfile is a resolved sysctl profile: what apply writes and
// check compares.
type SysctlProfile = sysctl.Profile

// SysctlFlags are the command line's say over the config's sysctl section.
type SysctlFlags struct {
	Profile, File string
	Set, Remove   []string
}

// ResolveSysctl resolves the config's sysctl section with the flags over it.
func ResolveSysctl(cfg *config.Config, f SysctlFlags) (SysctlProfile, error) {
	s := cfg.Sysctl.Settings()
	if f.Profile != "" {
		s.Profile = f.Profile
	}
	if f.File != "" {
		s.File = f.File
	}
	if len(f.Set) > 0 {
		merged := map[string]string{}
		for k, v := range s.Set {
			merged[k] = v
		}
		for _, kv := range f.Set {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return sysctl.Profile{}, fmt.Errorf("--set %q: want KEY=VALUE or KEY>=N", kv)
			}
			// "KEY>=N" cut at "=" leaves the ">" on the key.
			if strings.HasSuffix(k, ">") {
				k, v = strings.TrimSuffix(k, ">"), sysctl.AtLeastPrefix+v
			}
			merged[strings.TrimSpace(k)] = v
		}
		s.Set = merged
	}
	s.Remove = append(append([]string(nil), s.Remove...), f.Remove...)
	return sysctl.Resolve(s)
}

// SysctlApply validates p, writes it live under root, reads it back and
// persists it, logging each key and, when all took, the summary.
func SysctlApply(logger lager.Logger, root string, p sysctl.Profile) (sysctl.ApplyReport, error) {
	logger.Info("starting", lager.Data{"profile": p.Name, "file": p.File, "root": root, "keys": len(p.Entries)})
	rep, err := sysctl.Host{Root: root}.Apply(p)
	for _, k := range rep.Keys {
		data := lager.Data{"key": k.Key, "before": k.Before, "wanted": k.Wanted, "mode": k.Mode, "after": k.After,
			"result": k.Result, "persisted": k.Persisted}
		if k.Note != "" {
			data["note"] = k.Note
		}
		switch {
		case k.Error != "":
			data["error"] = k.Error
			logger.Info("key-not-applied", data)
		case k.Changed:
			logger.Info("key-changed", data)
		default:
			logger.Debug("key-unchanged", data)
		}
		if k.BootNote != "" {
			logger.Info("key-overridden-at-boot", lager.Data{"key": k.Key, "note": k.BootNote})
		}
	}
	if err == nil {
		logger.Info("finished", lager.Data{"changed": rep.Changed, "file_changed": rep.FileChanged, "summary": rep.Summary()})
	}
	return rep, err
}

// SysctlCheck compares p with the live and the boot values under root,
// writing nothing, and logs each key not in force.
func SysctlCheck(logger lager.Logger, root string, p sysctl.Profile) (sysctl.CheckReport, error) {
	rep, err := sysctl.Check(root, p)
	if err != nil {
		return rep, err
	}
	for _, k := range rep.Drifted() {
		logger.Info("key-not-in-force", lager.Data{"key": k.Key, "status": k.Status, "wanted": k.Wanted, "mode": k.Mode,
			"live": k.Live, "boot": k.Boot, "boot_from": k.BootFrom, "explanation": k.Explanation, "error": k.Error})
	}
	logger.Info("finished", lager.Data{"in_force": rep.InForce, "drifted": len(rep.Drifted()), "keys": len(rep.Keys)})
	return rep, nil
}

// WriteSysctlProfile writes the resolved profile for people: key, value,
// why, source.
func WriteSysctlProfile(w io.Writer, p sysctl.Profile) {
	fmt.Fprintf(w, "profile %s, persisted to %s\n", p.Name, p.File)
	for _, e := range p.Entries {
		op := "="
		if e.IsAtLeast() {
			op = sysctl.AtLeastPrefix
		}
		fmt.Fprintf(w, "\n%s %s %s  (%s, %s)\n  why: %s\n", e.Key, op, e.Value, e.From, e.Mode.OrExact(), e.Why)
		if e.Source != "" {
			fmt.Fprintf(w, "  source: %s\n", e.Source)
		}
	}
}

// WriteSysctlApply writes apply's table and notes.
func WriteSysctlApply(w io.Writer, rep sysctl.ApplyReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tBEFORE\tWANTED\tAFTER\tRESULT")
	for _, k := range rep.Keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.Key, sysctlDash(k.Before), sysctl.WantedLabel(k.Mode, k.Wanted),
			sysctlDash(k.After), k.Result)
	}
	_ = tw.Flush()
	for _, k := range rep.Keys {
		if k.Error != "" {
			fmt.Fprintf(w, "%s: %s\n", k.Result, k.Error)
		}
	}
	for _, k := range rep.Keys {
		if k.Note != "" {
			fmt.Fprintf(w, "%s: %s\n", k.Key, k.Note)
		}
	}
	for _, k := range rep.Keys {
		if k.BootNote != "" {
			fmt.Fprintf(w, "%s: at boot: %s\n", k.Key, k.BootNote)
		}
	}
	fmt.Fprintln(w, rep.Summary())
}

// WriteSysctlCheck writes check's table and drift.
func WriteSysctlCheck(w io.Writer, rep sysctl.CheckReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tWANTED\tLIVE\tBOOT\tSTATUS")
	for _, k := range rep.Keys {
		boot := k.Boot
		if !k.BootSet {
			boot = "(unset)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.Key, sysctl.WantedLabel(k.Mode, k.Wanted), sysctlDash(k.Live), boot, k.Status)
	}
	_ = tw.Flush()
	drifted := rep.Drifted()
	for _, k := range drifted {
		why := k.Explanation
		if k.Error != "" {
			why = k.Error
		}
		fmt.Fprintf(w, "%s: %s\n", k.Key, why)
	}
	if len(drifted) == 0 {
		fmt.Fprintf(w, "all %d keys in force (profile %s, %s)\n", len(rep.Keys), rep.Profile, rep.File)
	} else {
		fmt.Fprintf(w, "%d of %d keys not in force (profile %s, %s)\n", len(drifted), len(rep.Keys), rep.Profile, rep.File)
	}
}

func sysctlDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
