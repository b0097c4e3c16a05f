package checks

import (
	"sync"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
)

// lateStates are the runtime states read once more after the snapshot,
// only when a judge asks: whether a process outside its container's
// cgroups sits in a cgroup another container's state records. The
// snapshot reads the states before the processes, so a container created
// in between has processes it saw and a state it did not. A Garden pea is
// that case: its init runs in the pea's own cgroup and in its sandbox's
// pid namespace, which is all that ties it to a container, the sandbox,
// whose cgroup it is not in (measured on a noble cell,
// TestFleet/noble/garden_v2 run 7: `sleep` of pea df7b6e64 in
// /system.slice/df7b6e64-..., named an escapee of privileged sandbox cp2
// at /system.slice/cp2 by watch's cgroup-integrity and limits-intact).
// Such a process is where its runtime put it: the pea's own judgement,
// in the next scan, is the one that counts. Each judge reads its own, when
// it asks: cgroup-integrity after its confirmation waits (1.5 s, watch's
// 0.6 s), which give a state being written time to land; one read shared
// with limits-intact, which asks without waiting, would come earlier.
type lateStates struct {
	v       *snapshot.Host
	recheck facts.Recheck

	once sync.Once
	recs []lateRecord
}

// lateRecord is one cgroup a container's state records.
type lateRecord struct {
	h     *cgroup.Hierarchy
	rel   string
	state string
}

func newLateStates(v *snapshot.Host, recheck facts.Recheck) *lateStates {
	return &lateStates{v: v, recheck: recheck}
}

func (l *lateStates) read() {
	d, err := l.recheck.Rediscover(l.v)
	if d == nil || err != nil {
		return // judged as the snapshot saw it
	}
	for i := range d.Containers {
		c := &d.Containers[i]
		exps, _ := l.v.Expectations(c)
		for _, e := range exps {
			l.recs = append(l.recs, lateRecord{h: e.Hierarchy, rel: e.Rel, state: c.StatePath})
		}
	}
}

// claimed says whether a container other than the one whose state is at
// state records a cgroup of h that holds actual. A record of the root
// claims nothing: everything is below it, escapees too.
func (l *lateStates) claimed(state string, h *cgroup.Hierarchy, actual string) bool {
	l.once.Do(l.read)
	for _, r := range l.recs {
		if r.h == h && r.state != state && r.rel != "/" && cgroup.Under(actual, r.rel) {
			return true
		}
	}
	return false
}
