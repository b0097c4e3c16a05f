package checks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// The cgroup layouts a check judges (validator.Meta.Layouts), by
// cgroup.Mode's names. Most judge every layout, each in its terms (one
// hierarchy on v2, one per controller on v1); a check about something only
// one layout has judges that layout only, and is not applicable elsewhere.
var (
	everyLayout = layouts(cgroup.Legacy, cgroup.Hybrid, cgroup.Unified)
	v1Layouts   = layouts(cgroup.Legacy, cgroup.Hybrid) // per-controller hierarchies
	v2Layouts   = layouts(cgroup.Unified)               // the unified hierarchy only
)

func layouts(ms ...cgroup.Mode) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.String()
	}
	return out
}

// layoutName is how a report names a host's layout: the cgroup version,
// then the mode.
func layoutName(m cgroup.Mode) string {
	switch m {
	case cgroup.Legacy, cgroup.Hybrid:
		return fmt.Sprintf("cgroup v1 (%s)", m)
	case cgroup.Unified:
		return fmt.Sprintf("cgroup v2 (%s)", m)
	}
	return m.String()
}

// notApplicable is a check's one finding on a host whose layout it does
// not judge, and false where it judges it: a skip that says so, the one
// way a report shows "not applicable here" (why says what the layout
// lacks). A check calls it before it reads anything the layout lacks, so
// such a host never draws "could not read" from it.
func notApplicable(m validator.Meta, mode cgroup.Mode, why string) ([]validator.Finding, bool) {
	if slices.Contains(m.Layouts, mode.String()) {
		return nil, false
	}
	return []validator.Finding{{Status: validator.Skip,
		Detail: fmt.Sprintf("not applicable on %s: %s judges %s hosts only; %s", layoutName(mode), m.ID, strings.Join(m.Layouts, " and "), why),
		Data:   map[string]string{"kind": "not-applicable", "cgroup_mode": mode.String(), "layouts": strings.Join(m.Layouts, " ")}}}, true
}
