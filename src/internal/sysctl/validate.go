package sysctl

import (
	"fmt"
	"strconv"
	"strings"
)

// stringKeys hold text, even when the current text happens to be digits.
var stringKeys = map[string]bool{
	"kernel.core_pattern":                     true,
	"kernel.domainname":                       true,
	"kernel.hostname":                         true,
	"kernel.modprobe":                         true,
	"kernel.poweroff_cmd":                     true,
	"net.core.default_qdisc":                  true,
	"net.ipv4.tcp_allowed_congestion_control": true,
	"net.ipv4.tcp_congestion_control":         true,
}

// checkLive validates an entry against the running kernel without writing:
// the key must be a readable, writable file under /proc/sys, and a numeric
// key (judged by what the kernel prints now) needs as many decimal integers
// as it holds, and a floor needs a key holding one number. It returns the
// current raw value.
func checkLive(live Live, k Key, e Entry) (string, error) {
	info, err := live.Stat(k)
	switch {
	case err != nil:
		return "", err
	case !info.Exists:
		return "", invalidf("%s: unknown key: no file /proc/sys/%s on this kernel (missing module, or a typo?)", k, k.Path())
	case info.Directory:
		return "", invalidf("%s: /proc/sys/%s is a directory, not a key", k, k.Path())
	case !info.Writable:
		return "", invalidf("%s: read-only key", k)
	case !info.Readable:
		return "", invalidf("%s: write-only key: cellguard cannot read it back to verify", k)
	}
	cur, err := live.Read(k)
	if err != nil {
		return "", fmt.Errorf("%s: %w", k, err)
	}
	// The mode first: a floor on a vector is refused for what it is, not
	// for its count of numbers.
	if err := checkMode(k, e, cur); err != nil {
		return cur, err
	}
	if err := checkValueFor(k, cur, e.Value); err != nil {
		return cur, err
	}
	return cur, nil
}

// checkValueFor compares the wanted value's shape with the current one.
func checkValueFor(k Key, current, wanted string) error {
	if err := validateValueSyntax(k, wanted); err != nil {
		return err
	}
	cur := strings.Fields(current)
	if stringKeys[k.Name()] || len(cur) == 0 || !allInts(cur) {
		return nil
	}
	want := strings.Fields(wanted)
	for _, f := range want {
		if err := decimal(f); err != nil {
			return invalidf("%s: value %q: %v; the key is numeric (the kernel holds %q)",
				k, wanted, err, NormalizeValue(current))
		}
	}
	if len(want) != len(cur) {
		return invalidf("%s: value %q has %d number(s), the key holds %d (%q), separated by spaces",
			k, wanted, len(want), len(cur), NormalizeValue(current))
	}
	return nil
}

func allInts(fields []string) bool {
	for _, f := range fields {
		if decimal(f) != nil {
			return false
		}
	}
	return true
}

// decimal accepts what the kernel prints back: an optional minus, no
// leading zeros, within 64 bits. "010" or "0x10" would be parsed by the
// kernel but read back as "8" or "16", so they could never verify.
func decimal(f string) error {
	digits := strings.TrimPrefix(f, "-")
	if digits == "" {
		return fmt.Errorf("%q is not a number", f)
	}
	for _, r := range digits {
		if r < '0' || r > '9' {
			return fmt.Errorf("%q is not a decimal number", f)
		}
	}
	if len(digits) > 1 && digits[0] == '0' {
		return fmt.Errorf("%q has a leading zero", f)
	}
	if _, err := strconv.ParseInt(f, 10, 64); err != nil {
		if _, uerr := strconv.ParseUint(f, 10, 64); uerr != nil {
			return fmt.Errorf("%q is out of range", f)
		}
	}
	return nil
}
