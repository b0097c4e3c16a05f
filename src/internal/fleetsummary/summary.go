package fleetsummary

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/cloudfoundry/cellguard/src/internal/report"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// Summary is the whole fleet: every cell, the count per verdict and, per
// check that did not pass somewhere, where and its fix.
type Summary struct {
	Cells  []Cell          `json:"cells"`
	Counts map[Verdict]int `json:"counts"`
	Checks []CheckTotal    `json:"checks"`
}

// CheckTotal is one check across the fleet.
type CheckTotal struct {
	ID string `json:"id"`
	// Cells where it did not pass; BlockingCells of them where it blocked.
	Cells         []string `json:"cells"`
	BlockingCells int      `json:"blocking_cells"`
	// FailingCells: where it failed or could not check without blocking
	// (ignored, or a warning); the rest of Cells only warned.
	FailingCells int    `json:"failing_cells"`
	Ignored      bool   `json:"ignored,omitempty"` // ignored wherever it did not pass
	Findings     int    `json:"findings"`
	Fix          string `json:"fix,omitempty"`
}

// verdictOrder is worst first: the order cells and counts are shown in.
var verdictOrder = []Verdict{Blocked, CouldNotRun, Failed, Canceled, OK}

func rank(v Verdict) int {
	for i, o := range verdictOrder {
		if o == v {
			return i
		}
	}
	return len(verdictOrder)
}

// Summarize reads every instance and totals the fleet.
func Summarize(instances []Instance) Summary {
	s := Summary{Cells: []Cell{}, Counts: map[Verdict]int{}, Checks: []CheckTotal{}}
	byID := map[string]*CheckTotal{}
	var order []string
	for _, in := range instances {
		c := ReadCell(in)
		s.Cells = append(s.Cells, c)
		s.Counts[c.Verdict]++
		for _, ch := range c.Checks {
			t := byID[ch.ID]
			if t == nil {
				t = &CheckTotal{ID: ch.ID}
				byID[ch.ID] = t
				order = append(order, ch.ID)
			}
			t.Cells = append(t.Cells, c.Instance)
			t.Findings += ch.Findings
			switch {
			case ch.Blocking:
				t.BlockingCells++
			case ch.Status == validator.Fail || ch.Status == validator.Error:
				t.FailingCells++
			}
			t.Ignored = ch.Ignored && (len(t.Cells) == 1 || t.Ignored)
			if t.Fix == "" {
				t.Fix = ch.Fix
			}
		}
	}
	sort.SliceStable(s.Cells, func(i, j int) bool {
		a, b := s.Cells[i], s.Cells[j]
		if rank(a.Verdict) != rank(b.Verdict) {
			return rank(a.Verdict) < rank(b.Verdict)
		}
		if len(a.Checks) != len(b.Checks) {
			return len(a.Checks) > len(b.Checks)
		}
		return a.Instance < b.Instance
	})
	for _, id := range order {
		s.Checks = append(s.Checks, *byID[id])
	}
	sort.SliceStable(s.Checks, func(i, j int) bool {
		a, b := s.Checks[i], s.Checks[j]
		if (a.BlockingCells > 0) != (b.BlockingCells > 0) {
			return a.BlockingCells > 0
		}
		return len(a.Cells) > len(b.Cells)
	})
	return s
}

// Healthy reports whether every instance passed.
func (s Summary) Healthy() bool { return len(s.Cells) > 0 && s.Counts[OK] == len(s.Cells) }

// MaxOKShown caps the passing cells listed one per line, so a large
// fleet's summary stays on one screen; the rest are counted.
const MaxOKShown = 5

