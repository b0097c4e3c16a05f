package systemd

import (
	"fmt"
	"strconv"
	"strings"
)

// KillModeNoneDeprecatedSince is the systemd release that started logging
// KillMode=none as deprecated and unsafe (systemd v246 NEWS); it still
// honours it.
const KillModeNoneDeprecatedSince = 246

// DelegateListSince is the first systemd whose Delegate= takes a list of
// controllers (systemd v236 NEWS: "Delegate= now optionally takes a list of
// controllers (instead of a boolean, as before)"). systemd 229 ignores the
// list and reads back Delegate=false; its Delegate=yes kept every controller
// of a running unit's subtree in place when a new unit started (measured,
// src/tests/harness/seed000-matrix.sh, layouts +protect and +yes on xenial).
const DelegateListSince = 236

// ParseVersion returns the major version of systemd from the Manager's
// Version property or from `systemctl --version`: "252.38-1~deb12u1" ->
// 252, "v256.5" -> 256, "256~rc3" -> 256, "245 (245.4-4ubuntu3)" -> 245,
// "systemd 252 (252.39-1~deb12u2)\n+PAM ..." -> 252.
func ParseVersion(s string) (int, error) {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	line = strings.TrimSpace(line)
	if rest, ok := strings.CutPrefix(line, "systemd"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
		line = strings.TrimSpace(rest)
	}
	v := strings.TrimPrefix(line, "v")
	end := 0
	for end < len(v) && v[end] >= '0' && v[end] <= '9' {
		end++
	}
	if end == 0 {
		return 0, fmt.Errorf("parse systemd version %q: no version number", line)
	}
	n, err := strconv.Atoi(v[:end])
	if err != nil {
		return 0, fmt.Errorf("parse systemd version %q: %w", line, err)
	}
	return n, nil
}

// JobResult is what systemd says of a finished job.
type JobResult string

// Explain puts a job result in words for an operator.
func (r JobResult) Explain() string {
	switch r {
	case "done":
		return "done: the job completed"
	case "canceled":
		return "canceled: another job replaced it before it finished (someone started or stopped the unit meanwhile)"
	case "timeout":
		return "timeout: the unit did not finish starting or stopping within its TimeoutStartSec/TimeoutStopSec"
	case "failed":
		return "failed: the command exited non-zero, was killed, or the unit's main process could not be found"
	case "dependency":
		return "dependency: a unit this one requires failed"
	case "skipped":
		return "skipped: the job did not apply in the unit's current state"
	}
	return string(r) + ": unknown job result"
}
