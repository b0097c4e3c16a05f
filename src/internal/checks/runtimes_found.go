package checks

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// KindRuntime is Data["kind"] of the findings that name a runtime root
// found, for operators reading the JSON. Their Evidence is the
// runcstate.Runtime, which cli logs, so the log says what was looked at
// even when every check passed.
const KindRuntime = "runtime"

// runtimesFound is one finding per runtime root found, by name and root,
// or, when no root exists and no container was seen, a warning saying
// where cellguard looked: a validator that finds nothing to check must not
// pass in silence (a runtime root moved, a typo in runtime_roots).
func runtimesFound(d *runcstate.Discovery) []validator.Finding {
	if len(d.Roots) == 0 && len(d.Containers) == 0 {
		return []validator.Finding{{
			Subject: "runtimes", Status: validator.Warn,
			Detail: fmt.Sprintf("nothing to check: no runtime root found (looked in %s) and no container seen; "+
				"if this host runs containers, set validator.runtime_roots to where its runtime keeps state",
				strings.Join(d.Searched, ", ")),
			Data: map[string]string{"kind": "nothing-to-check", "searched": strings.Join(d.Searched, ",")},
		}}
	}
	fs := make([]validator.Finding, 0, len(d.Runtimes))
	for _, r := range d.Runtimes {
		fs = append(fs, validator.Finding{
			Subject: r.Name, Status: validator.Pass,
			Detail: fmt.Sprintf("runtime root %s: %s", r.Root, plural(r.Containers, "container")),
			Data: map[string]string{"kind": KindRuntime, "runtime": r.Name, "root": r.Root,
				"containers": strconv.Itoa(r.Containers)},
			Evidence: r,
		})
	}
	return fs
}
