package runtimever

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// addOutputSeeds adds the recorded version outputs of real runtime builds
// (testdata/*.txt, testdata/seeds/*.txt).
func addOutputSeeds(f *testing.F) {
	f.Helper()
	var paths []string
	for _, g := range []string{"testdata/*.txt", "testdata/seeds/*.txt"} {
		m, _ := filepath.Glob(g)
		paths = append(paths, m...)
	}
	if len(paths) == 0 {
		f.Fatal("no recorded version outputs")
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
}

// probeOutput runs what Probe does with a binary's --version output, minus
// the exec, and matches every shipped advisory: none of it may panic, the
// version parsed must be in the output, and each verdict must agree with
// the slow reading of the entry (matchAgrees).
func probeOutput(t *testing.T, component, out string) {
	ver, commit, _ := parseVersionOutput(component, out)
	if strings.ContainsAny(ver, " \t\r\n") || strings.ContainsAny(commit, " \t\r\n") {
		t.Fatalf("%s output %q: version %q, commit %q hold whitespace", component, out, ver, commit)
	}
	distro := DistroVersion(commit)
	if ver != "" && !strings.Contains(out, ver) || commit != "" && !strings.Contains(out, commit) {
		t.Fatalf("%s output %q: version %q or commit %q is not in it", component, out, ver, commit)
	}
	v, err := ParseVersion(ver)
	if err != nil {
		return
	}
	shipped, err := Shipped()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range shipped {
		matchAgrees(t, a, v, distro, commit)
	}
}

// matchAgrees checks Match against a slow reading of the entry: affected
// or backported exactly when some range holds v (a range's lower bound
// taken as its lowest pre-release when it is a release), backported only
// when a backport entry names this build, and the range's own fix never
// in it.
func matchAgrees(t *testing.T, a Advisory, v Version, distro, commit string) {
	t.Helper()
	verdict, entry := a.Match(a.Components()[0], v, distro, commit)
	in := false
	for _, lv := range a.Packages[0].Versions {
		in = in || Compare(v, lv) == 0
	}
	for _, r := range a.Ranges(a.Components()[0]) {
		lo := Version{Major: -1}
		if r.Introduced != "0" {
			lo = MustParse(r.Introduced)
			if len(lo.Pre) == 0 {
				lo.Pre = []string{"0"} // semver's lowest pre-release of lo
			}
		}
		below := r.Fixed == "" || Compare(v, MustParse(r.Fixed)) < 0
		if r.LastAffected != "" {
			below = below && Compare(v, MustParse(r.LastAffected)) <= 0
		}
		in = in || Compare(v, lo) >= 0 && below
	}
	switch {
	case in != (verdict != NotAffected):
		t.Fatalf("%s: Match(%s) = %v, but the ranges %+v say in=%v", a.ID, v.Raw, verdict, a.Packages, in)
	case verdict == Backported && !slices.Contains(a.Backports, entry):
		t.Fatalf("%s: Match(%s) backported by %q, which is not one of %v", a.ID, v.Raw, entry, a.Backports)
	case verdict == Backported && entry != distro && entry != commit && !strings.HasPrefix(entry, ">="):
		t.Fatalf("%s: backport %q names neither %q nor %q", a.ID, entry, distro, commit)
	}
}

// FuzzParseRuncVersion: `runc --version` of any build on the host.
func FuzzParseRuncVersion(f *testing.F) {
	addOutputSeeds(f)
	f.Add("runc version \ncommit: \n")
	f.Add("runc version 1.0.0-rc93\r\ncommit: 12644e614e25b05da6fd08a38ffa0cfe1903fdec\r\n")
	f.Fuzz(func(t *testing.T, out string) { probeOutput(t, Runc, out) })
}

// FuzzParseContainerdVersion: `containerd --version` of any build.
func FuzzParseContainerdVersion(f *testing.F) {
	addOutputSeeds(f)
	f.Add("containerd\ncontainerd x\ncontainerd x 1.7.0\n")
	f.Fuzz(func(t *testing.T, out string) { probeOutput(t, Containerd, out) })
}

// FuzzParseOtherComponents: `crun --version`, `dockerd --version` and
// `containerd-shim-runc-v2 -v` of any build.
func FuzzParseOtherComponents(f *testing.F) {
	addOutputSeeds(f)
	f.Add("Docker version , build \n")
	f.Add("x:\n  Version:  \n  Revision:\n")
	f.Fuzz(func(t *testing.T, out string) {
		for _, c := range []string{Crun, Dockerd, ContainerdShimRuncV2} {
			probeOutput(t, c, out)
		}
	})
}

// FuzzParseVersion: versions ordered by advisories must form a total order
// (antisymmetric, reflexive), and the canonical form must parse back to an
// equal version: a drifting order could turn a fixed runtime "affected".
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"1.1.12", "v1.7.27", "1.0.0-rc93", "1.0.0-rc92+dev", "1.4.0-rc.3", "1.1.5+ds1",
		"1.6.20~ds1", "1.0.0~rc93+ds1", "1.1.5+ds1-1+deb12u1", "99999999999999999999.0.0", "1.0", "1.0.0-beta2x"} {
		f.Add(s, "1.0.0-rc93")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		va, erra := ParseVersion(a)
		vb, errb := ParseVersion(b)
		if erra != nil || errb != nil {
			return
		}
		if Compare(va, va) != 0 {
			t.Fatalf("%q is not equal to itself", a)
		}
		// The numbers must be the input's, never silently zeroed.
		m := versionRe().FindStringSubmatch(strings.TrimSpace(a))
		for i, n := range []int{va.Major, va.Minor} {
			if digits := strings.TrimLeft(m[i+1], "0"); digits != "" && strconv.Itoa(n) != digits {
				t.Fatalf("%q parsed as %d.%d.%d", a, va.Major, va.Minor, va.Patch)
			}
		}
		if Compare(va, vb) != -Compare(vb, va) {
			t.Fatalf("Compare(%q, %q) = %d but Compare(%q, %q) = %d", a, b, Compare(va, vb), b, a, Compare(vb, va))
		}
		back, err := ParseVersion(va.String())
		if err != nil {
			t.Fatalf("%q: canonical form %q does not parse: %v", a, va.String(), err)
		}
		if Compare(back, va) != 0 {
			t.Fatalf("%q: canonical form %q orders differently", a, va.String())
		}
	})
}

