package runtimever

import (
	"fmt"
	"maps"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// primarySource matches the upstream's own statements and the distribution
// trackers: an entry must cite at least one, whatever secondary pages it adds.
var primarySource = regexp.MustCompile(`^https://(` +
	`github\.com/[^/]+/[^/]+/security/advisories/GHSA-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}$|` +
	`github\.com/advisories/GHSA-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}$|` +
	`github\.com/(opencontainers/runc|containerd/containerd|moby/moby|containers/crun)/(blob/main/(CHANGELOG\.md|NEWS)(#.*)?$|releases/tag/[^/]+$|commit/[0-9a-f]{40}$|pull/\d+$)|` +
	`security-tracker\.debian\.org/tracker/CVE-\d{4}-\d+$|` +
	`docs\.docker\.com/engine/release-notes/|` +
	`www\.openwall\.com/lists/oss-security/)`)

var entryID = regexp.MustCompile(`^(CVE-\d{4}-\d{4,}|GHSA-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}|[a-z0-9]+(-[a-z0-9]+)+)(@[a-z0-9-]+)?$`)

// ruleSeverity is docs/validator.md's severity rule: a blocking class
// blocks pre-start and warns at drain, any other warns at pre-start and is
// info at drain.
func ruleSeverity(c Class) map[Phase]Severity {
	if c.Blocking {
		return map[Phase]Severity{PreStart: SeverityBlocking, Drain: SeverityWarning}
	}
	return map[Phase]Severity{PreStart: SeverityWarning, Drain: SeverityInfo}
}

// lowerBound orders range starts: "0" below every version.
func lowerBound(r Range) Version {
	if r.Introduced == "0" {
		return Version{Major: -1}
	}
	return MustParse(r.Introduced)
}

// TestShippedAdvisoryShape checks every shipped entry: a known class and
// the severity the rule gives it, references with at least one primary
// source, ranges that parse, each naming the series its fix belongs to,
// in order and not overlapping, and a note saying how the data was checked.
func TestShippedAdvisoryShape(t *testing.T) {
	advs, err := Shipped()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range advs {
		t.Run(a.ID, func(t *testing.T) {
			if !entryID.MatchString(a.ID) {
				t.Errorf("id %q: want a CVE or GHSA id, or a lower-case name, optionally @component", a.ID)
			}
			if _, comp, ok := strings.Cut(a.ID, "@"); ok && comp != a.Component {
				t.Errorf("id %q names component %q, entry is for %q", a.ID, comp, a.Component)
			}
			c, ok := LookupClass(a.Class)
			if !ok {
				t.Fatalf("class %q: want one of %v", a.Class, ClassNames())
			}
			if want := ruleSeverity(c); !maps.Equal(a.Severity, want) {
				t.Errorf("severity %v, the rule gives %v for class %s", a.Severity, want, a.Class)
			}
			primary := 0
			for _, r := range a.References {
				if !strings.HasPrefix(r, "https://") {
					t.Errorf("reference %q is not an https URL", r)
				}
				if primarySource.MatchString(r) {
					primary++
				}
			}
			if primary == 0 {
				t.Errorf("no primary source among %v", a.References)
			}
			if len(strings.TrimSpace(a.Note)) < 40 {
				t.Errorf("note %q does not say how the ranges were verified", a.Note)
			}
			for _, p := range rangeProblems(a.Affected) {
				t.Error(p)
			}
			for _, b := range a.Backports {
				if v, ok := strings.CutPrefix(b, ">="); ok {
					if _, rev := SplitDistro(v); rev == "" {
						t.Errorf("backport %q: a >= entry needs a Debian revision", b)
					}
				}
			}
		})
	}
}

// inSeries reports whether v is in series "major.minor" ("19.03" holds
// 19.3.x, as Docker spells it).
func inSeries(series string, v Version) bool {
	var major, minor int
	n, err := fmt.Sscanf(series, "%d.%d", &major, &minor)
	return err == nil && n == 2 && v.Major == major && v.Minor == minor
}

// rangeProblems lists what is wrong with an entry's ranges.
func rangeProblems(ranges []Range) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if len(ranges) == 0 {
		return []string{"no affected range"}
	}
	series := map[string]bool{}
	for i, r := range ranges {
		if r.Series == "" {
			bad("affected[%d]: no series", i)
			continue
		}
		if series[r.Series] {
			bad("affected[%d]: series %s named twice", i, r.Series)
		}
		series[r.Series] = true
		if r.Introduced != "0" {
			if _, err := ParseVersion(r.Introduced); err != nil {
				bad("affected[%d]: %v", i, err)
				return out
			}
		}
		if r.Fixed == "" {
			// an unfixed range names the series it starts in
			if !inSeries(r.Series, lowerBound(r)) {
				bad("affected[%d]: no fix, and introduced %s is not in series %s", i, r.Introduced, r.Series)
			}
			continue
		}
		f, err := ParseVersion(r.Fixed)
		if err != nil {
			bad("affected[%d]: %v", i, err)
			return out
		}
		if !inSeries(r.Series, f) {
			bad("affected[%d]: fixed %s is in series %d.%d, not %s", i, r.Fixed, f.Major, f.Minor, r.Series)
		}
	}
	if !sort.SliceIsSorted(ranges, func(i, j int) bool { return lowerBound(ranges[i]).Less(lowerBound(ranges[j])) }) {
		bad("ranges are not in ascending order: %+v", ranges)
	}
	for i := 1; i < len(ranges); i++ {
		prev, cur := ranges[i-1], ranges[i]
		if cur.Introduced == "0" {
			bad("affected[%d]: only the first range may start at 0", i)
			continue
		}
		if prev.Fixed == "" || MustParse(cur.Introduced).Less(MustParse(prev.Fixed)) {
			bad("affected[%d] (%s) overlaps affected[%d] (%s..%s)", i, cur.Introduced, i-1, prev.Introduced, prev.Fixed)
		}
	}
	return out
}

