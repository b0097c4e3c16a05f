package unitfile

import (
	"bytes"
	"strings"
)

// Marker opens every unit and drop-in cellguard writes: removal (pre-start
// converging, cellguard uninstall) touches no file without it, so a unit
// an operator or another release wrote under a similar name is never
// removed.
const Marker = "# Written by cellguard"

// WrittenByCellguard reports whether a unit file's text is cellguard's.
func WrittenByCellguard(text []byte) bool { return bytes.HasPrefix(text, []byte(Marker)) }

// DaemonOf returns the daemon a unit name of cellguard's belongs to
// ("cellguard-garden.service" -> "garden").
func DaemonOf(unitName string) (string, bool) {
	d, ok := strings.CutPrefix(unitName, Prefix)
	if !ok {
		return "", false
	}
	d, ok = strings.CutSuffix(d, ".service")
	if !ok || ValidateName(d) != nil {
		return "", false
	}
	return d, true
}