// Write prints the summary for a terminal: the totals, one line per
// instance (worst first; passing cells without findings beyond
// MaxOKShown are counted, not listed) and one fix per check.
func Write(w io.Writer, s Summary) error {
	var parts []string
	for _, v := range verdictOrder {
		if n := s.Counts[v]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, v))
		}
	}
	fmt.Fprintf(w, "cellguard fleet-summary: %d instances: %s\n\n", len(s.Cells), strings.Join(parts, ", "))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tVERDICT\tEXIT\tCHECKS (findings; ! blocks)")
	quiet := 0
	for _, c := range s.Cells {
		if c.Verdict == OK && len(c.Checks) == 0 {
			if quiet++; quiet > MaxOKShown {
				continue
			}
		}
		verdict := string(c.Verdict)
		if c.DrainOutcome != "" && c.DrainOutcome != "pass" && c.Verdict == OK {
			verdict += " (" + c.DrainOutcome + ")" // lifted, budget_expired: the VM may go, but not because it passed
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", report.Escape(c.Instance), verdict, c.ExitCode, cellChecks(c))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if quiet > MaxOKShown {
		fmt.Fprintf(w, "... and %d more ok without findings (--json lists every instance)\n", quiet-MaxOKShown)
	}
	if k := noReport(s); k > 0 {
		fmt.Fprintf(w, "%d of %d printed no JSON report, so their checks are not counted: fleet-summary reads only validate's JSON report (cellguard_validate.format: json, the default)\n", k, len(s.Cells))
	}
	if len(s.Checks) > 0 || s.Counts[CouldNotRun]+s.Counts[Failed]+s.Counts[Canceled] > 0 {
		fmt.Fprintln(w, "\nFIX")
	}
	n := len(s.Cells)
	for _, t := range s.Checks {
		fmt.Fprintf(w, "%s (%s; %d findings): ", report.Escape(t.ID), spread(t, n), t.Findings)
		fix := t.Fix
		if fix == "" {
			fix = "see the check's section in the instance's report"
		}
		fmt.Fprintln(w, report.Escape(fix))
	}
	if k := s.Counts[CouldNotRun] + s.Counts[Failed] + s.Counts[Canceled]; k > 0 {
		fmt.Fprintf(w, "not validated (%d of %d): read the instance's stderr above (bosh -d DEPLOYMENT run-errand cellguard-validate --instance GROUP/ID), fix what cellguard: error: says, run the errand again\n", k, n)
	}
	return nil
}

// noReport counts the cells that printed no JSON report though validate
// ran (exit 0 or 1).
func noReport(s Summary) int {
	n := 0
	for _, c := range s.Cells {
		if c.NoReport && (c.Verdict == OK || c.Verdict == Blocked) {
			n++
		}
	}
	return n
}

// spread says where a check did not pass: "blocks on 1 of 3", "fails
// (ignored) on 3 of 3", "warns on 2 of 3", joined when it did several.
func spread(t CheckTotal, n int) string {
	var parts []string
	if t.BlockingCells > 0 {
		parts = append(parts, fmt.Sprintf("blocks on %d", t.BlockingCells))
	}
	if t.FailingCells > 0 {
		fails := "fails"
		if t.Ignored {
			fails = "fails but ignored"
		}
		parts = append(parts, fmt.Sprintf("%s on %d", fails, t.FailingCells))
	}
	if w := len(t.Cells) - t.BlockingCells - t.FailingCells; w > 0 {
		parts = append(parts, fmt.Sprintf("warns on %d", w))
	}
	return fmt.Sprintf("%s of %d", strings.Join(parts, ", "), n)
}

// cellChecks is a cell's CHECKS column: "id! n" for a check that blocks,
// "id n" for one that warns or errs; cellguard's error when it could not run.
func cellChecks(c Cell) string {
	var parts []string
	for _, ch := range c.Checks {
		mark := ""
		if ch.Blocking {
			mark = "!"
		}
		st := ""
		if ch.Status != validator.Fail && ch.Status != validator.Warn {
			st = " " + string(ch.Status)
		}
		if ch.Ignored {
			st += " ignored"
		}
		parts = append(parts, fmt.Sprintf("%s%s %d%s", report.Escape(ch.ID), mark, ch.Findings, report.Escape(st)))
	}
	switch {
	case len(parts) > 0:
		return strings.Join(parts, ", ")
	case c.Reason != "":
		return report.Escape(c.Reason)
	case c.NoReport:
		return "(no JSON report on stdout)"
	}
	return "-"
}
