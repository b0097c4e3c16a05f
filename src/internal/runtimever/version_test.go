package runtimever

import (
	"errors"
	"os/exec"
	"testing"
)

func TestParseVersion(t *testing.T) {
	testCases := []struct {
		in   string
		want string // canonical String(); "" means an error
	}{
		{"1.1.12", "1.1.12"},
		{"v1.7.27", "1.7.27"},
		{"1.0.0-rc93", "1.0.0-rc.93"},
		{"1.0.0-rc92+dev", "1.0.0-rc.92"},
		{"1.0.0-rc6+dev", "1.0.0-rc.6"},
		{"1.4.0-rc.3", "1.4.0-rc.3"},
		{"1.1.5+ds1", "1.1.5"},
		{"1.6.20~ds1", "1.6.20"},
		{"1.0.0~rc93+ds1", "1.0.0-rc.93"},
		{"1.1.5+ds1-1+deb12u1", "1.1.5"},            // Debian revision dropped
		{"1.1.12-0ubuntu2~22.04.1", "1.1.12"},       // Ubuntu revision dropped
		{"1.0.0~rc93+ds1-5+deb11u2", "1.0.0-rc.93"}, // both
		{"1.6.20+unknown", "1.6.20"},
		{"1.4", "1.4.0"},
		{"", ""},
		{"unknown", ""},
		{"(devel)", ""},
		{"spec:", ""},
		{"1.2.3-weird", ""},
	}
	for _, tc := range testCases {
		t.Run(tc.in, func(t *testing.T) {
			v, err := ParseVersion(tc.in)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("ParseVersion(%q) = %s, want an error", tc.in, v)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseVersion(%q): %v", tc.in, err)
			}
			if v.String() != tc.want {
				t.Errorf("ParseVersion(%q) = %s, want %s", tc.in, v, tc.want)
			}
		})
	}
	if _, err := ParseVersion("unknown"); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("ParseVersion(unknown) error %v is not ErrUnknownVersion", err)
	}
}

func TestCompare(t *testing.T) {
	// each pair is strictly ascending
	testCases := []struct{ lo, hi string }{
		{"1.0.0-rc92", "1.0.0-rc93"},
		{"1.0.0-rc92+dev", "1.0.0-rc93"},
		{"1.0.0-rc93", "1.0.0-rc94"},
		{"1.0.0-rc93", "1.0.0"},
		{"1.0.0-rc9", "1.0.0-rc10"}, // numeric, not lexical
		{"1.0.0-rc6", "1.0.0-rc7"},
		{"1.0.0-rc95", "1.0.0"},
		{"1.4.0-rc.2", "1.4.0-rc.3"},
		{"1.4.0-rc.3", "1.4.0"},
		{"1.4.0-alpha", "1.4.0-beta.0"},
		{"1.4.0-beta.2", "1.4.0-rc.1"},
		{"1.1.5+ds1", "1.1.6"},
		{"1.1.11", "1.1.12"},
		{"1.2.7", "1.2.8"},
		{"1.9.0", "1.10.0"},
		{"0.9.9", "1.0.0-rc1"},
		// Go pseudo-versions (GHSA and the Go vulnerability database give
		// fixes as commits): vX.Y.(Z+1)-0.TS-hash is a commit after X.Y.Z
		// and before X.Y.(Z+1); vX.Y.Z-pre.0.TS-hash one after that
		// pre-release; v0.0.0-TS-hash one with no tag before it.
		{"1.1.0", "v1.1.1-0.20220607072441-a7a45d7d2721"},
		{"v1.1.1-0.20220607072441-a7a45d7d2721", "1.1.1"},
		{"v1.1.1-0.20220607072441-a7a45d7d2721", "v1.1.1-0.20220701000000-0123456789ab"},
		{"1.0.0-rc92", "v1.0.0-rc92.0.20201006222512-5e0a7e1b0f0a"},
		{"v1.0.0-rc92.0.20201006222512-5e0a7e1b0f0a", "1.0.0-rc93"},
		{"v0.0.0-20190101000000-abcdef123456", "0.0.1"},
	}
	for _, tc := range testCases {
		t.Run(tc.lo+"<"+tc.hi, func(t *testing.T) {
			lo, hi := MustParse(tc.lo), MustParse(tc.hi)
			if Compare(lo, hi) != -1 || Compare(hi, lo) != 1 {
				t.Errorf("Compare(%s, %s) = %d, Compare(%s, %s) = %d; want -1, 1", tc.lo, tc.hi, Compare(lo, hi), tc.hi, tc.lo, Compare(hi, lo))
			}
		})
	}
	equal := [][2]string{{"1.1.5+ds1", "1.1.5"}, {"1.6.20~ds1", "v1.6.20"}, {"1.0.0-rc93", "1.0.0~rc93+ds1"}, {"1.4.0-rc.3", "1.4.0-rc3"}}
	for _, e := range equal {
		if c := Compare(MustParse(e[0]), MustParse(e[1])); c != 0 {
			t.Errorf("Compare(%s, %s) = %d, want 0", e[0], e[1], c)
		}
	}
}

