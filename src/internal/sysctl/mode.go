package sysctl

import (
	"fmt"
	"math/big"
	"strings"
)

// Mode is how an entry's value is compared: exact or a floor. The zero
// value (an Entry built by hand) means exact.
type Mode string

// Comparison modes of an entry.
const (
	// ModeExact: the key must hold exactly Value. Switches and modes
	// (ip_forward, panic_on_oom), vectors, text, and limits where 0 means
	// "no limit" (pipe-user-pages-*), where a higher number is stricter.
	ModeExact Mode = "exact"
	// ModeAtLeast: Value is a floor. Capacity limits (quotas, pid_max,
	// inotify, user namespaces): a host already tuned higher, by its
	// kernel's default, the stemcell or another job, keeps its value.
	ModeAtLeast Mode = "at-least"
)

// AtLeastPrefix marks a floor in the job config's sysctl.set and --set:
// "kernel.pid_max": ">=4194304". Without it an override is exact.
const AtLeastPrefix = ">="

// OrExact treats an unset mode as exact, so a Profile built by hand (tests,
// older callers) keeps the strict comparison.
func (m Mode) OrExact() Mode {
	if m == "" {
		return ModeExact
	}
	return m
}

// IsAtLeast reports whether the entry is a floor.
func (e Entry) IsAtLeast() bool { return e.Mode.OrExact() == ModeAtLeast }

// SatisfiedBy reports whether have, a value read from /proc/sys (here or
// on another machine), meets the entry, judged as Check judges a live key.
func (e Entry) SatisfiedBy(have string) bool { return satisfies(e.Mode, NormalizeValue(have), e.Value) }

// Wanted is the entry as an operator reads it: "0" or ">=4194304".
func (e Entry) Wanted() string { return WantedLabel(e.Mode, e.Value) }

// WantedLabel renders a value with its mode: "0" or ">=4194304".
func WantedLabel(mode Mode, value string) string {
	if mode.OrExact() == ModeAtLeast {
		return AtLeastPrefix + value
	}
	return value
}

// parseSetValue splits an operator's value into mode and normalized
// value: ">=N" is a floor and must be one decimal number (a floor on a
// vector or on text has no meaning); anything else is exact.
func parseSetValue(k Key, raw string) (mode Mode, value string, err error) {
	v := strings.TrimSpace(raw)
	if !strings.HasPrefix(v, AtLeastPrefix) {
		return ModeExact, NormalizeValue(raw), nil
	}
	n := NormalizeValue(strings.TrimPrefix(v, AtLeastPrefix))
	switch {
	case n == "":
		return "", "", invalidf("%s: %q: a floor needs a number after %s", k, raw, AtLeastPrefix)
	case strings.Contains(n, " "):
		return "", "", invalidf("%s: %q: a floor (%s) takes one number; keys holding several values are exact", k, raw, AtLeastPrefix)
	case stringKeys[k.Name()]:
		return "", "", invalidf("%s: %q: the key holds text, a floor (%s) needs a numeric key", k, raw, AtLeastPrefix)
	}
	if err := decimal(n); err != nil {
		return "", "", invalidf("%s: %q: a floor must be a decimal number: %v", k, raw, err)
	}
	return ModeAtLeast, n, nil
}

// satisfies reports whether have meets the entry: equal for exact, a
// number no smaller than Value for at-least. Anything that is not a
// single decimal number never meets a floor.
func satisfies(mode Mode, have, wanted string) bool {
	if mode.OrExact() != ModeAtLeast {
		return have == wanted
	}
	c, ok := compareDecimal(have, wanted)
	return ok && c >= 0
}

// compareDecimal compares two single decimal numbers of up to 64 bits,
// signed or not (/proc/sys holds both, e.g. kernel.shmmax near 2^64).
func compareDecimal(a, b string) (int, bool) {
	x, okx := new(big.Int).SetString(a, 10)
	y, oky := new(big.Int).SetString(b, 10)
	if !okx || !oky || decimal(a) != nil || decimal(b) != nil {
		return 0, false
	}
	return x.Cmp(y), true
}

// maxDecimal returns the larger of two values where the first is a valid
// floor; a second that is not a number is ignored.
func maxDecimal(floor, other string) string {
	if c, ok := compareDecimal(other, floor); ok && c > 0 {
		return other
	}
	return floor
}

// checkMode refuses an unknown mode and a floor on a key that does not
// hold one number (what the kernel prints now decides).
func checkMode(k Key, e Entry, current string) error {
	switch e.Mode.OrExact() {
	case ModeExact:
		return nil
	case ModeAtLeast:
	default:
		return invalidf("%s: unknown mode %q (want %s or %s)", k, e.Mode, ModeExact, ModeAtLeast)
	}
	if err := decimal(e.Value); err != nil {
		return invalidf("%s: floor %q: %v", k, e.Value, err)
	}
	cur := strings.Fields(current)
	if stringKeys[k.Name()] || len(cur) != 1 || decimal(cur[0]) != nil {
		return invalidf("%s: a floor (%s%s) needs a key holding one number; the kernel holds %q",
			k, AtLeastPrefix, e.Value, NormalizeValue(current))
	}
	return nil
}

// floorText is the clause check and apply add to a sentence about a
// floor: ", below the floor 524288"; empty for an exact key.
func floorText(mode Mode, wanted string) string {
	if mode.OrExact() == ModeAtLeast {
		return fmt.Sprintf(", below the floor %s", wanted)
	}
	return ""
}

// floorClause is floorText in the middle of a sentence: ", below the floor
// 524288,".
func floorClause(mode Mode, wanted string) string {
	if t := floorText(mode, wanted); t != "" {
		return t + ","
	}
	return ""
}
