package runcstate

// This file is a general JSON scanner, knowing nothing of runc: it skips
// values while validating them, and reads the common shapes of a wanted
// value (plain strings, numbers, booleans, maps of plain strings) without
// encoding/json, handing anything else to it. fastdecode.go drives it over
// the members of runc's state.json.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// scanner walks b from i. members and decode (called a few dozen times per
// file) are methods; the per-byte work is in the functions after them,
// which take and return the cursor so it stays in a register: as a field
// behind a pointer every advance was a store.
type scanner struct {
	b []byte
	i int
	k *Known // nil: validate every value
}

func fold(key []byte, name string) bool { return bytes.EqualFold(key, []byte(name)) }

// The readers below build a value the way encoding/json would for the
// shapes runc writes, and hand anything else (escapes, invalid UTF-8, a
// value of another type, a repeated member that encoding/json would merge
// into) to encoding/json from the value's start: they change their target
// only once they know the answer. One json.Unmarshal of a small value costs
// about what skipping 2 KB does.

// string reads a string into *p; null leaves it alone.
func (sc *scanner) string(p *string) bool {
	start := sc.i
	if sc.plainString(p) {
		return true
	}
	sc.i = start
	return sc.decode(p)
}

// plainString reads null (leaving *p alone) or a string without escapes
// whose bytes are valid UTF-8, which encoding/json takes as they are (it
// replaces invalid bytes with U+FFFD). Otherwise it returns false, and *p
// is as it was.
func (sc *scanner) plainString(p *string) bool {
	if sc.literal("null") {
		return true
	}
	content, ok := sc.plainContent()
	if ok {
		*p = string(content)
	}
	return ok
}

// plainContent reads a string without escapes whose bytes are valid UTF-8
// and returns its content.
func (sc *scanner) plainContent() ([]byte, bool) {
	content, escaped, ok := sc.str()
	return content, ok && !escaped && utf8.Valid(content)
}

// bool reads true or false into *p; null leaves it alone.
func (sc *scanner) bool(p *bool) bool {
	switch {
	case sc.literal("true"):
		*p = true
	case sc.literal("false"):
		*p = false
	case sc.literal("null"):
	default:
		return sc.decode(p)
	}
	return true
}

// int reads an integer into *p; null leaves it alone. encoding/json parses
// it with strconv.ParseInt(s, 10, 64) and refuses what overflows int.
func (sc *scanner) int(p *int) bool {
	if sc.literal("null") {
		return true
	}
	start := sc.i
	end := number(sc.b, start)
	if end < 0 {
		return false
	}
	n, err := strconv.ParseInt(string(sc.b[start:end]), 10, strconv.IntSize)
	if err != nil { // a fraction, an exponent, out of range: encoding/json's call
		return sc.decode(p)
	}
	*p = int(n)
	sc.i = end
	return true
}

// integer reads a plain integer into p (*int64, *uint64, *uint16 or
// **int64); null, a fraction, an exponent or a value out of range are
// encoding/json's call.
func (sc *scanner) integer(p any) bool {
	end := number(sc.b, sc.i)
	if end < 0 {
		return sc.decode(p)
	}
	txt := string(sc.b[sc.i:end])
	signed, serr := strconv.ParseInt(txt, 10, 64)
	switch v := p.(type) {
	case *int64:
		if serr != nil {
			return sc.decode(p)
		}
		*v = signed
	case **int64:
		if serr != nil {
			return sc.decode(p)
		}
		if *v == nil {
			*v = new(int64)
		}
		**v = signed
	case *uint64:
		n, err := strconv.ParseUint(txt, 10, 64)
		if err != nil {
			return sc.decode(p)
		}
		*v = n
	case *uint16:
		n, err := strconv.ParseUint(txt, 10, 16)
		if err != nil {
			return sc.decode(p)
		}
		*v = uint16(n)
	default:
		return sc.decode(p)
	}
	sc.i = end
	return true
}