// FuzzCompareDpkg: Debian versions from the binaries' commit fields; the
// comparison must terminate and be antisymmetric.
func FuzzCompareDpkg(f *testing.F) {
	f.Add("1.1.5+ds1-1+deb12u1", "1.1.5+ds1-1+deb12u2")
	f.Add("1:1.0~rc93-0ubuntu1", "1.0.0~rc93+ds1-5")
	f.Add("0000", "")
	f.Add("~~", "~")
	f.Fuzz(func(t *testing.T, a, b string) {
		if CompareDpkg(a, a) != 0 {
			t.Fatalf("%q is not equal to itself", a)
		}
		if CompareDpkg(a, b) != -CompareDpkg(b, a) {
			t.Fatalf("CompareDpkg(%q, %q) = %d, reversed %d", a, b, CompareDpkg(a, b), CompareDpkg(b, a))
		}
	})
}

// FuzzParseAdvisories: the operator's records. Whatever Parse accepts
// must be matchable without a panic (Match calls MustParse on the ranges
// ParseRecord accepted).
func FuzzParseAdvisories(f *testing.F) {
	f.Add(embeddedAdvisories)
	f.Add([]byte(`[{"id":"x","modified":"2026-12-06T00:00:00Z","summary":"s","affected":[{"package":{"ecosystem":"Go","name":"github.com/opencontainers/runc"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"1.0.0"},{"introduced":"1.1.0"},{"last_affected":"1.1.3"}]}],"versions":["1.2.0"]}],"database_specific":{"cellguard":{"class":"hazard","backports":[">=1.1.5+ds1-1"]}}}]`))
	f.Add([]byte(`[{"id":"x","modified":"2026-12-06T00:00:00Z","withdrawn":"2026-12-06T00:00:00Z"}]`))
	versions := []Version{MustParse("1.0.0-rc93"), MustParse("1.1.5"), {}}
	f.Fuzz(func(t *testing.T, b []byte) {
		advs, err := Parse(b, "fuzz")
		if err != nil {
			return
		}
		for _, a := range merge(nil, advs) {
			// each range's bounds and their pre-releases, where verdicts turn
			vs := append([]Version(nil), versions...)
			for _, r := range a.Ranges(a.Components()[0]) {
				for _, s := range []string{r.Introduced, r.Fixed, r.LastAffected} {
					if s != "" && s != "0" {
						bound := MustParse(s)
						pre := bound
						pre.Pre = []string{"rc", "1"}
						vs = append(vs, bound, pre)
					}
				}
			}
			for _, v := range vs {
				matchAgrees(t, a, v, "1.1.5+ds1-1+deb12u1", "abc")
			}
			for _, p := range []Phase{PreStart, Drain} {
				if s := a.SeverityIn(p, false); s == "" {
					t.Fatalf("%s: no %s severity", a.ID, p)
				}
			}
		}
	})
}
