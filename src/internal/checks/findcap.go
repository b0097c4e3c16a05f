package checks

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// maxProblemFindings caps the problem findings one check reports in a run.
// Tenants control how many processes, pipes and cgroups there are; each
// finding becomes a report line, a log line and a watch event, so an
// unbounded count lets one tenant flood pre-start's and drain's logs
// (issue 38, hole 3: 19,800 findings, a 9.6 MB log). Fifty is more than
// an operator reads, and the summary counts the rest.
const maxProblemFindings = 50

// capProblems keeps fs's first maxProblemFindings problem findings (and
// every pass or skip) and replaces the rest with one summary finding that
// counts them by kind, with the worst status among them.
func capProblems(fs []validator.Finding) []validator.Finding {
	kept, dropped := 0, 0
	byKind := map[string]int{}
	status := validator.Warn
	out := fs[:0:0]
	for _, f := range fs {
		if !f.Status.IsProblem() || kept < maxProblemFindings {
			if f.Status.IsProblem() {
				kept++
			}
			out = append(out, f)
			continue
		}
		dropped++
		byKind[f.Data["kind"]]++
		if f.Status == validator.Fail || f.Status == validator.Error {
			status = validator.Fail
		}
	}
	if dropped == 0 {
		return out
	}
	kinds := make([]string, 0, len(byKind))
	for k, n := range byKind {
		if k == "" {
			k = "other"
		}
		kinds = append(kinds, k+"="+strconv.Itoa(n))
	}
	sort.Strings(kinds)
	return append(out, validator.Finding{
		Status: status,
		Detail: fmt.Sprintf("%d more findings not listed (%s): a check lists at most %d", dropped, strings.Join(kinds, ", "), maxProblemFindings),
		Data:   map[string]string{"kind": "more", "not_listed": strconv.Itoa(dropped), "kinds": strings.Join(kinds, ",")},
		// The count changes while the flood lasts; it is one problem.
		Measured: []string{"not_listed", "kinds"},
	})
}
