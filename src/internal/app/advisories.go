package app

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/cloudfoundry/cellguard/src/internal/runtimever"
)

// Components are the runtime components advisories name, in listing order.
var Components = runtimever.Components

// KnownComponent says whether name is one of Components.
func KnownComponent(name string) bool { return runtimever.KnownComponent(name) }

// Advisories are the advisories runtime-versions matches: the shipped list
// merged with the operator's records, one row per component each names.
type Advisories struct {
	// Operator is how many records the operator's config holds.
	Operator  int
	Withdrawn []string
	Entries   []AdvisoryRow
	// Promoted are the ids validator.blocking_advisories makes blocking.
	Promoted []string
}

// AdvisoryRow is one advisory as it applies to one component.
type AdvisoryRow struct {
	runtimever.Listed
	Component string
}

// ListAdvisories merges the shipped advisories with the operator's records
// and keeps component's ("" keeps all), in Components' order, then by id;
// promoted are the ids the operator made blocking.
func ListAdvisories(operator []runtimever.Advisory, promoted []string, component string) (Advisories, error) {
	set, err := runtimever.Effective(operator)
	if err != nil {
		return Advisories{}, err
	}
	var rows []AdvisoryRow
	for _, e := range set.Entries {
		for _, c := range e.Components() {
			if component == "" || c == component {
				rows = append(rows, AdvisoryRow{Listed: e, Component: c})
			}
		}
	}
	slices.SortStableFunc(rows, func(a, b AdvisoryRow) int {
		if c := slices.Index(runtimever.Components, a.Component) - slices.Index(runtimever.Components, b.Component); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return Advisories{Operator: len(operator), Withdrawn: set.Withdrawn, Entries: rows, Promoted: promoted}, nil
}

// rangeText renders one affected range for a table: "<1.3.9",
// "1.4.0-alpha..<1.4.3", ">=1.2.0, no fix", "1.2.0..=1.2.3".
func rangeText(r runtimever.Range) string {
	switch {
	case r.LastAffected != "" && r.Introduced == "0":
		return "<=" + r.LastAffected
	case r.LastAffected != "":
		return r.Introduced + "..=" + r.LastAffected
	case r.Introduced == "0" && r.Fixed == "":
		return "every version, no fix"
	case r.Introduced == "0":
		return "<" + r.Fixed
	case r.Fixed == "":
		return ">=" + r.Introduced + ", no fix"
	}
	return r.Introduced + "..<" + r.Fixed
}

// severities are a row's severities at pre-start and drain, the
// pre-start one marked "*" when conditions decide it.
func (a Advisories) severities(e AdvisoryRow) (pre, drain string) {
	promoted := slices.Contains(a.Promoted, e.ID)
	pre = string(e.SeverityIn(runtimever.PreStart, promoted))
	if len(e.Conditions) > 0 && pre == string(runtimever.SeverityBlocking) {
		pre += "*"
	}
	return pre, string(e.SeverityIn(runtimever.Drain, promoted))
}

// WriteTable writes the advisories as a table under a line of counts.
func (a Advisories) WriteTable(w io.Writer) {
	origins := map[string]int{}
	ids := map[string]bool{}
	for _, e := range a.Entries {
		if !ids[e.ID] {
			origins[e.Origin]++
		}
		ids[e.ID] = true
	}
	fmt.Fprintf(w, "%d advisories: %d shipped", len(ids), origins[runtimever.OriginShipped])
	if a.Operator > 0 {
		fmt.Fprintf(w, "; operator's validator.advisories: %d replacing shipped, %d added, %d withdrawn",
			origins[runtimever.OriginReplaced], origins[runtimever.OriginAdded], len(a.Withdrawn))
		if len(a.Withdrawn) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(a.Withdrawn, ", "))
		}
	}
	if len(a.Promoted) > 0 {
		fmt.Fprintf(w, "; promoted to blocking: %s", strings.Join(a.Promoted, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tID\tCLASS\tPRE-START\tDRAIN\tAFFECTED (upper bound = fixed in)\tORIGIN")
	conditional := false
	for _, e := range a.Entries {
		var ranges []string
		for _, r := range e.Ranges(e.Component) {
			ranges = append(ranges, rangeText(r))
		}
		pre, drain := a.severities(e)
		conditional = conditional || strings.HasSuffix(pre, "*")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Component, e.ID, e.Class, pre, drain,
			strings.Join(ranges, ", "), e.Origin)
	}
	_ = tw.Flush()
	if conditional {
		fmt.Fprintln(w, "\n* blocking only while its conditions hold on the host or binary (see --json); a warning otherwise")
	}
}

type advisoryJSON struct {
	ID         string             `json:"id"`
	Aliases    []string           `json:"aliases,omitempty"`
	Component  string             `json:"component"`
	Class      string             `json:"class"`
	Impact     string             `json:"impact,omitempty"`
	Summary    string             `json:"summary"`
	Affected   []runtimever.Range `json:"affected"`
	FixedIn    []string           `json:"fixed_in"`
	Backports  []string           `json:"backports,omitempty"`
	PreStart   string             `json:"pre_start"`
	Drain      string             `json:"drain"`
	Promoted   bool               `json:"promoted,omitempty"`
	Conditions []string           `json:"conditions,omitempty"`
	References []string           `json:"references"`
	Details    string             `json:"details,omitempty"`
	Origin     string             `json:"origin"`
}

// WriteJSON writes the advisories as one JSON document, with summaries,
// backports, references and details.
func (a Advisories) WriteJSON(w io.Writer) error {
	out := struct {
		Operator   int            `json:"operator_records"`
		Withdrawn  []string       `json:"withdrawn"`
		Promoted   []string       `json:"blocking_advisories"`
		Advisories []advisoryJSON `json:"advisories"`
	}{Operator: a.Operator, Withdrawn: a.Withdrawn, Promoted: a.Promoted, Advisories: []advisoryJSON{}}
	if out.Withdrawn == nil {
		out.Withdrawn = []string{}
	}
	if out.Promoted == nil {
		out.Promoted = []string{}
	}
	for _, e := range a.Entries {
		fixed := e.FixedIn()
		if fixed == nil {
			fixed = []string{}
		}
		pre, drain := a.severities(e)
		out.Advisories = append(out.Advisories, advisoryJSON{
			ID: e.ID, Aliases: e.Aliases, Component: e.Component, Class: e.Class, Impact: e.Impact, Summary: e.Summary,
			Affected: e.Ranges(e.Component), FixedIn: fixed, Backports: e.Backports,
			PreStart: strings.TrimSuffix(pre, "*"), Drain: drain, Promoted: slices.Contains(a.Promoted, e.ID),
			Conditions: e.Conditions, References: e.References, Details: e.Details, Origin: e.Origin,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
