package runtimever

import (
	"fmt"
	"regexp"
	"slices"
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

// lowerBound orders range starts: "0" below every version.
func lowerBound(r Range) Version {
	if r.Introduced == "0" {
		return Version{Major: -1}
	}
	return MustParse(r.Introduced)
}

// TestShippedAdvisoryShape checks every shipped entry: a hazard names the
// conditions it bites under or says it needs none, its impact is a hang or
// a malfunction (a security flaw an attacker must exploit is reported, not
// a hazard); references with at least one primary source; ranges that
// parse, in order and not overlapping; details saying how the data was
// checked.
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
			if _, comp, ok := strings.Cut(a.ID, "@"); ok && !slices.Contains(a.Components(), comp) {
				t.Errorf("id %q names component %q, entry is for %v", a.ID, comp, a.Components())
			}
			if a.Class == ClassHazard && a.Impact != "hang" && a.Impact != "malfunction" {
				t.Errorf("hazard of impact %q: only what breaks cells by itself is a hazard", a.Impact)
			}
			if a.Impact == "" {
				t.Error("no impact")
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
			if len(strings.TrimSpace(a.Details)) < 40 {
				t.Errorf("details %q do not say how the ranges were verified", a.Details)
			}
			for _, c := range a.Components() {
				for _, p := range rangeProblems(a.Ranges(c)) {
					t.Errorf("%s: %s", c, p)
				}
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

// rangeProblems lists what is wrong with an entry's ranges.
func rangeProblems(ranges []Range) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if len(ranges) == 0 {
		return []string{"no affected range"}
	}
	for i, r := range ranges {
		if r.Introduced != "0" {
			if _, err := ParseVersion(r.Introduced); err != nil {
				bad("affected[%d]: %v", i, err)
				return out
			}
		}
		if r.Fixed == "" {
			continue
		}
		if _, err := ParseVersion(r.Fixed); err != nil {
			bad("affected[%d]: %v", i, err)
			return out
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
		{"overlap", "overlaps", []Range{{Introduced: "0", Fixed: "1.6.38"}, {Introduced: "1.6.30", Fixed: "1.7.27"}}},
		{"out of order", "ascending", []Range{{Introduced: "1.7.0", Fixed: "1.7.27"}, {Introduced: "0", Fixed: "1.6.38"}}},
		{"unparsable", "parse version", []Range{{Introduced: "seven", Fixed: "1.7.27"}}},
		{"none", "no affected range", nil},
	}
	for _, tc := range testCases {
		got := strings.Join(rangeProblems(tc.ranges), "; ")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: problems %q, want one containing %q", tc.name, got, tc.want)
		}
	}
	good := []Range{{Introduced: "0", Fixed: "1.6.38"}, {Introduced: "1.7.0", Fixed: "1.7.27"}, {Introduced: "1.8.0"}}
	if p := rangeProblems(good); len(p) != 0 {
		t.Errorf("good ranges: %v", p)
	}
}
