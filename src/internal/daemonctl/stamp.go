package daemonctl

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
)

// StampDir holds one stamp per unit: "<boot id> <sha256 of the unit file>",
// written by Install once systemd has read that exact file back as
// delegated in this boot. `cellguard start` then starts the unit without
// first asking systemd for its properties, which for a stopped unit costs
// a load from disk and ~400 computed properties (~5 ms, a quarter of a
// `systemctl start`; docs/performance.md), and verifies them after the
// job instead. It lives in /run: a reboot, which resets systemd, drops it.
const StampDir = "/run/cellguard/verified"

func (m *Manager) stampPath(unitName string) string {
	return m.path(filepath.Join(StampDir, unitName))
}

// bootID identifies this boot; "" when it cannot be read (then no stamp is
// written or trusted).
func (m *Manager) bootID() string {
	b, err := os.ReadFile(m.path("/proc/sys/kernel/random/boot_id"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func stampLine(boot string, content []byte) []byte {
	sum := sha256.Sum256(content)
	return []byte(boot + " " + hex.EncodeToString(sum[:]) + "\n")
}

// writeStamp records that systemd holds unitName as content, verified.
// Failing to write it only costs the next start its shortcut.
func (m *Manager) writeStamp(unitName string, content []byte) {
	boot := m.bootID()
	if boot == "" {
		return
	}
	p := m.stampPath(unitName)
	err := os.MkdirAll(filepath.Dir(p), 0o755)
	if err == nil {
		_, err = safefile.WriteFileAtomic(p, stampLine(boot, content), 0o644)
	}
	if err != nil {
		m.Logger.Info("write-verified-stamp-failed", lager.Data{"unit": unitName, "error": err.Error()})
	}
}

// dropStamp forgets a verification that no longer holds.
func (m *Manager) dropStamp(unitName string) {
	if err := os.Remove(m.stampPath(unitName)); err != nil && !os.IsNotExist(err) {
		m.Logger.Info("remove-verified-stamp-failed", lager.Data{"unit": unitName, "error": err.Error()})
	}
}

// verifiedThisBoot reports whether d's unit file holds exactly what Install
// would write (with KillMode=none, or the process fallback an earlier
// install settled on) and a stamp of this boot says systemd read that file
// back as delegated. Any doubt means no: Install then runs in full.
func (m *Manager) verifiedThisBoot(d Daemon) bool {
	boot := m.bootID()
	if boot == "" {
		return false
	}
	onDisk, err := os.ReadFile(m.path(filepath.Join(d.unitDir(), d.UnitName())))
	if err != nil {
		return false
	}
	stamp, err := os.ReadFile(m.stampPath(d.UnitName()))
	if err != nil || !bytes.Equal(stamp, stampLine(boot, onDisk)) {
		return false
	}
	s, err := m.spec(d, unitfile.KillModeNone)
	if err != nil {
		return false
	}
	for _, km := range []string{unitfile.KillModeNone, unitfile.KillModeProcess} {
		s.KillMode = km
		text, err := unitfile.Render(s)
		if err == nil && bytes.Equal(text, onDisk) {
			return true
		}
	}
	return false
}

// errNotAsVerified wraps what the after-start read-back found wrong.
func errNotAsVerified(unitName, name string, err error) error {
	return fmt.Errorf("start %s: started from a unit file verified earlier this boot, but its read-back after the start failed: %w; "+
		"run `cellguard unit install %s` (pre-start does) and restart the daemon", unitName, err, name)
}
