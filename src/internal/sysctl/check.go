package sysctl

import (
	"fmt"
	"path"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
)

// Key states in a check.
// For a floor (ModeAtLeast) "the wanted value" means any number at least
// Wanted.
const (
	InForce    = "in-force"   // live and boot both give the wanted value
	LiveDrift  = "live-drift" // boot config is right, the running value is not
	BootDrift  = "boot-drift" // running value is right, the next boot will change it
	Drift      = "drift"      // both wrong
	Missing    = "missing"    // the key does not exist on this kernel
	Unreadable = "error"      // the key could not be read
)

// KeyCheck is one key's verdict.
type KeyCheck struct {
	Key    string `json:"key"`
	Wanted string `json:"wanted"`
	// Mode is ModeExact or ModeAtLeast (Wanted is a floor).
	Mode   Mode   `json:"mode"`
	Live   string `json:"live"`
	LiveOK bool   `json:"live_ok"`
	// Boot is the value systemd-sysctl would write at boot; BootSet is false
	// when no file sets the key.
	Boot     string `json:"boot"`
	BootSet  bool   `json:"boot_set"`
	BootOK   bool   `json:"boot_ok"`
	BootFrom string `json:"boot_from,omitempty"` // "path:line" of the winning assignment
	Status   string `json:"status"`
	// Explanation says why the key is not in force, naming files and lines.
	Explanation string `json:"explanation,omitempty"`
	Error       string `json:"error,omitempty"`
}

// InForce reports whether the key is set now and will be after a reboot.
func (c KeyCheck) InForce() bool { return c.Status == InForce }

// CheckReport is the result of Check.
type CheckReport struct {
	Profile string     `json:"profile"`
	File    string     `json:"file"`
	InForce bool       `json:"in_force"`
	Keys    []KeyCheck `json:"keys"`
	// Files is the boot-time configuration as read: order, masks, targets.
	Files []ConfFile `json:"files"`
}

// Drifted returns the keys not in force.
func (r CheckReport) Drifted() []KeyCheck {
	var out []KeyCheck
	for _, k := range r.Keys {
		if !k.InForce() {
			out = append(out, k)
		}
	}
	return out
}

// Host is a machine to apply to or check: Root prefixes every host path
// (sysctl.d trees, the persisted file, /proc/sys); Live, when set, replaces
// the files under Root/proc/sys (tests use it to fake kernel refusals).
type Host struct {
	Root string
	Live Live
}

func (h Host) live() Live {
	if h.Live != nil {
		return h.Live
	}
	return Proc{Dir: hostroot.Join(h.Root, "/proc/sys")}
}

// Check is Host{Root: root}.Check(p): the API the validator's check uses.
func Check(root string, p Profile) (CheckReport, error) { return Host{Root: root}.Check(p) }

// Check writes nothing. For each entry it compares the live value and the
// value systemd-sysctl would set at boot with the wanted one, and explains
// any difference. An error means the boot configuration could not be read.
func (h Host) Check(p Profile) (CheckReport, error) {
	boot, err := LoadBoot(h.Root)
	if err != nil {
		return CheckReport{}, fmt.Errorf("check sysctls: %w", err)
	}
	rep := CheckReport{Profile: p.Name, File: p.File, InForce: true, Files: boot.Files}
	live := h.live()
	for _, e := range p.Entries {
		kc := checkKey(live, boot, p.File, e)
		if !kc.InForce() {
			rep.InForce = false
		}
		rep.Keys = append(rep.Keys, kc)
	}
	return rep, nil
}

func checkKey(live Live, boot *BootConfig, ours string, e Entry) KeyCheck {
	kc := KeyCheck{Key: e.Key, Wanted: e.Value, Mode: e.Mode.OrExact()}
	k, err := ParseKey(e.Key)
	if err != nil {
		kc.Status, kc.Error = Unreadable, err.Error()
		return kc
	}
	info, err := live.Stat(k)
	switch {
	case err != nil:
		kc.Status, kc.Error = Unreadable, err.Error()
		return kc
	case !info.Exists:
		kc.Status = Missing
		kc.Explanation = fmt.Sprintf("no /proc/sys/%s on this kernel (missing module, or a typo?)", k.Path())
		return kc
	}
	raw, err := live.Read(k)
	if err != nil {
		kc.Status, kc.Error = Unreadable, err.Error()
		return kc
	}
	kc.Live = NormalizeValue(raw)
	kc.LiveOK = satisfies(kc.Mode, kc.Live, e.Value)

	win := boot.Winner(k)
	if win != nil {
		kc.Boot, kc.BootSet = win.Value, true
		kc.BootOK = satisfies(kc.Mode, win.Value, e.Value)
		kc.BootFrom = fmt.Sprintf("%s:%d", boot.File(*win).Path, win.Line)
	}
	switch {
	case kc.LiveOK && kc.BootOK:
		kc.Status = InForce
		return kc
	case kc.BootOK:
		kc.Status = LiveDrift
	case kc.LiveOK:
		kc.Status = BootDrift
	default:
		kc.Status = Drift
	}
	kc.Explanation = explain(boot, ours, k, kc, win)
	return kc
}

