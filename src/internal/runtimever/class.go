package runtimever

import (
	"fmt"
	"regexp"
	"strconv"
	"sync"
)

// Class is what a flaw lets happen, read from its advisory's impact
// statement. The shipped data's severity follows from the class alone
// (docs/validator.md, "Severity rule"): a Blocking class blocks pre-start
// and warns at drain; any other class warns at pre-start and is info at
// drain.
type Class struct {
	Name     string
	Meaning  string
	Blocking bool
}

// Classes, most severe first. Classify by the first whose meaning the
// advisory's impact statement matches.
var Classes = []Class{
	{"escape", "a container, an image, a container's configuration, an API client or an unprivileged host user can run code on the host, gain host root or another host user's privileges, or read, modify or change the permissions of existing host files", true},
	{"hang", "the runtime stops completing container operations: create, exec, kill or delete hang or act on nothing (the failures cellguard exists to catch)", true},
	{"limited-host-write", "host files or directories can be created, or host writes made, that the advisory states cannot read or alter existing files' content", false},
	{"isolation", "a container gets less confinement than configured: LSM labels, capabilities, user or groups, masked paths, devices, cgroup placement or limits, network isolation", false},
	{"denial-of-service", "host memory, CPU or disk can be exhausted, or a daemon crashed", false},
	{"disclosure", "information can be read that should not be: another container's environment, credentials, hardware side channels, network traffic", false},
	{"integrity", "what is pulled, cached, stored or run can differ from what was requested or verified", false},
	{"malfunction", "a bug with no security impact breaks containers (a device briefly denied, file capabilities not honoured)", false},
}

// LookupClass returns the class called name.
func LookupClass(name string) (Class, bool) {
	for _, c := range Classes {
		if c.Name == name {
			return c, true
		}
	}
	return Class{}, false
}

// ClassNames lists the class names in order.
func ClassNames() []string {
	out := make([]string, len(Classes))
	for i, c := range Classes {
		out[i] = c.Name
	}
	return out
}

var seriesRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\d+)\.(\d+)$`) })

// checkSeries: a range's series is "major.minor", and its fixed version,
// when there is one, belongs to that series.
func (r Range) checkSeries() error {
	if r.Series == "" {
		return nil
	}
	m := seriesRe().FindStringSubmatch(r.Series)
	if m == nil {
		return fmt.Errorf("series %q: want major.minor", r.Series)
	}
	if r.Fixed == "" {
		return nil
	}
	f, err := ParseVersion(r.Fixed)
	if err != nil {
		return fmt.Errorf("fixed: %w", err)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if f.Major != major || f.Minor != minor {
		return fmt.Errorf("fixed %s is not in series %s", r.Fixed, r.Series)
	}
	return nil
}
