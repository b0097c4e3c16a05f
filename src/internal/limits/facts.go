package limits

// Facts are one read of a host: every running container's processes, what
// their runtime recorded and what is in force where they are.
type Facts struct {
	// Unified is true on a cgroup v2 host, where one path holds every
	// controller and a controller can be switched off above a cgroup.
	Unified bool
	// Containers counts the running containers read (those with
	// recorded limits or not).
	Containers int
	Processes  []Process
	// Problems are state files or containers that could not be read at
	// all; a process that could not be read is a Process with Err.
	Problems []string
}

// Process is one container process and the limits around it.
type Process struct {
	PID       int
	Container string // the runtime's name for it: id, or namespace/id
	StatePath string
	// Expected is the runtime's cgroup: the path state.json records
	// (cgroup_paths), in the hierarchy's own terms ("/garden/c1").
	Expected string
	// Recorded is what the runtime recorded; Wants are its limits as
	// files (Expected(Unified, Recorded)).
	Recorded Resources
	Wants    []Want
	// Paths are the process's actual cgroups, one per hierarchy a Want
	// names ("" on v2): read from /proc/<pid>/cgroup.
	Paths []Path
	// Err says why the process's cgroups could not be read; the rest is
	// then incomplete and judges nothing.
	Err string
}

// Path is a process's cgroup in one hierarchy, with every cgroup from the
// first below the root down to it.
type Path struct {
	Key    string // "" for v2, else the v1 controller (memory, cpu, ...)
	Cgroup string // "/system.slice/c8"
	Levels []Level
}

// Level is one cgroup on a Path.
type Level struct {
	Cgroup string
	// Files holds the Want files read here, raw; a file that does not
	// exist is not a key (on v2: its controller is not enabled here).
	Files map[string]string
	// ParentEnables are the controllers in the parent's
	// cgroup.subtree_control (v2 only; nil on v1), which is what makes
	// a controller's files exist here.
	ParentEnables []string
}

// Leaf is the process's own cgroup, the last level.
func (p *Path) Leaf() *Level {
	if len(p.Levels) == 0 {
		return nil
	}
	return &p.Levels[len(p.Levels)-1]
}

// PathFor is the process's Path in the hierarchy holding a Want's
// controller.
func (p *Process) PathFor(w Want, unified bool) *Path {
	key := w.Controller
	if unified {
		key = ""
	}
	for i := range p.Paths {
		if p.Paths[i].Key == key {
			return &p.Paths[i]
		}
	}
	return nil
}
