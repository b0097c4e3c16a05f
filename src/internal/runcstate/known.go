package runcstate

import (
	"bytes"
	"sync/atomic"
)

// Known holds large config values that one Discover has already validated,
// by member name: every Garden container on a cell carries the same seccomp
// profile (~19 KB of its ~26 KB state), capabilities and device rules, and
// comparing bytes is many times faster than validating them again. A
// byte-identical copy of a valid object or array is a valid value of the
// same extent (it ends at its closing bracket, whatever follows), so
// finding one at the cursor is as good as skipping it. It belongs to one
// scan, never to the package: Decode stays a function of its input alone
// (a package-level memo made FuzzDecode's coverage depend on earlier
// inputs). Discover's goroutines share it: an immutable list behind an
// atomic pointer, replaced whole, that only grows, to maxKnown entries.
type Known struct {
	l atomic.Pointer[[]knownValue]
}

type knownValue struct {
	name  string
	value []byte
}

const (
	minKnown = 512       // bytes; smaller values are not worth a slot
	maxValue = 128 << 10 // bytes per entry: at most 2 MB held in all
	maxKnown = 16        // entries; later values are skipped, not remembered
	// maxPerName: a member that differs per container (mounts name the
	// container's directories) must not fill the list, and a cell may run
	// two kinds of container.
	maxPerName = 2
)

// skipKnown skips the value of config member name, matching it against
// the values k remembers for that name first.
func (sc *scanner) skipKnown(name []byte) bool {
	if sc.k == nil {
		return sc.skip()
	}
	start := sc.i
	if l := sc.k.l.Load(); l != nil {
		for _, kv := range *l {
			if kv.name == string(name) && bytes.HasPrefix(sc.b[start:], kv.value) {
				sc.i += len(kv.value)
				return true
			}
		}
	}
	if !sc.skip() {
		return false
	}
	if v := sc.b[start:sc.i]; len(v) >= minKnown && len(v) <= maxValue && (v[0] == '{' || v[0] == '[') {
		sc.k.remember(string(name), v)
	}
	return true
}

// remember adds a copy of value, if it is new and there is room (the
// first few decodes of a scan race to add the same values).
func (k *Known) remember(name string, value []byte) {
	var add *knownValue
	for {
		old := k.l.Load()
		var l []knownValue
		if old != nil {
			l = *old
		}
		if len(l) >= maxKnown {
			return
		}
		same := 0
		for _, kv := range l {
			if kv.name == name {
				if same++; same == maxPerName || bytes.Equal(kv.value, value) {
					return
				}
			}
		}
		if add == nil {
			add = &knownValue{name, bytes.Clone(value)}
		}
		next := append(l[:len(l):len(l)], *add)
		if k.l.CompareAndSwap(old, &next) {
			return
		}
	}
}
