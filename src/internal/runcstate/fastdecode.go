package runcstate

import (
	"bytes"
	"encoding/json"
)

// decodeFast fills s from a state.json that is one JSON object, reading
// only the members State has. A Garden container's state is ~26 KB, mostly
// config the validator never reads (the seccomp allowlist alone is ~20 KB),
// and encoding/json scans every byte twice through its per-byte state
// machine (validate, then decode with skip): on a cell of 250 containers
// that was half of the whole scan. Here the unread values are skipped by a
// validating scanner and only the wanted ones go to encoding/json.
//
// It returns false whenever it is unsure (invalid JSON, escaped keys, deep
// nesting, a wanted value that does not decode) and leaves s partly filled:
// Decode then starts over with encoding/json, which defines the result and
// the error. On input encoding/json accepts it yields the same State
// (FuzzDecodeFast checks this).
func decodeFast(b []byte, s *State) bool {
	sc := scanner{b: b}
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
					return sc.decode(&s.Config.Namespaces)
				}
				return sc.skip()
			})
		case fold(key, "id"):
			return sc.decode(&s.ID)
		case fold(key, "init_process_pid"):
			return sc.decode(&s.InitProcessPid)
		case fold(key, "init_process_start"):
			return sc.decode(&s.InitProcessStart)
		case fold(key, "created"):
			return sc.decode(&s.Created)
		case fold(key, "rootless"):
			return sc.decode(&s.Rootless)
		case fold(key, "cgroup_paths"):
			return sc.decode(&s.CgroupPaths)
		case fold(key, "namespace_paths"):
			return sc.decode(&s.NamespacePaths)
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
			return sc.decode(&c.Path)
		case fold(key, "name"):
			return sc.decode(&c.Name)
		case fold(key, "parent"):
			return sc.decode(&c.Parent)
		case fold(key, "scope_prefix"):
			return sc.decode(&c.ScopePrefix)
		case fold(key, "Systemd"):
			return sc.decode(&c.Systemd)
		}
		return sc.skip()
	})
}

func fold(key []byte, name string) bool { return bytes.EqualFold(key, []byte(name)) }

// maxDepth bounds nesting; deeper input goes to encoding/json, which has
// its own limit and error.
const maxDepth = 1000

type scanner struct {
	b     []byte
	i     int
	depth int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// decode hands the value at the cursor to encoding/json.
func (s *scanner) decode(v any) bool {
	start := s.i
	if !s.skip() {
		return false
	}
	return json.Unmarshal(s.b[start:s.i], v) == nil
}

// members walks the object at the cursor; fn is called with the cursor on
// each member's value and must consume it. Keys with escapes are refused.
func (s *scanner) members(fn func(key []byte) bool) bool {
	if !s.eat('{') {
		return false
	}
	s.depth++
	if s.depth > maxDepth {
		return false
	}
	s.ws()
	if s.eat('}') {
		s.depth--
		return true
	}
	for {
		s.ws()
		key, escaped, ok := s.str()
		if !ok || escaped {
			return false
		}
		s.ws()
		if !s.eat(':') {
			return false
		}
		s.ws()
		if !fn(key) {
			return false
		}
		s.ws()
		if s.eat(',') {
			continue
		}
		if !s.eat('}') {
			return false
		}
		s.depth--
		return true
	}
}

// skip consumes one valid JSON value. It loops rather than recurses, with
// the open containers on a stack: the seccomp list is thousands of small
// values and this is where decodeFast spends its time.
func (s *scanner) skip() bool {
	var stack [maxDepth]byte // '{' or '[' per open container
	n := 0
value:
	for {
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		switch c := s.b[s.i]; {
		case c == '{' || c == '[':
			s.i++
			s.ws()
			if s.eat(c + 2) { // '{'+2 is '}', '['+2 is ']'
				break
			}
			if n == len(stack) {
				return false
			}
			stack[n] = c
			n++
			if c == '{' && !s.key() {
				return false
			}
			continue value
		case c == '"':
			if _, _, ok := s.str(); !ok {
				return false
			}
		case c == 't':
			if !s.literal("true") {
				return false
			}
		case c == 'f':
			if !s.literal("false") {
				return false
			}
		case c == 'n':
			if !s.literal("null") {
				return false
			}
		case c == '-' || c >= '0' && c <= '9':
			if !s.number() {
				return false
			}
		default:
			return false
		}
		// A value ended: close containers until one takes another value.
		for n > 0 {
			s.ws()
			if s.eat(',') {
				if stack[n-1] == '{' && !s.key() {
					return false
				}
				continue value
			}
			if !s.eat(stack[n-1] + 2) {
				return false
			}
			n--
		}
		return true
	}
}

// key consumes a member name (escapes allowed: it is not matched) and the
// colon after it.
func (s *scanner) key() bool {
	s.ws()
	if _, _, ok := s.str(); !ok {
		return false
	}
	s.ws()
	return s.eat(':')
}

// plain marks the bytes a string holds as they are: not '"', '\\' or a
// control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str consumes a string and returns its raw content.
func (s *scanner) str() (content []byte, escaped, ok bool) {
	if !s.eat('"') {
		return nil, false, false
	}
	start := s.i
	for {
		for s.i < len(s.b) && plain[s.b[s.i]] {
			s.i++
		}
		if s.i >= len(s.b) {
			return nil, false, false
		}
		switch s.b[s.i] {
		case '"':
			s.i++
			return s.b[start : s.i-1], escaped, true
		case '\\':
			escaped = true
			if s.i+1 >= len(s.b) {
				return nil, false, false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return nil, false, false
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return nil, false, false
					}
				}
				s.i += 6
			default:
				return nil, false, false
			}
		default: // a control character
			return nil, false, false
		}
	}
}

// number consumes -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	s.eat('-')
	switch {
	case s.eat('0'):
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.eat('.') && !s.digits() {
		return false
	}
	if s.eat('e') || s.eat('E') {
		if !s.eat('+') {
			s.eat('-')
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}
