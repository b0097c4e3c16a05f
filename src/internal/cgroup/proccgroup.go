package cgroup

import (
	"bytes"
	"fmt"
)

// Entry is one line of /proc/<pid>/cgroup: "4:cpu,cpuacct:/garden/c1" or
// "0::/garden/c1". Its slices point into the parsed buffer.
type Entry struct {
	ID          []byte
	Controllers []byte // comma list; "name=systemd"; empty for v2
	Path        []byte
}

// newline separates the lines of cgroup files.
var newline = []byte{'\n'}

// maxEntries bounds the lines of one /proc/<pid>/cgroup; Linux has fewer
// than 16 v1 controllers plus named hierarchies and v2.
const maxEntries = 32

// Membership is a parsed /proc/<pid>/cgroup. Parse into one value reused
// across processes: it holds no allocations of its own.
type Membership struct {
	entries [maxEntries]Entry
	n       int
}

// Entries returns the parsed lines.
func (m *Membership) Entries() []Entry { return m.entries[:m.n] }

// ParseProcCgroup parses the content of /proc/<pid>/cgroup into m. The
// entries point into b, so b must outlive the lookups.
func ParseProcCgroup(b []byte, m *Membership) error {
	m.n = 0
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, newline)
		if len(line) == 0 {
			continue
		}
		c1 := bytes.IndexByte(line, ':')
		if c1 < 0 {
			return fmt.Errorf("invalid cgroup entry %q", line)
		}
		c2 := bytes.IndexByte(line[c1+1:], ':')
		if c2 < 0 {
			return fmt.Errorf("invalid cgroup entry %q", line)
		}
		c2 += c1 + 1
		if m.n == maxEntries {
			return fmt.Errorf("more than %d cgroup entries", maxEntries)
		}
		m.entries[m.n] = Entry{ID: line[:c1], Controllers: line[c1+1 : c2], Path: line[c2+1:]}
		m.n++
	}
	return nil
}

// Lookup returns the cgroup path of the hierarchy holding key: a controller
// ("cpu" also finds "cpu,cpuacct"), a named hierarchy ("name=systemd"), or
// "" for v2's "0::" line.
func (m *Membership) Lookup(key string) ([]byte, bool) {
	for i := 0; i < m.n; i++ {
		e := &m.entries[i]
		if key == "" {
			if len(e.Controllers) == 0 {
				return e.Path, true
			}
			continue
		}
		if hasController(e.Controllers, key) {
			return e.Path, true
		}
	}
	return nil, false
}

func hasController(list []byte, key string) bool {
	for len(list) > 0 {
		var c []byte
		if i := bytes.IndexByte(list, ','); i >= 0 {
			c, list = list[:i], list[i+1:]
		} else {
			c, list = list, nil
		}
		if string(c) == key { // compiled without allocating
			return true
		}
	}
	return false
}