func TestDistroVersion(t *testing.T) {
	testCases := []struct{ in, want string }{
		{"1.1.5+ds1-1+deb12u1", "1.1.5+ds1-1+deb12u1"},
		{"1.6.20~ds1-1+deb12u3", "1.6.20~ds1-1+deb12u3"},
		{"12644e614e25b05da6fd08a38ffa0cfe1903fdec", ""},
		{"ff819c7e9184c13b7c2607fe6c30ae19403a7aff-dirty", ""},
		{"v1.1.12-0-g51d5e94", ""},
		{"unknown", ""},
		{"", ""},
		{"1.1.12", ""}, // no revision: not a package version
	}
	for _, tc := range testCases {
		if got := DistroVersion(tc.in); got != tc.want {
			t.Errorf("DistroVersion(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if u, r := SplitDistro("1:1.1.5+ds1-1+deb12u1"); u != "1.1.5+ds1" || r != "1+deb12u1" {
		t.Errorf("SplitDistro = %q, %q", u, r)
	}
}

// TestCompareDpkg checks the hand-written dpkg ordering against dpkg
// itself, which is on every Debian host this runs on.
func TestCompareDpkg(t *testing.T) {
	pairs := [][2]string{
		{"1.1.5+ds1-1+deb12u1", "1.1.5+ds1-1+deb12u2"},
		{"1.1.5+ds1-1", "1.1.5+ds1-1+deb12u1"},
		{"1.1.5+ds1-1+deb12u1", "1.1.5+ds1-2"},
		{"1.0.0~rc93+ds1-5", "1.0.0+ds1-1"},
		{"1.6.20~ds1-1", "1.6.20-1"},
		{"1.6.20~ds1-1+deb12u3", "1.6.20~ds1-1+deb12u10"},
		{"1:1.0-1", "2.0-1"},
		{"1.1.12-0ubuntu2~22.04.1", "1.1.12-0ubuntu2"},
		{"1.1.5+ds1-1+deb12u1", "1.1.5+ds1-1+deb12u1"},
		{"1.0a-1", "1.0-1"},
		{"1.0-1", "1.0.0-1"},
	}
	dpkg, err := exec.LookPath("dpkg")
	for _, p := range pairs {
		got := CompareDpkg(p[0], p[1])
		if got != -CompareDpkg(p[1], p[0]) {
			t.Errorf("CompareDpkg(%s, %s) not antisymmetric", p[0], p[1])
		}
		if err != nil {
			continue
		}
		want := 0
		for _, op := range []struct {
			op string
			c  int
		}{{"lt", -1}, {"gt", 1}} {
			if exec.Command(dpkg, "--compare-versions", p[0], op.op, p[1]).Run() == nil {
				want = op.c
			}
		}
		if got != want {
			t.Errorf("CompareDpkg(%s, %s) = %d, dpkg says %d", p[0], p[1], got, want)
		}
	}
	if err != nil {
		t.Logf("dpkg not found (%v): only antisymmetry was checked", err)
	}
}
