package fleetsummary

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
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
	Findings      int      `json:"findings"`
	Fix           string   `json:"fix,omitempty"`
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
			if ch.Blocking {
				t.BlockingCells++
			}
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
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", c.Instance, verdict, c.ExitCode, cellChecks(c))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if quiet > MaxOKShown {
		fmt.Fprintf(w, "... and %d more ok without findings (--json lists every instance)\n", quiet-MaxOKShown)
	}
	if len(s.Checks) > 0 || s.Counts[CouldNotRun]+s.Counts[Failed]+s.Counts[Canceled] > 0 {
		fmt.Fprintln(w, "\nFIX")
	}
	n := len(s.Cells)
	for _, t := range s.Checks {
		how := fmt.Sprintf("warns on %d of %d", len(t.Cells), n)
		if b := t.BlockingCells; b > 0 {
			how = fmt.Sprintf("blocks on %d of %d", b, n)
			if more := len(t.Cells) - b; more > 0 {
				how += fmt.Sprintf(", warns on %d more", more)
			}
		}
		fix := t.Fix
		if fix == "" {
			fix = "see the check's section in the instance's report"
		}
		fmt.Fprintf(w, "%s (%s; %d findings): %s\n", t.ID, how, t.Findings, fix)
	}
	if k := s.Counts[CouldNotRun] + s.Counts[Failed] + s.Counts[Canceled]; k > 0 {
		fmt.Fprintf(w, "not validated (%d of %d): read the instance's stderr above (bosh -d DEPLOYMENT run-errand cellguard-validate --instance GROUP/ID), fix what cellguard: error: says, run the errand again\n", k, n)
	}
	return nil
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
		if ch.Status != "fail" && ch.Status != "warn" {
			st = " " + string(ch.Status)
		}
		parts = append(parts, fmt.Sprintf("%s%s %d%s", ch.ID, mark, ch.Findings, st))
	}
	switch {
	case len(parts) > 0:
		return strings.Join(parts, ", ")
	case c.Reason != "":
		return c.Reason
	case c.NoReport && c.Verdict != OK:
		return "(no report on stdout)"
	}
	return "-"
}