// explain builds the operator's sentence: first what happens at boot (which
// file wins, relative to ours), then what the live value says.
func explain(boot *BootConfig, ours string, k Key, kc KeyCheck, win *Assignment) string {
	oursName := path.Base(ours)
	oursAt := boot.lastIn(ours, k)
	var parts []string
	below := floorClause(kc.Mode, kc.Wanted)
	if !kc.BootOK {
		parts = append(parts, explainBoot(boot, ours, oursName, k, kc.Mode, kc.Wanted, win, oursAt))
	}
	if !kc.LiveOK {
		switch {
		case win != nil && kc.Live == win.Value:
			parts = append(parts, fmt.Sprintf("the live value %s%s is what %s sets", kc.Live, below, where(boot, *win)))
		case kc.BootOK:
			parts = append(parts, fmt.Sprintf("the live value is %s%s although %s sets %s at boot: systemd-sysctl has not "+
				"run since, or something changed the key at runtime; run cellguard sysctl apply", kc.Live, below, where(boot, *win), win.Value))
		default:
			parts = append(parts, fmt.Sprintf("the live value is %s%s", kc.Live, floorText(kc.Mode, kc.Wanted)))
		}
	}
	return strings.Join(parts, "; ")
}

func explainBoot(boot *BootConfig, ours, oursName string, k Key, mode Mode, wanted string, win *Assignment, oursAt *Assignment) string {
	if win == nil {
		// Nothing sets it at boot. Say why ours does not.
		for _, a := range boot.final {
			if a.Key == k.Path() && !a.HasValue {
				return fmt.Sprintf("%s (\"-%s\" without a value) cancels every earlier assignment, so nothing sets it at boot",
					where(boot, a), k.Name())
			}
		}
		return "nothing sets it at boot: " + whyNotOurs(boot, ours, oursName, k)
	}
	wf := boot.File(*win)
	glob := ""
	if win.Pattern {
		glob = fmt.Sprintf(" (glob %s)", swapSeparators(win.Key))
	}
	// For a floor, say the winner is below it: that is what makes it drift.
	below := floorClause(mode, wanted)
	switch {
	case wf.Path == ours && below != "":
		return fmt.Sprintf("%s sets %s%s: the file is stale; run cellguard sysctl apply", where(boot, *win), win.Value, floorText(mode, wanted))
	case wf.Path == ours:
		return fmt.Sprintf("%s sets %s, not %s: the file is stale; run cellguard sysctl apply", where(boot, *win), win.Value, wanted)
	case oursAt != nil && wf.Last:
		return fmt.Sprintf("%s sets it to %s%s%s and is read last, after ours (%s), so it wins at boot",
			where(boot, *win), win.Value, glob, below, oursName)
	case oursAt != nil:
		return fmt.Sprintf("%s sets it back to %s%s%s after ours (%s), so it wins at boot",
			where(boot, *win), win.Value, glob, below, oursName)
	default:
		return fmt.Sprintf("%s sets it to %s%s%s at boot and ours does not set it: %s",
			where(boot, *win), win.Value, glob, below, whyNotOurs(boot, ours, oursName, k))
	}
}

// whyNotOurs says why our file contributes nothing for k.
func whyNotOurs(boot *BootConfig, ours, oursName string, k Key) string {
	f, ok := boot.lookup(ours)
	switch {
	case !ok:
		return fmt.Sprintf("%s does not exist; run cellguard sysctl apply", ours)
	case f.MaskedBy != "":
		return fmt.Sprintf("%s is masked by %s (same name, earlier directory)", ours, f.MaskedBy)
	case f.Null && f.Target == "/dev/null":
		return fmt.Sprintf("%s is a symlink to /dev/null (masked by the administrator)", ours)
	case f.Err != "":
		return fmt.Sprintf("%s cannot be read: %s", ours, f.Err)
	}
	return fmt.Sprintf("%s does not set %s; run cellguard sysctl apply", oursName, k.Name())
}

// where is "path:line", with the symlink target or "(read last)" when they
// matter to the reader.
func where(boot *BootConfig, a Assignment) string {
	f := boot.File(a)
	s := fmt.Sprintf("%s:%d", f.Path, a.Line)
	if f.Target != "" {
		s = fmt.Sprintf("%s:%d (%s)", f.Path, a.Line, f.Target)
	}
	return s
}