// unmarshaler hands the value to u.UnmarshalJSON, as encoding/json does
// with the value's bytes for any type that has the method (null included),
// without its reflection and second validation.
func (sc *scanner) unmarshaler(u json.Unmarshaler) bool {
	start := sc.i
	if !sc.skip() {
		return false
	}
	return u.UnmarshalJSON(sc.b[start:sc.i]) == nil
}

// stringMap reads an object of plain strings into *p. encoding/json sets
// the map to nil on null, makes one if it is nil, and adds the members in
// order (the last of a repeated key wins); into a map that exists (a
// repeated cgroup_paths) it merges, which is left to it.
func (sc *scanner) stringMap(p *map[string]string) bool {
	start := sc.i
	if sc.literal("null") {
		*p = nil
		return true
	}
	if *p == nil {
		if m, ok := sc.plainStringMap(); ok {
			*p = m
			return true
		}
	}
	sc.i = start
	return sc.decode(p)
}

// maxPairs bounds the members plainStringMap reads: cgroup v1 has about a
// dozen hierarchies, v2 one.
const maxPairs = 32

// plainStringMap reads an object whose keys are plain strings and whose
// values are plain strings or null (which encoding/json stores as "").
// It first finds the members, then makes the map at its size, its strings
// all parts of one copy of the object: two allocations, not two per member
// plus the map's growth, which were most of Decode's time in the maps.
func (sc *scanner) plainStringMap() (map[string]string, bool) {
	start := sc.i
	var pairs [maxPairs]struct{ k0, k1, v0, v1 int } // offsets from start
	n := 0
	if !sc.eat('{') {
		return nil, false
	}
	sc.ws()
	for !sc.eat('}') {
		if n == len(pairs) {
			return nil, false
		}
		if n > 0 && !sc.eat(',') {
			return nil, false
		}
		p := &pairs[n]
		n++
		sc.ws()
		p.k0 = sc.i + 1 - start
		k, escaped, ok := sc.str()
		if !ok || escaped {
			return nil, false
		}
		p.k1 = p.k0 + len(k)
		sc.ws()
		if !sc.eat(':') {
			return nil, false
		}
		sc.ws()
		if !sc.literal("null") {
			p.v0 = sc.i + 1 - start
			v, escaped, ok := sc.str()
			if !ok || escaped {
				return nil, false
			}
			p.v1 = p.v0 + len(v)
		}
		sc.ws()
	}
	// Valid UTF-8 throughout means every key and value is, as
	// encoding/json takes them without replacing bytes.
	raw := sc.b[start:sc.i]
	if !utf8.Valid(raw) {
		return nil, false
	}
	all := string(raw)
	m := make(map[string]string, n)
	for _, p := range pairs[:n] {
		m[all[p.k0:p.k1]] = all[p.v0:p.v1]
	}
	return m, true
}

func (s *scanner) ws() { s.i = ws(s.b, s.i) }

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if hasLiteral(s.b, s.i, lit) {
		s.i += len(lit)
		return true
	}
	return false
}

// skip consumes one valid JSON value.
func (s *scanner) skip() bool {
	i := skip(s.b, s.i)
	if i < 0 {
		return false
	}
	s.i = i
	return true
}

