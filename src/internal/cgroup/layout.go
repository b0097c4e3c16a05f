package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
)

// Hierarchy is one mounted cgroup hierarchy.
type Hierarchy struct {
	// Name is how reports call it: "cpu,cpuacct", "name=systemd", "unified".
	Name string
	// Controllers are its v1 controllers ("cpu", "cpuacct"), or
	// "name=systemd" for a named hierarchy; nil for v2.
	Controllers []string
	// Dir is the mount point relative to the root: /sys/fs/cgroup/cpu,cpuacct.
	Dir string
	// Unified is true for the v2 hierarchy.
	Unified bool
	// Aliases are other directories naming the same mount: the symlinks
	// cpu and cpuacct -> cpu,cpuacct that systemd makes beside a
	// co-mounted hierarchy. A state file may record a path through one.
	Aliases []string
}

// Key is the key runc uses for this hierarchy in state.json cgroup_paths
// and what Membership.Lookup takes: the first controller, the
// "name=..." of a named hierarchy, or "" for v2.
func (h *Hierarchy) Key() string {
	if h.Unified || len(h.Controllers) == 0 {
		return ""
	}
	return h.Controllers[0]
}

// Layout is the set of hierarchies of a host (or fixture tree).
type Layout struct {
	Root        string
	Mode        Mode
	Hierarchies []*Hierarchy
}

// Discover reads the layout under root.
func Discover(root string) (*Layout, error) {
	root = hostroot.Dir(root)
	mode, err := DetectMode(root)
	if err != nil {
		return nil, err
	}
	l := &Layout{Root: root, Mode: mode}
	if mode == Unified {
		l.Hierarchies = []*Hierarchy{{Name: "unified", Dir: MountDir, Unified: true}}
		return l, nil
	}
	base := filepath.Join(root, MountDir)
	ents, err := os.ReadDir(base)
	if err != nil {
		return nil, fmt.Errorf("list cgroup hierarchies in %s: %w", base, err)
	}
	var links []os.DirEntry
	for _, e := range ents {
		// Symlinks such as cpu -> cpu,cpuacct name a hierarchy twice.
		if e.Type()&os.ModeSymlink != 0 {
			links = append(links, e)
			continue
		}
		if !e.IsDir() {
			continue
		}
		h := &Hierarchy{Name: e.Name(), Dir: MountDir + "/" + e.Name()}
		switch e.Name() {
		case "unified":
			if mode != Hybrid {
				continue
			}
			h.Unified = true
		case "systemd":
			h.Name = "name=systemd"
			h.Controllers = []string{"name=systemd"}
		default:
			h.Controllers = strings.Split(e.Name(), ",")
		}
		l.Hierarchies = append(l.Hierarchies, h)
	}
	sort.Slice(l.Hierarchies, func(i, j int) bool { return l.Hierarchies[i].Name < l.Hierarchies[j].Name })
	for _, e := range links {
		target, err := os.Readlink(filepath.Join(base, e.Name()))
		if err != nil || strings.Contains(target, "/") {
			continue // only a sibling's name is an alias (cpu -> cpu,cpuacct)
		}
		for _, h := range l.Hierarchies {
			if h.Dir == MountDir+"/"+target {
				h.Aliases = append(h.Aliases, MountDir+"/"+e.Name())
			}
		}
	}
	return l, nil
}

// ForKey returns the hierarchy holding a controller ("cpuacct"), a named
// hierarchy ("name=systemd") or, for "", the v2 hierarchy.
func (l *Layout) ForKey(key string) *Hierarchy {
	for _, h := range l.Hierarchies {
		if key == "" {
			if h.Unified {
				return h
			}
			continue
		}
		for _, c := range h.Controllers {
			if c == key {
				return h
			}
		}
	}
	return nil
}

// Split maps an absolute cgroup directory as runc records it in state.json
// (/sys/fs/cgroup/cpu,cpuacct/garden/c1) to its hierarchy and the cgroup
// path inside it (/garden/c1), the form /proc/<pid>/cgroup uses.
func (l *Layout) Split(abs string) (*Hierarchy, string, bool) {
	abs = filepath.Clean(abs)
	var best *Hierarchy
	bestDir := ""
	for _, h := range l.Hierarchies {
		for i := -1; i < len(h.Aliases); i++ {
			dir := h.Dir
			if i >= 0 {
				dir = h.Aliases[i]
			}
			if len(dir) > len(bestDir) && inDir(abs, dir) {
				best, bestDir = h, dir
			}
		}
	}
	if best == nil {
		return nil, "", false
	}
	rel := strings.TrimPrefix(abs, bestDir)
	if rel == "" {
		rel = "/"
	}
	return best, rel, true
}

// inDir reports whether path abs is dir or below it, without building
// dir+"/" (Split runs for every cgroup path of every container).
func inDir(abs, dir string) bool {
	return strings.HasPrefix(abs, dir) && (len(abs) == len(dir) || abs[len(dir)] == '/')
}

// Path is the directory of cgroup rel (/garden/c1) in hierarchy h, under
// the root.
func (l *Layout) Path(h *Hierarchy, rel string) string {
	return filepath.Join(l.Root, h.Dir, rel)
}

// Under reports whether cgroup path p is dir itself or inside it.
func Under(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || (len(p) > len(dir) && p[len(dir)] == '/' && p[:len(dir)] == dir)
}
