package facts

import "github.com/cloudfoundry/cellguard/src/internal/limits"

// LimitsFacts are the limits each running container's runtime recorded and
// what is in force along the cgroups its processes are in (package
// limits); Err when nothing could be read.
type LimitsFacts struct {
	Facts *limits.Facts
	Err   error
}

func readLimits(s Spec) LimitsFacts {
	f, err := limits.Read(limits.Spec{Root: s.Root, RuntimeRoots: s.RuntimeRoots, Namespaces: s.Namespaces})
	return LimitsFacts{Facts: f, Err: err}
}

// Limits is the limits facts, once waited for.
func (h *Host) Limits() LimitsFacts {
	if !h.done(Limits) {
		return LimitsFacts{Err: notRead(Limits)}
	}
	return h.limits
}