// str consumes a string and returns its raw content.
func (s *scanner) str() (content []byte, escaped, ok bool) {
	if !s.eat('"') {
		return nil, false, false
	}
	start := s.i
	end, escaped := str(s.b, start)
	if end < 0 {
		return nil, false, false
	}
	s.i = end
	return s.b[start : end-1], escaped, true
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
// Its nesting is bounded by decodeFast's code (three levels), the skipped
// values' by skip.
func (s *scanner) members(fn func(key []byte) bool) bool {
	if !s.eat('{') {
		return false
	}
	s.ws()
	if s.eat('}') {
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
		return s.eat('}')
	}
}

// maxSkipDepth bounds the containers skip keeps open, one bit each; deeper
// input goes to encoding/json, which has its own limit and error. runc's
// state nests about five deep.
const maxSkipDepth = 64

// skip returns the end of the valid JSON value at i, or -1. It loops rather
// than recurses, with the open containers as bits: the seccomp list is
// thousands of small values and this is where decodeFast spends its time.
// It is long because its three states (at a value, after a value, at a
// member name) are one loop sharing i, depth and open, with a goto between
// them; as functions they would hand those back and forth on that path.
func skip(b []byte, i int) int {
	// open has a bit per open container, the innermost lowest: 1 for an
	// object, 0 for an array.
	var open uint64
	depth := 0
	for {
		// At a value.
		i = ws(b, i)
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; c {
		case '{', '[':
			i = ws(b, i+1)
			if i < len(b) && b[i] == c+2 { // '{'+2 is '}', '['+2 is ']'
				i++
				break
			}
			if depth == maxSkipDepth {
				return -1
			}
			depth++
			open <<= 1
			if c == '[' {
				continue
			}
			open |= 1
			goto key
		case '"':
			if i, _ = str(b, i+1); i < 0 {
				return -1
			}
		case 't':
			if !hasLiteral(b, i, "true") {
				return -1
			}
			i += len("true")
		case 'f':
			if !hasLiteral(b, i, "false") {
				return -1
			}
			i += len("false")
		case 'n':
			if !hasLiteral(b, i, "null") {
				return -1
			}
			i += len("null")
		default:
			if i = number(b, i); i < 0 {
				return -1
			}
		}
		// A value ended: close containers until one takes another value.
		for {
			if depth == 0 {
				return i
			}
			i = ws(b, i)
			if i >= len(b) {
				return -1
			}
			if b[i] == ',' {
				i++
				break
			}
			end := byte(']')
			if open&1 != 0 {
				end = '}'
			}
			if b[i] != end {
				return -1
			}
			i++
			depth--
			open >>= 1
		}
		if open&1 == 0 {
			continue // at an array's next element
		}
	key: // A member name (escapes allowed: it is not matched) and its colon.
		i = ws(b, i)
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		if i, _ = str(b, i+1); i < 0 {
			return -1
		}
		i = ws(b, i)
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		i++
	}
}

// ws returns the index of the first non-whitespace byte at or after i.
// runc writes compact JSON, so the first test nearly always ends it.
func ws(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func hasLiteral(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// plain marks the bytes a string holds as they are: not '"', '\\' or a
// control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// special has the high bit set in the bytes of w that are '"', '\\' or
// below 0x20 (the bytes plain excludes). Bits above the lowest may be
// false positives (a borrow runs on), the lowest is not.
func special(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := w ^ (ones * '"')
	bs := w ^ (ones * '\\')
	return ((q-ones)&^q | (bs-ones)&^bs | (w-ones*0x20)&^w) & highs
}

// str scans a string's content from i, just past the opening quote, and
// returns the index past the closing quote (or -1 if the string is not
// valid JSON) and whether it holds escapes. Eight bytes at a time, and the
// byte that stopped the scan is taken from the word already loaded: most
// strings here are names of 4 to 15 bytes without escapes, and reloading
// it was a quarter of str.
func str(b []byte, i int) (end int, escaped bool) {
	for i+8 <= len(b) {
		w := binary.LittleEndian.Uint64(b[i:])
		m := special(w)
		if m == 0 {
			i += 8
			continue
		}
		n := bits.TrailingZeros64(m)
		if byte(w>>(n&^7)) == '"' {
			return i + n>>3 + 1, false
		}
		return strEscaped(b, i+n>>3)
	}
	return strEscaped(b, i)
}

// strEscaped is str from i on, past the first escape or near the end of b.
func strEscaped(b []byte, i int) (end int, escaped bool) {
	for {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			return -1, false
		}
		switch b[i] {
		case '"':
			return i + 1, escaped
		case '\\':
			escaped = true
			if i+1 >= len(b) {
				return -1, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return -1, false
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return -1, false
					}
				}
				i += 6
			default:
				return -1, false
			}
		default: // a control character
			return -1, false
		}
	}
}

// number returns the end of -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
// at i, or -1.
func number(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
