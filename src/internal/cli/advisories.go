package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/cloudfoundry/cellguard/src/internal/runtimever"
)

func advisoriesCommand() *Command {
	return &Command{Name: "advisories", Summary: "list the advisories runtime-versions matches (shipped + operator's file)", Run: runAdvisories}
}

const advisoriesHelp = `
Lists the advisories the runtime-versions check matches runtime binaries
against: the list shipped in this release merged by id with the operator's
file (validator.advisories_file, or --advisories-file), which may replace,
add or disable ("disabled": true) entries. Each line shows the component,
the id, its class (what the flaw lets happen), the severity at pre-start and
drain, the affected ranges with the release that fixes each series, and
where the entry comes from. --json adds summaries, backports, references
and notes.

The operator's file is refused, as validate refuses it, when it is not
owned by root or is group- or world-writable (on a real root).

Exit codes:
  0  listed
  2  bad flags, or the advisories could not be loaded
`

type advisoriesFlags struct {
	common
	root, file, component string
	shippedOnly, asJSON   bool
}

func runAdvisories(_ context.Context, env *Env, args []string) int {
	f := &advisoriesFlags{}
	fs := newFlagSet(env, "advisories", "advisories [--json] [--component NAME] [--advisories-file PATH | --shipped-only]", &f.common)
	fs.StringVar(&f.root, "root", "/", "root prefix the advisories file is read under (tests: a fixture tree)")
	fs.StringVar(&f.file, "advisories-file", "", "operator's advisories file (absolute, under --root); default the config's validator.advisories_file")
	fs.BoolVar(&f.shippedOnly, "shipped-only", false, "list the shipped advisories alone, ignoring any operator file")
	fs.StringVar(&f.component, "component", "", "list only this component's advisories: "+strings.Join(runtimever.Components, ", "))
	fs.BoolVar(&f.asJSON, "json", false, "print JSON instead of a table")
	base := fs.Usage
	fs.Usage = func() {
		base()
		fmt.Fprint(env.Stdout, advisoriesHelp)
	}
	if ok, code := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		errorf(env, "unexpected arguments: %s", strings.Join(fs.Args(), " "))
		return ExitCantRun
	}
	if f.component != "" && !runtimever.KnownComponent(f.component) {
		errorf(env, "--component %q: want one of %s", f.component, strings.Join(runtimever.Components, ", "))
		return ExitCantRun
	}
	if f.shippedOnly && f.file != "" {
		errorf(env, "--shipped-only and --advisories-file exclude each other")
		return ExitCantRun
	}
	logger, cfg, closer, err := f.setup(env, "advisories")
	if err != nil {
		errorf(env, "%v", err)
		return ExitCantRun
	}
	defer closer()
	path := f.file
	if path == "" && !f.shippedOnly {
		path = cfg.Validator.AdvisoriesFile
	}
	set, err := runtimever.Effective(f.root, path)
	if err != nil {
		f.failed(env, logger, "load-advisories", err)
		hintf(env, "the advisories file must be root-owned, not group- or world-writable, and valid JSON of the shipped file's schema")
		return ExitCantRun
	}
	entries := set.Entries
	if f.component != "" {
		entries = slices.DeleteFunc(slices.Clone(entries), func(e runtimever.Listed) bool { return e.Component != f.component })
	}
	slices.SortStableFunc(entries, func(a, b runtimever.Listed) int {
		if c := slices.Index(runtimever.Components, a.Component) - slices.Index(runtimever.Components, b.Component); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if f.asJSON {
		return writeAdvisoriesJSON(env.Stdout, path, set.Disabled, entries)
	}
	writeAdvisoriesTable(env.Stdout, path, set.Disabled, entries)
	return ExitOK
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

func writeAdvisoriesTable(w io.Writer, path string, disabled []string, entries []runtimever.Listed) {
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

func writeAdvisoriesJSON(w io.Writer, path string, disabled []string, entries []runtimever.Listed) int {
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
	if err := enc.Encode(out); err != nil {
		return ExitFailed
	}
	return ExitOK
}
