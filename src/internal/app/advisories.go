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
// merged with the operator's file.
type Advisories struct {
	// File is the operator's file read ("" for none).
	File     string
	Disabled []string
	Entries  []runtimever.Listed
}

// ListAdvisories merges the shipped advisories with the operator's file
// at path under root ("" reads none) and keeps component's ("" keeps
// all), in Components' order, then by id.
func ListAdvisories(root, path, component string) (Advisories, error) {
	set, err := runtimever.Effective(root, path)
	if err != nil {
		return Advisories{}, err
	}
	entries := set.Entries
	if component != "" {
		entries = slices.DeleteFunc(slices.Clone(entries), func(e runtimever.Listed) bool { return e.Component != component })
	}
	slices.SortStableFunc(entries, func(a, b runtimever.Listed) int {
		if c := slices.Index(runtimever.Components, a.Component) - slices.Index(runtimever.Components, b.Component); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return Advisories{File: path, Disabled: set.Disabled, Entries: entries}, nil
}

// rangeText renders one affected range for a table: "<1.3.9",
// "1.4.0-alpha..<1.4.3", ">=1.2.0, no fix".
func rangeText(r runtimever.Range) string {
	switch {
	case r.Introduced == "0" && r.Fixed == "":
		return "every version, no fix"
	case r.Introduced == "0":
		return "<" + r.Fixed
	case r.Fixed == "":
		return ">=" + r.Introduced + ", no fix"
	}
	return r.Introduced + "..<" + r.Fixed
}

// WriteTable writes the advisories as a table under a line of counts.
func (a Advisories) WriteTable(w io.Writer) {
	path, disabled, entries := a.File, a.Disabled, a.Entries
	origins := map[string]int{}
	for _, e := range entries {
		origins[e.Origin]++
	}
	fmt.Fprintf(w, "%d advisories: %d shipped", len(entries), origins[runtimever.OriginShipped])
	if path != "" {
		fmt.Fprintf(w, "; operator file %s: %d replacing shipped, %d added, %d disabled", path,
			origins[runtimever.OriginReplaced], origins[runtimever.OriginAdded], len(disabled))
		if len(disabled) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(disabled, ", "))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tID\tCLASS\tPRE-START\tDRAIN\tAFFECTED (upper bound = fixed in)\tORIGIN")
	conditional := false
	for _, e := range entries {
		var ranges []string
		for _, r := range e.Affected {
			ranges = append(ranges, rangeText(r))
		}
		pre := string(e.SeverityIn(runtimever.PreStart))
		if e.Condition != "" {
			pre += "*"
			conditional = true
		}
		class := e.Class
		if class == "" {
			class = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Component, e.ID, class, pre, e.SeverityIn(runtimever.Drain),
			strings.Join(ranges, ", "), e.Origin)
	}
	_ = tw.Flush()
	if conditional {
		fmt.Fprintln(w, "\n* blocking only while its condition holds on the host or binary (see --json); a warning otherwise")
	}
}

type advisoryJSON struct {
	ID         string              `json:"id"`
	Component  string              `json:"component"`
	Class      string              `json:"class,omitempty"`
	Summary    string              `json:"summary"`
	Affected   []runtimever.Range  `json:"affected"`
	FixedIn    []string            `json:"fixed_in"`
	Backports  []string            `json:"backports,omitempty"`
	PreStart   runtimever.Severity `json:"pre_start"`
	Drain      runtimever.Severity `json:"drain"`
	Condition  string              `json:"condition,omitempty"`
	References []string            `json:"references"`
	Note       string              `json:"note,omitempty"`
	Origin     string              `json:"origin"`
}

// WriteJSON writes the advisories as one JSON document, with summaries,
// backports, references and notes.
func (a Advisories) WriteJSON(w io.Writer) error {
	path, disabled, entries := a.File, a.Disabled, a.Entries
	out := struct {
		AdvisoriesFile string         `json:"advisories_file"`
		Disabled       []string       `json:"disabled"`
		Advisories     []advisoryJSON `json:"advisories"`
	}{AdvisoriesFile: path, Disabled: disabled, Advisories: []advisoryJSON{}}
	if out.Disabled == nil {
		out.Disabled = []string{}
	}
	for _, e := range entries {
		fixed := e.FixedIn()
		if fixed == nil {
			fixed = []string{}
		}
		out.Advisories = append(out.Advisories, advisoryJSON{
			ID: e.ID, Component: e.Component, Class: e.Class, Summary: e.Summary, Affected: e.Affected,
			FixedIn: fixed, Backports: e.Backports, PreStart: e.SeverityIn(runtimever.PreStart), Drain: e.SeverityIn(runtimever.Drain),
			Condition: e.Condition, References: e.References, Note: e.Note, Origin: e.Origin,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
