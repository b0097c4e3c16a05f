package unitfile

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Sentinel errors callers can test with errors.Is.
var (
	ErrBadName    = errors.New("unit: invalid daemon or unit name")
	ErrBadCommand = errors.New("unit: invalid command")
	ErrBadPath    = errors.New("unit: invalid path")
)

// maxNameLen keeps "cellguard-<name>.service" well under systemd's 255-byte
// unit name limit.
const maxNameLen = 64

// ValidateName checks a daemon name. It becomes part of a unit name, so it is
// held to a subset of systemd's rules: ASCII letters, digits, '_', '.', '-';
// no '@' (templates), '\' (escapes) or ':'.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty", ErrBadName)
	}
	if len(name) > maxNameLen {
		return fmt.Errorf("%w: %q is longer than %d characters", ErrBadName, name, maxNameLen)
	}
	if name[0] == '.' || name[0] == '-' {
		return fmt.Errorf("%w: %q must start with a letter, digit or '_'", ErrBadName, name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return fmt.Errorf("%w: %q contains %q; allowed: letters, digits, '_', '.', '-'", ErrBadName, name, r)
		}
	}
	return nil
}

// ValidateUnitName checks a full unit name ("runit.service") by systemd's
// rules for non-template names: a prefix of [A-Za-z0-9:_.\-] and a known
// suffix, at most 255 bytes.
func ValidateUnitName(name string) error {
	if len(name) == 0 || len(name) > 255 {
		return fmt.Errorf("%w: %q: length must be 1..255", ErrBadName, name)
	}
	dot := strings.LastIndexByte(name, '.')
	if dot <= 0 {
		return fmt.Errorf("%w: %q has no unit type suffix", ErrBadName, name)
	}
	switch name[dot+1:] {
	case "service", "socket", "device", "mount", "automount", "swap", "target", "path", "timer", "slice", "scope":
	default:
		return fmt.Errorf("%w: %q has unknown unit type %q", ErrBadName, name, name[dot+1:])
	}
	for _, r := range name[:dot] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(":_.-\\@", r)) {
			return fmt.Errorf("%w: %q contains %q", ErrBadName, name, r)
		}
	}
	return nil
}

// safeArg reports whether s can stand in an Exec*= line as one word with no
// meaning to systemd's parser: no specifiers (%), variables ($), quoting,
// escapes, comments, line breaks or command prefixes. Arguments of BOSH ctl
// scripts ("start", "--config=/var/vcap/jobs/x/config.yml") fit easily.
func safeArg(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./:=,+@", r)) {
			return false
		}
	}
	return true
}

// SplitCommand splits a command line on spaces and validates it: the first
// word must be a clean absolute path, every word safe (see safeArg). The
// executable's existence is checked by the caller, which knows the root.
func SplitCommand(cmd string) ([]string, error) {
	if strings.ContainsAny(cmd, "\x00\n\r") {
		return nil, fmt.Errorf("%w: %q contains a NUL or line break", ErrBadCommand, cmd)
	}
	// Only ASCII spaces separate words; a tab or an exotic space inside a
	// word is refused by validateWords rather than silently reinterpreted.
	var words []string
	for _, w := range strings.Split(cmd, " ") {
		if w != "" {
			words = append(words, w)
		}
	}
	if err := validateWords(words); err != nil {
		return nil, err
	}
	return words, nil
}

// validateWords checks an already split command word by word, so a word
// holding a space (from a config list) cannot sneak through.
func validateWords(words []string) error {
	if len(words) == 0 {
		return fmt.Errorf("%w: empty", ErrBadCommand)
	}
	if err := ValidatePath(words[0]); err != nil {
		return fmt.Errorf("%w: executable: %w", ErrBadCommand, err)
	}
	for _, w := range words[1:] {
		if !safeArg(w) {
			return fmt.Errorf("%w: argument %q: only letters, digits and _-./:=,+@ are allowed (no %%, $, quotes, backslashes, spaces or ;)", ErrBadCommand, w)
		}
	}
	return nil
}

// Linux's limits (PATH_MAX, NAME_MAX): a longer path cannot name a file,
// so it can only be a mistake or an attack on whatever prints it.
const (
	maxPathLen     = 4095
	maxPathElemLen = 255
)

// ValidatePath checks an absolute, clean path made of safe characters,
// within Linux's length limits. The job templates refuse the same paths at
// render time (jobs/cellguard/templates/config/cellguard.json.erb,
// cg_path); spec/jobs' hostile-property test proves they agree.
func ValidatePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty", ErrBadPath)
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%w: %q is not absolute", ErrBadPath, p)
	case len(p) > maxPathLen:
		return fmt.Errorf("%w: %.40q... is longer than %d bytes", ErrBadPath, p, maxPathLen)
	case path.Clean(p) != p:
		return fmt.Errorf("%w: %q is not clean (want %q)", ErrBadPath, p, path.Clean(p))
	case !safeArg(p):
		return fmt.Errorf("%w: %q: only letters, digits and _-./:=,+@ are allowed", ErrBadPath, p)
	}
	for _, elem := range strings.Split(p[1:], "/") {
		if len(elem) > maxPathElemLen {
			return fmt.Errorf("%w: %.40q...: a name is longer than %d bytes", ErrBadPath, elem, maxPathElemLen)
		}
	}
	return nil
}
