package daemonctl

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
)

// ErrRefused means systemd read a setting of a file cellguard wrote back
// as something else, and no fallback keeps container processes safe: a
// drop-in cellguard did not write overrides it, or this systemd does not
// take the value. The error names the fix.
var ErrRefused = errors.New("systemd did not take a setting cellguard wrote")

// RefusedError is one refused setting: what cellguard wrote, what systemd
// read back, and what the operator does about it.
type RefusedError struct {
	Unit     string
	Setting  string // "KillMode", "Delegate"
	Wrote    string // "KillMode=none"
	ReadBack string // "KillMode=control-group"
	Fix      string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%v: wrote %s for %s, read back %s: %s", ErrRefused, e.Wrote, e.Unit, e.ReadBack, e.Fix)
}

func (e *RefusedError) Unwrap() error { return ErrRefused }

// refused is the refusal of setting=wrote in the file at path, read back
// as readBack; overriding are the drop-ins (other than cellguard's) that
// assign the setting, which systemd reads after the file and so win.
func refused(u *systemd.Unit, path, setting, wrote, readBack string, overriding []string) *RefusedError {
	e := &RefusedError{Unit: u.Name, Setting: setting, Wrote: setting + "=" + wrote, ReadBack: readBack}
	if len(overriding) > 0 {
		e.Fix = fmt.Sprintf("drop-ins override %s: remove %s= from %s (`systemctl cat %s` shows every file systemd reads), "+
			"then run cellguard again", path, setting, strings.Join(overriding, ", "), u.Name)
	} else {
		e.Fix = fmt.Sprintf("no drop-in sets it, so this systemd does not take the value: `systemd-analyze verify %s` and "+
			"`journalctl -b | grep %s` say why", path, u.Name)
	}
	return e
}

// overriding returns, for a setting, the drop-ins of u that assign it in
// [Service] and so win over what cellguard wrote: every drop-in when it
// wrote the unit file (own ""), those systemd reads after own when it wrote
// the drop-in own (DropInPaths is in the order systemd applies them). Each
// is read once under the root; one that cannot be read counts, since
// systemd may read it.
func (m *Manager) overriding(u *systemd.Unit, own string) func(setting string) []string {
	texts := map[string][]byte{}
	after := own == ""
	for _, p := range u.DropInPaths {
		if !after {
			after = p == own
			continue
		}
		b, err := os.ReadFile(m.path(p))
		if err != nil {
			b = nil
		}
		texts[p] = b
	}
	return func(setting string) []string {
		var out []string
		for _, p := range u.DropInPaths {
			b, ok := texts[p]
			if !ok {
				continue
			}
			if _, set, err := unitfile.Setting(b, "Service", setting); b == nil || err != nil || set {
				out = append(out, p)
			}
		}
		return out
	}
}

// delegationRefused is nil when systemd reports the delegation asked for
// (never assume a directive took), else the refusal.
func delegationRefused(u *systemd.Unit, path, delegate string, overriding []string) *RefusedError {
	ok, missing := u.Delegates(unitfile.Controllers(delegate))
	if ok {
		return nil
	}
	got := "Delegate=no"
	if u.Delegate {
		got = fmt.Sprintf("DelegateControllers=%s (missing %s)", strings.Join(u.DelegateControllers, " "), strings.Join(missing, " "))
	}
	return refused(u, path, "Delegate", delegate, got, overriding)
}
