package evidence

import (
	"fmt"
	"strconv"

	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// Escape is one process outside its container's cgroup in one hierarchy:
// cgroup-integrity's evidence (Finding.Evidence), what watch counts and
// package heal moves back. It lives here, apart from the checks, so the
// packages that act on it do not import the judges.
type Escape struct {
	Container string // the runtime state's name: "<namespace>/<id>" or "<id>"
	Runtime   string
	State     string // the state file that records the cgroups
	PID       int
	Comm      string
	// Want is the hierarchy and the cgroup the state records.
	Want snapshot.Expectation
	// Actual is the process's cgroup in that hierarchy when confirmed.
	Actual string
	// StartTime (clock ticks after boot) and PidNS (the inode of its pid
	// namespace; 0 when unread) are the process's identity as confirmed:
	// heal moves only the process they name, never another that was
	// given the pid since.
	StartTime uint64
	PidNS     uint64
}

// escapeMeasured: where the process is changes while the escape lasts.
var escapeMeasured = []string{"actual"}

// Finding renders the escape as cgroup-integrity reports it.
func (e Escape) Finding() validator.Finding {
	return validator.Finding{
		Subject: e.Container,
		Status:  validator.Fail,
		Detail: fmt.Sprintf("pid %d (%s) escaped in %s: in %s, state says %s",
			e.PID, e.Comm, e.Want.Hierarchy.Name, e.Actual, e.Want.Rel),
		Data: map[string]string{
			"container": e.Container,
			"runtime":   e.Runtime,
			"state":     e.State,
			"pid":       strconv.Itoa(e.PID),
			"comm":      e.Comm,
			"hierarchy": e.Want.Hierarchy.Name,
			"expected":  e.Want.Rel,
			"actual":    e.Actual,
		},
		Measured: escapeMeasured,
		Evidence: e,
	}
}

// Escapes are the escapes among findings, in their order.
func Escapes(fs []validator.Finding) []Escape {
	var out []Escape
	for _, f := range fs {
		if e, ok := f.Evidence.(Escape); ok {
			out = append(out, e)
		}
	}
	return out
}