// TestRangeProblemsCatchesBadRanges feeds rangeProblems the mistakes it
// exists to catch, so the shape test cannot pass vacuously.
func TestRangeProblemsCatchesBadRanges(t *testing.T) {
	testCases := []struct {
		name, want string
		ranges     []Range
	}{
		{"no series", "no series", []Range{{Introduced: "0", Fixed: "1.1.12"}}},
		{"fix in another series", "not 1.2", []Range{{Series: "1.2", Introduced: "0", Fixed: "1.1.12"}}},
		{"overlap", "overlaps", []Range{{Series: "1.6", Introduced: "0", Fixed: "1.6.38"}, {Series: "1.7", Introduced: "1.6.30", Fixed: "1.7.27"}}},
		{"series twice", "named twice", []Range{{Series: "1.7", Introduced: "0", Fixed: "1.7.2"}, {Series: "1.7", Introduced: "1.7.5", Fixed: "1.7.9"}}},
		{"out of order", "ascending", []Range{{Series: "1.7", Introduced: "1.7.0", Fixed: "1.7.27"}, {Series: "1.6", Introduced: "0", Fixed: "1.6.38"}}},
		{"unparsable", "parse version", []Range{{Series: "1.7", Introduced: "seven", Fixed: "1.7.27"}}},
		{"open range in the wrong series", "no fix", []Range{{Series: "1.7", Introduced: "1.6.0"}}},
		{"none", "no affected range", nil},
	}
	for _, tc := range testCases {
		got := strings.Join(rangeProblems(tc.ranges), "; ")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: problems %q, want one containing %q", tc.name, got, tc.want)
		}
	}
	good := []Range{{Series: "1.6", Introduced: "0", Fixed: "1.6.38"}, {Series: "1.7", Introduced: "1.7.0", Fixed: "1.7.27"}, {Series: "1.8", Introduced: "1.8.0"}}
	if p := rangeProblems(good); len(p) != 0 {
		t.Errorf("good ranges: %v", p)
	}
}
