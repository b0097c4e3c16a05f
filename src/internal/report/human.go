package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// MaxEvidence caps the findings printed per check in the human report;
// JSON carries them all.
const MaxEvidence = 20

// Human writes the table, why each skipped check judged nothing, then for
// every check that did not pass its evidence and fix. Every string is printed through Escape: findings
// carry what tenants named (comms, argv, cgroup paths), and the report
// reaches terminals, drain.log and the errand's output.
func Human(w io.Writer, rep validator.Report) error {
	verdict := "ok"
	if rep.Blocked {
		verdict = "BLOCKED"
	}
	var blocking []string
	for _, r := range rep.Results {
		if r.Blocking {
			blocking = append(blocking, Escape(r.ID))
		}
	}
	fmt.Fprintf(w, "cellguard validate --phase %s: %s", Escape(string(rep.Phase)), verdict)
	if len(blocking) > 0 {
		fmt.Fprintf(w, " by %s", strings.Join(blocking, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tCHECK\tSEVERITY\tFINDINGS\tTITLE")
	for _, r := range rep.Results {
		sev := Escape(string(r.Severity))
		if r.Ignored {
			sev += " (ignored)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", statusWord(r.Status), Escape(r.ID), sev, r.Count(), Escape(r.Title))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	skipped(w, rep.Results)
	for _, r := range rep.Results {
		if !r.Status.IsProblem() {
			continue
		}
		fmt.Fprintf(w, "\n[%s] %s (%s)\n", statusWord(r.Status), Escape(r.ID), Escape(string(r.Severity)))
		if r.Error != "" {
			fmt.Fprintf(w, "  could not check: %s\n", Escape(r.Error))
		}
		n := 0
		for _, f := range r.Findings {
			if !f.Status.IsProblem() {
				continue
			}
			n++
			if n > MaxEvidence {
				continue
			}
			if f.Subject != "" {
				fmt.Fprintf(w, "  %s: %s\n", Escape(f.Subject), Escape(f.Detail))
			} else {
				fmt.Fprintf(w, "  %s\n", Escape(f.Detail))
			}
		}
		if n > MaxEvidence {
			fmt.Fprintf(w, "  ... and %d more (use --format json)\n", n-MaxEvidence)
		}
		if r.Fix != "" {
			fmt.Fprintf(w, "  fix: %s\n", Escape(r.Fix))
		}
	}
	return nil
}

// skipped writes why each check that judged nothing did not: not
// applicable on this host's cgroup layout, nothing configured to judge, or
// nothing to read. The table alone shows "skip" for all of them alike.
func skipped(w io.Writer, rs []validator.Result) {
	first := true
	for _, r := range rs {
		if r.Status != validator.Skip || r.Error != "" {
			continue
		}
		n := 0
		for _, f := range r.Findings {
			if f.Status != validator.Skip || n == MaxEvidence {
				continue
			}
			n++
			if first {
				fmt.Fprintln(w)
				first = false
			}
			if f.Subject != "" {
				fmt.Fprintf(w, "[skip] %s: %s: %s\n", Escape(r.ID), Escape(f.Subject), Escape(f.Detail))
			} else {
				fmt.Fprintf(w, "[skip] %s: %s\n", Escape(r.ID), Escape(f.Detail))
			}
		}
	}
}

func statusWord(s validator.Status) string {
	switch s {
	case validator.Fail, validator.Error:
		return strings.ToUpper(string(s))
	}
	return Escape(string(s))
}

// Count is r.Count(), for the callers not moved to it yet.
//
// Deprecated: use validator.Result.Count.
func Count(r validator.Result) int { return r.Count() }
