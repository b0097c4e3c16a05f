package runtimever

import (
	"testing"

	"github.com/Masterminds/semver/v3"
	modsemver "golang.org/x/mod/semver"
)

// The measurement behind keeping ParseVersion (docs/decisions.md): the
// versions runc, containerd and Debian print, ordered as upstream released
// them, through this parser and through golang.org/x/mod/semver and
// github.com/Masterminds/semver/v3 (both already in go.mod through other
// modules). Semver compares "rc9" and "rc10" as strings, so every SemVer
// library puts runc's 1.0.0-rc10 before rc9 and rc100 before rc93.

// orderedPairs: a < b in upstream's release order.
var orderedPairs = [][2]string{
	{"1.0.0-rc9", "1.0.0-rc10"},      // runc v1.0.0-rc9 (2019-10), rc10 (2019-12)
	{"1.0.0-rc92+dev", "1.0.0-rc93"}, // a build between rc92 and rc93
	{"1.0.0-rc93", "1.0.0-rc95"},
	{"1.0.0-rc95", "1.0.0"},
	{"1.0.0", "1.1.0"},
	{"1.1.9", "1.1.12"},
	{"v1.7.27", "v1.7.28"},           // containerd's spelling
	{"1.4.0-rc.3", "1.4.0"},          // runc's later rc spelling
	{"1.0.0~rc93+ds1", "1.0.0-rc94"}, // Debian spells pre-releases with ~
	{"1.1.5+ds1", "1.1.6"},
}

// samePairs: one upstream release spelled two ways.
var samePairs = [][2]string{
	{"1.4.0-rc3", "1.4.0-rc.3"},
	{"1.1.5+ds1", "1.1.5"},
}

type orderer struct {
	name string
	// cmp returns -1, 0 or 1, or ok false when it cannot read a or b.
	cmp func(a, b string) (int, bool)
}

var orderers = []orderer{
	{"cellguard", func(a, b string) (int, bool) {
		va, ea := ParseVersion(a)
		vb, eb := ParseVersion(b)
		return Compare(va, vb), ea == nil && eb == nil
	}},
	{"x/mod/semver", func(a, b string) (int, bool) {
		a, b = "v"+trimV(a), "v"+trimV(b)
		return modsemver.Compare(a, b), modsemver.IsValid(a) && modsemver.IsValid(b)
	}},
	{"Masterminds/semver", func(a, b string) (int, bool) {
		va, ea := semver.NewVersion(a)
		vb, eb := semver.NewVersion(b)
		if ea != nil || eb != nil {
			return 0, false
		}
		return va.Compare(vb), true
	}},
}

func trimV(s string) string {
	if len(s) > 0 && s[0] == 'v' {
		return s[1:]
	}
	return s
}

// wrongs counts the pairs an orderer cannot read or orders wrongly.
func wrongs(o orderer) (unread, misordered []string) {
	check := func(p [2]string, want int) {
		got, ok := o.cmp(p[0], p[1])
		switch {
		case !ok:
			unread = append(unread, p[0]+" / "+p[1])
		case got != want:
			misordered = append(misordered, p[0]+" / "+p[1])
		}
	}
	for _, p := range orderedPairs {
		check(p, -1)
	}
	for _, p := range samePairs {
		check(p, 0)
	}
	return unread, misordered
}

// TestVersionOrderAgainstLibraries holds the decision to its facts: this
// parser reads and orders every pair; each library misorders runc's rc9
// and rc10 (and refuses or misorders Debian's spelling). If a library ever
// orders them all, the decision is to be revisited, and this test says so.
func TestVersionOrderAgainstLibraries(t *testing.T) {
	for _, o := range orderers {
		unread, misordered := wrongs(o)
		t.Logf("%s: %d of %d pairs unreadable %q, %d misordered %q", o.name, len(unread),
			len(orderedPairs)+len(samePairs), unread, len(misordered), misordered)
		if o.name == "cellguard" {
			if len(unread)+len(misordered) > 0 {
				t.Errorf("ParseVersion/Compare: unreadable %q, misordered %q", unread, misordered)
			}
			continue
		}
		if len(unread)+len(misordered) == 0 {
			t.Errorf("%s now reads and orders every pair: revisit docs/decisions.md (runtimever's version parser)", o.name)
		}
		if got, ok := o.cmp("1.0.0-rc9", "1.0.0-rc10"); ok && got < 0 {
			t.Errorf("%s orders rc9 before rc10 now: revisit docs/decisions.md", o.name)
		}
	}
}

// BenchmarkVersionOrder parses and compares every pair above.
func BenchmarkVersionOrder(b *testing.B) {
	for _, o := range orderers {
		b.Run(o.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, p := range orderedPairs {
					o.cmp(p[0], p[1])
				}
				for _, p := range samePairs {
					o.cmp(p[0], p[1])
				}
			}
		})
	}
}
