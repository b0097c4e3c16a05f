package runcstate

import "bytes"

// decodeFast fills s from a state.json that is one JSON object, reading
// only the members State has. A Garden container's state is ~26 KB, mostly
// config the validator never reads (the seccomp allowlist alone is ~20 KB),
// and encoding/json scans every byte twice through its per-byte state
// machine (validate, then decode with skip): on a cell of 250 containers
// that was half of the whole scan. Here the unread values are skipped by a
// validating scanner, and the wanted ones are built directly in their
// common shapes (plain strings, numbers, maps and lists of plain strings);
// anything else goes to encoding/json value by value.
//
// It returns false whenever it is unsure (invalid JSON, escaped keys, deep
// nesting, a wanted value that does not decode) and leaves s partly filled:
// Decode then starts over with encoding/json, which defines the result and
// the error. On input encoding/json accepts it yields the same State
// (FuzzDecodeFast checks this).
//
// With k, large config values are matched against those k remembers from
// earlier files of the same scan (see Known).
func decodeFast(b []byte, s *State, k *Known) bool {
	sc := scanner{b: b, k: k}
	sc.ws()
	ok := sc.members(func(key []byte) bool {
		switch {
		// encoding/json matches member names case-insensitively,
		// exactly as bytes.EqualFold; so must we.
		case fold(key, "config"):
			if sc.literal("null") {
				return true
			}
			return sc.members(func(key []byte) bool {
				switch {
				case fold(key, "cgroups"):
					return sc.cgroups(&s.Config.Cgroups)
				case fold(key, "namespaces"):
					return sc.namespaces(&s.Config.Namespaces)
				}
				return sc.skipKnown(key)
			})
		case fold(key, "id"):
			return sc.string(&s.ID)
		case fold(key, "init_process_pid"):
			return sc.int(&s.InitProcessPid)
		case fold(key, "init_process_start"):
			return sc.unmarshaler(&s.InitProcessStart)
		case fold(key, "created"):
			return sc.unmarshaler(&s.Created)
		case fold(key, "rootless"):
			return sc.bool(&s.Rootless)
		case fold(key, "cgroup_paths"):
			return sc.stringMap(&s.CgroupPaths)
		case fold(key, "namespace_paths"):
			return sc.stringMap(&s.NamespacePaths)
		}
		return sc.skip()
	})
	sc.ws()
	return ok && sc.i == len(b)
}

// cgroups reads the naming members of config.cgroups and skips its
// resources (the device rules alone are a few KB). encoding/json sets a
// pointer to nil on null and otherwise decodes into what it points to.
func (sc *scanner) cgroups(p **Cgroups) bool {
	if sc.literal("null") {
		*p = nil
		return true
	}
	if sc.i >= len(sc.b) || sc.b[sc.i] != '{' {
		return false
	}
	if *p == nil {
		*p = new(Cgroups)
	}
	c := *p
	return sc.members(func(key []byte) bool {
		switch {
		case fold(key, "path"):
			return sc.string(&c.Path)
		case fold(key, "name"):
			return sc.string(&c.Name)
		case fold(key, "parent"):
			return sc.string(&c.Parent)
		case fold(key, "scope_prefix"):
			return sc.string(&c.ScopePrefix)
		case fold(key, "Systemd"):
			return sc.bool(&c.Systemd)
		case fold(key, "devices"):
			// Kept raw, as encoding/json keeps a RawMessage: every
			// container of a cell has the same rules, which Known
			// matches rather than validates again.
			start := sc.i
			if !sc.skipKnown(key) {
				return false
			}
			c.Devices = bytes.Clone(sc.b[start:sc.i])
			return true
		}
		if v := c.Resources.field(key); v != nil {
			return sc.integer(v)
		}
		return sc.skip()
	})
}

// field is the member of r named key (as encoding/json matches it), or nil.
func (r *Resources) field(key []byte) any {
	switch {
	case fold(key, "memory"):
		return &r.Memory
	case fold(key, "memory_swap"):
		return &r.MemorySwap
	case fold(key, "pids_limit"):
		return &r.PidsLimit
	case fold(key, "cpu_shares"):
		return &r.CpuShares
	case fold(key, "cpu_weight"):
		return &r.CpuWeight
	case fold(key, "cpu_quota"):
		return &r.CpuQuota
	case fold(key, "cpu_period"):
		return &r.CpuPeriod
	case fold(key, "blkio_weight"):
		return &r.BlkioWeight
	}
	return nil
}

// namespaces reads a list of {"type":...,"path":...} objects into *p.
// encoding/json sets the slice to nil on null and makes [] an empty slice,
// not nil; into a slice that exists (a repeated member) it decodes element
// by element, merging, which is left to it.
func (sc *scanner) namespaces(p *[]Namespace) bool {
	start := sc.i
	if sc.literal("null") {
		*p = nil
		return true
	}
	if *p == nil && sc.eat('[') {
		if ns, ok := sc.namespaceList(); ok {
			*p = ns
			return true
		}
	}
	sc.i = start
	return sc.decode(p)
}

// namespaceList reads the elements after '[' and the closing ']'.
func (sc *scanner) namespaceList() ([]Namespace, bool) {
	ns := make([]Namespace, 0, 8) // libcontainer has eight kinds
	sc.ws()
	if sc.eat(']') {
		return ns, true
	}
	for {
		sc.ws()
		var n Namespace
		ok := sc.members(func(key []byte) bool {
			switch {
			case fold(key, "type"):
				if sc.literal("null") {
					return true
				}
				t, ok := sc.plainContent()
				if ok {
					n.Type = internType(t)
				}
				return ok
			case fold(key, "path"):
				return sc.plainString(&n.Path)
			}
			return sc.skip()
		})
		if !ok {
			return nil, false
		}
		ns = append(ns, n)
		sc.ws()
		if sc.eat(',') {
			continue
		}
		return ns, sc.eat(']')
	}
}

// internType returns the constant for a namespace type runc writes,
// sparing an allocation per namespace per container.
func internType(t []byte) string {
	switch string(t) {
	case "NEWNS":
		return "NEWNS"
	case "NEWUTS":
		return "NEWUTS"
	case "NEWIPC":
		return "NEWIPC"
	case "NEWPID":
		return "NEWPID"
	case "NEWNET":
		return "NEWNET"
	case "NEWUSER":
		return "NEWUSER"
	case "NEWCGROUP":
		return "NEWCGROUP"
	case "NEWTIME":
		return "NEWTIME"
	}
	return string(t)
}
