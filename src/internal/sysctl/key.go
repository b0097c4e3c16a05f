package sysctl

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid marks bad input: a key or value cellguard refuses, or one the
// kernel rejected. The CLI maps it to exit code 2.
var ErrInvalid = errors.New("sysctl: invalid input")

// inputError is bad input: its text is the operator's message, and it
// matches ErrInvalid (and the kernel's errno, when there is one).
type inputError struct {
	msg string
	err error
}

func (e *inputError) Error() string        { return e.msg }
func (e *inputError) Unwrap() error        { return e.err }
func (e *inputError) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, args ...any) error {
	return &inputError{msg: fmt.Sprintf(format, args...)}
}

// ErrNotApplied marks a valid profile that could not be applied, persisted or
// verified. The CLI maps it to exit code 1.
var ErrNotApplied = errors.New("sysctl: not applied")

// maxKeyLen bounds key names; real ones are far shorter.
const maxKeyLen = 256

// Key is a sysctl name. Its canonical form is dotted ("net.ipv4.ip_forward");
// Path is the same key relative to /proc/sys ("net/ipv4/ip_forward").
type Key struct {
	path string
}

// Path is the key's file relative to /proc/sys.
func (k Key) Path() string { return k.path }

// Name is the dotted form. A dot inside a path component (a VLAN interface
// "eno2.100") becomes a slash, as sysctl.d(5) specifies.
func (k Key) Name() string { return swapSeparators(k.path) }

func (k Key) String() string { return k.Name() }

// ParseKey validates a key cellguard is asked to manage. Both separators are
// accepted with systemd's rule: when the first separator is a dot, dots and
// slashes swap. Globs, "-" prefixes, empty or "." / ".." components and any
// character outside [A-Za-z0-9_.-/] are refused: a name must map to exactly
// one file below /proc/sys and never climb out of it.
func ParseKey(s string) (Key, error) {
	name := strings.TrimSpace(s)
	switch {
	case name == "":
		return Key{}, invalidf("key is empty")
	case len(name) > maxKeyLen:
		return Key{}, invalidf("key %.40q...: longer than %d characters", name, maxKeyLen)
	}
	for _, r := range name {
		if !keyRune(r) {
			return Key{}, invalidf("key %q: character %q not allowed (want letters, digits, '_', '-', '.', '/')", name, r)
		}
	}
	if strings.Contains(name, "..") {
		return Key{}, invalidf("key %q: path traversal or empty component (\"..\")", name)
	}
	p := normalizePath(name)
	if strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return Key{}, invalidf("key %q: leading or trailing separator", name)
	}
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "":
			return Key{}, invalidf("key %q: empty name component", name)
		case ".", "..":
			return Key{}, invalidf("key %q: path traversal (%q component)", name, c)
		}
	}
	if strings.HasPrefix(p, "-") {
		return Key{}, invalidf("key %q: leading '-' is sysctl.d syntax, not part of a name", name)
	}
	return Key{path: p}, nil
}

// MustKey is ParseKey for names known at compile time.
func MustKey(s string) Key {
	k, err := ParseKey(s)
	if err != nil {
		panic(err)
	}
	return k
}

func keyRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '_' || r == '-' || r == '.' || r == '/'
}

// normalizePath turns a name in either notation into its /proc/sys relative
// path, like systemd's sysctl_normalize(): if the first separator is a dot,
// dots and slashes swap; if it is a slash, the name is already a path.
func normalizePath(name string) string {
	i := strings.IndexAny(name, "./")
	if i < 0 || name[i] == '/' {
		return name
	}
	return swapSeparators(name)
}

func swapSeparators(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, s)
}

// NormalizeValue collapses runs of whitespace to one space and trims the
// ends, so "32768\t60999\n" (what the kernel prints for a vector) equals
// "32768 60999" (what a config says).
func NormalizeValue(v string) string { return strings.Join(strings.Fields(v), " ") }
