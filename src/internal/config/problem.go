package config

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with one key of the config file.
type Problem struct {
	// Key is the key as the rendered file spells it: "drain.budget",
	// "daemons[0].stop_timeout", "validator.runtime_binaries.runc".
	Key string
	// Value is the value as written, quoted; empty when the message
	// carries it or the problem spans keys.
	Value string
	// Want says what is wrong and what would be accepted.
	Want string
}

// String reads "drain.budget "0s": must be from 1s to 1h; ... (job property
// cellguard.drain.budget)": the key of the file, then the property an
// operator sets, which differs from "cellguard."+key for a few keys.
func (p Problem) String() string {
	s := p.Key
	if s == "" {
		s = "the file"
	}
	if p.Value != "" {
		s += " " + p.Value
	}
	s += ": " + p.Want
	if prop := Property(p.Key); prop != "" {
		s += " (job property " + prop + ")"
	}
	return s
}

// Error is every problem found in one config file.
type Error struct {
	File     string // empty for a config built in code
	Problems []Problem
}

// Lines are the problems, one a line, each prefixed with the file.
func (e *Error) Lines() []string {
	prefix := "config: "
	if e.File != "" {
		prefix = "config " + e.File + ": "
	}
	out := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = prefix + p.String()
	}
	return out
}

func (e *Error) Error() string { return strings.Join(e.Lines(), "\n") }

// Property is the job property (jobs/cellguard/spec) that the
// config template renders into key, or "" for a key no property sets
// (log.file, sysctl.file). Most keys are the property without
// "cellguard."; the exceptions are the template's renames, which
// spec/jobs' configKey and renderedElsewhere list.
func Property(key string) string {
	switch {
	case key == "" || key == "log.file" || key == "sysctl.file":
		return ""
	case key == "validator.daemons" || strings.HasPrefix(key, "validator.daemons["):
		return "cellguard.daemons (their names)"
	case strings.HasPrefix(key, "validator.blocking.pre-start"):
		return "cellguard.validator.blocking.pre_start" + strings.TrimPrefix(key, "validator.blocking.pre-start")
	case key == "watch.textfile":
		return "cellguard.watch.textfile_dir"
	case key == "watch.tls":
		return "cellguard.watch.metrics.cert, .key and .ca_cert"
	case key == "watch.tls.ca":
		return "cellguard.watch.metrics.ca_cert"
	case strings.HasPrefix(key, "watch.tls."):
		return "cellguard.watch.metrics." + strings.TrimPrefix(key, "watch.tls.")
	}
	return "cellguard." + key
}

// problems collects what the judges find.
type problems []Problem

func (ps *problems) add(key, value, want string, args ...any) {
	*ps = append(*ps, Problem{Key: key, Value: value, Want: fmt.Sprintf(want, args...)})
}

// addErr adds a problem whose error already quotes the value.
func (ps *problems) addErr(key string, err error) {
	*ps = append(*ps, Problem{Key: key, Want: err.Error()})
}

// quote is a value for a message: quoted, and cut at 80 bytes, since a
// path may be 4 KiB.
func quote(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%q...", s[:80])
	}
	return fmt.Sprintf("%q", s)
}
