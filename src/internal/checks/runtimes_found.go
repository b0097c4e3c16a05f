package checks

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// KindRuntime is Data["kind"] of the findings that name a runtime root
// found, for operators reading the JSON. Their Evidence is the
// runcstate.Runtime, which cli logs, so the log says what was looked at
// even when every check passed.
const KindRuntime = "runtime"

// runtimesFound is one finding per runtime root found, by name and root,
// or, when no root exists and no container was seen, nothingFound's.
func runtimesFound(v *snapshot.Host) []validator.Finding {
	d := v.Discovery()
	if len(d.Roots) == 0 && len(d.Containers) == 0 {
		return []validator.Finding{nothingFound(d.Searched, v.HostNS() != 0, v.InOtherPidNS())}
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

// nothingFound judges a host with no runtime root and no container. A
// validator that finds nothing to check must not pass in silence when
// containers run unseen (a runtime root moved, a typo in runtime_roots):
// a process in a pid namespace other than the host's is such a container
// (every runc, crun and Garden container has one of its own; a Garden
// pea joins its sandbox's), and so is anything when the host's own
// namespace could not be read. A host whose every process is in the
// host's pid namespace runs no container yet: a Garden cell before its
// first container (its runtime root appears with it), a VM of the
// deployment that is no cell. It passes, saying where cellguard looked.
func nothingFound(searched []string, hostNSKnown bool, other []snapshot.Proc) validator.Finding {
	where := strings.Join(searched, ", ")
	data := map[string]string{"kind": "nothing-to-check", "searched": strings.Join(searched, ",")}
	switch {
	case !hostNSKnown:
		return validator.Finding{Subject: "runtimes", Status: validator.Warn, Data: data,
			Detail: fmt.Sprintf("nothing to check: no runtime root found (looked in %s) and no container seen, and the host's "+
				"pid namespace is unreadable, so a container's processes cannot be told from the host's; "+
				"if this host runs containers, set validator.runtime_roots to where its runtime keeps state", where)}
	case len(other) > 0:
		var some []string
		for _, p := range other[:min(len(other), 3)] {
			some = append(some, fmt.Sprintf("pid %d (%s)", p.PID, p.Stat.Comm))
		}
		data["processes_in_other_pid_namespaces"] = strconv.Itoa(len(other))
		run := "1 process runs"
		if len(other) > 1 {
			run = strconv.Itoa(len(other)) + " processes run"
		}
		return validator.Finding{Subject: "runtimes", Status: validator.Warn, Data: data,
			Detail: fmt.Sprintf("nothing to check: no runtime root found (looked in %s) and no container seen, yet %s "+
				"in a pid namespace other than the host's (%s): if these are containers, set validator.runtime_roots "+
				"to where their runtime keeps state", where, run, strings.Join(some, ", "))}
	}
	data["kind"] = "no-containers"
	return validator.Finding{Subject: "runtimes", Status: validator.Pass, Data: data,
		Detail: fmt.Sprintf("no runtime root found (looked in %s) and every process is in the host's pid namespace: "+
			"no container runs here yet", where)}
}
