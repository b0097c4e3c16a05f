package facts

import (
	"github.com/cloudfoundry/cellguard/src/internal/limits"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
)

// LimitsFacts are the limits each running container's runtime recorded and
// what is in force along the cgroups its processes are in (package
// limits); Err when nothing could be read.
type LimitsFacts struct {
	Facts *limits.Facts
	Err   error
}

// readLimits reads the limits of the containers in the run's snapshot: its
// runtime states, inits and listings are the facts every check shares.
func readLimits(src *snapshot.Source) LimitsFacts {
	v, err := src.Get()
	if err != nil {
		return LimitsFacts{Err: err}
	}
	return LimitsFacts{Facts: limits.Read(v)}
}

// Limits is the limits facts, once waited for.
func (h *Host) Limits() LimitsFacts {
	if !h.done(Limits) {
		return LimitsFacts{Err: notRead(Limits)}
	}
	return h.limits
}
