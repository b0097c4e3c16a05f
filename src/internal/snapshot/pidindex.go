package snapshot

// pidIndex maps the pids container cgroups list to the first container
// (by index) listing each. The scan asks it once per process: on a cell,
// where pids are dense, a slice over their range answers without a map's
// hashing and cache misses; pids spread thinner than maxSparse per slot
// fall back to a map.
type pidIndex struct {
	lo    int
	dense []int32 // container index + 1; 0: listed by none
	m     map[int]int
}

// maxSparse bounds the slots per listed pid that the dense form may spend
// (4 bytes each, against a map's ~16 and more per entry).
const maxSparse = 4

// newPIDIndex indexes the pids that members' cgroups list.
func newPIDIndex(members []Members) pidIndex {
	n, lo, hi := 0, 0, -1
	for i := range members {
		a := members[i].Any()
		if len(a) == 0 {
			continue
		}
		if hi < lo {
			lo, hi = a[0], a[len(a)-1]
		}
		lo, hi = min(lo, a[0]), max(hi, a[len(a)-1])
		n += len(a)
	}
	var x pidIndex
	if hi < lo {
		return x
	}
	if span := hi - lo + 1; span <= maxSparse*n+1024 {
		x.lo, x.dense = lo, make([]int32, span)
		for i := range members {
			for _, pid := range members[i].Any() {
				if x.dense[pid-lo] == 0 {
					x.dense[pid-lo] = int32(i + 1)
				}
			}
		}
		return x
	}
	x.m = make(map[int]int, n)
	for i := range members {
		for _, pid := range members[i].Any() {
			if _, ok := x.m[pid]; !ok {
				x.m[pid] = i
			}
		}
	}
	return x
}

// get returns the index of the first container whose cgroups list pid.
func (x *pidIndex) get(pid int) (int, bool) {
	if x.m != nil {
		i, ok := x.m[pid]
		return i, ok
	}
	if j := pid - x.lo; j >= 0 && j < len(x.dense) && x.dense[j] != 0 {
		return int(x.dense[j]) - 1, true
	}
	return 0, false
}
