package runtimever

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// ErrUnknownVersion means a binary did not say which version it is.
var ErrUnknownVersion = errors.New("runtimever: version unknown")

// Version is an upstream release version: major.minor.patch plus an
// optional pre-release ("rc93", "rc.3"). Repack and build suffixes
// ("+ds1", "~ds1", "+dev") do not change what upstream code it is, so they
// are kept in Raw but ignored when comparing.
type Version struct {
	Major, Minor, Patch int
	// Pre holds pre-release identifiers split at dots and at letter/digit
	// boundaries: "rc93" and "rc.93" both become ["rc", "93"], so runc's
	// old and new spellings order the same way.
	Pre []string
	Raw string
}

var versionRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^v?(\d+)\.(\d+)(?:\.(\d+))?(.*)$`) })

// repackRe matches Debian/RPM repack markers, which say nothing about
// upstream code: ds1, dfsg, repack2.
var repackRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(ds|dfsg|repack)\d*$`) })

// preRe matches what starts a pre-release in any spelling runtimes use.
var preRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(rc|alpha|beta|pre)`) })

// ParseVersion parses an upstream version as runc, containerd and distro
// packages print it: "1.1.12", "v1.7.27", "1.0.0-rc93", "1.0.0-rc92+dev",
// "1.4.0-rc.3", "1.1.5+ds1", "1.6.20~ds1", "1.0.0~rc93+ds1" (Debian spells
// pre-releases with ~). A Debian revision ("-1+deb12u1") must already be
// split off; see SplitDistro.
func ParseVersion(s string) (Version, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "unknown") || strings.HasPrefix(s, "(devel)") {
		return Version{}, fmt.Errorf("parse version %q: %w", s, ErrUnknownVersion)
	}
	if pv, ok := parsePseudo(s); ok {
		return pv, nil
	}
	m := versionRe().FindStringSubmatch(s)
	if m == nil {
		return Version{}, fmt.Errorf("parse version %q: not of the form major.minor[.patch]", s)
	}
	v := Version{Raw: s}
	for i, n := range []*int{&v.Major, &v.Minor, &v.Patch} {
		if m[i+1] == "" {
			continue
		}
		var err error
		// an out-of-range number would otherwise read as MaxInt and order
		// above every fix
		if *n, err = strconv.Atoi(m[i+1]); err != nil {
			return Version{}, fmt.Errorf("parse version %q: %w", s, err)
		}
	}
	rest := m[4]
	// Walk the suffix token by token: '-' and '~' may start a pre-release,
	// '+' starts build metadata (ignored), repack markers are ignored.
	for rest != "" {
		sep := rest[0]
		rest = rest[1:]
		end := strings.IndexAny(rest, "-~+")
		tok := rest
		if end >= 0 {
			tok, rest = rest[:end], rest[end:]
		} else {
			rest = ""
		}
		switch {
		case sep == '-' && tok != "" && tok[0] >= '0' && tok[0] <= '9':
			// a Debian/Ubuntu revision ("-1+deb12u1", "-0ubuntu2~22.04.1"):
			// everything after it is packaging, not upstream.
			rest = ""
		case sep == '+':
			// build metadata: "+dev", "+ds1"
		case repackRe().MatchString(tok):
		case (sep == '-' || sep == '~') && len(v.Pre) == 0 && preRe().MatchString(tok):
			v.Pre = splitPre(tok)
			// "rc.3" continues after the dot; splitPre got it all.
		case sep == '-' || sep == '~':
			return Version{}, fmt.Errorf("parse version %q: unexpected suffix %q", s, string(sep)+tok)
		}
	}
	return v, nil
}

// parsePseudo parses a Go pseudo-version, which names a commit between two
// tags: v1.1.1-0.20220607072441-a7a45d7d2721 comes after v1.1.0 and before
// v1.1.1. Its pre-release (without the commit hash, which orders nothing)
// is kept so it sorts where Go's semver puts it; read the general way, the
// "-0." would look like a Debian revision and make it equal to v1.1.1.
func parsePseudo(s string) (Version, bool) {
	vs := s
	if !strings.HasPrefix(vs, "v") {
		vs = "v" + vs
	}
	if !module.IsPseudoVersion(vs) {
		return Version{}, false
	}
	pre := strings.TrimPrefix(semver.Prerelease(vs), "-")
	pre = pre[:strings.LastIndexByte(pre, '-')] // drop the commit hash
	var v Version
	if _, err := fmt.Sscanf(semver.Canonical(strings.TrimSuffix(vs, semver.Build(vs))), "v%d.%d.%d", &v.Major, &v.Minor, &v.Patch); err != nil {
		return Version{}, false
	}
	v.Pre, v.Raw = splitPre(pre), s
	return v, true
}

// MustParse is ParseVersion for literals in data and tests.
func MustParse(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

func splitPre(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ".") {
		// split "rc93" into "rc", "93"
		i := strings.IndexFunc(part, func(r rune) bool { return r >= '0' && r <= '9' })
		if i > 0 {
			out = append(out, part[:i], part[i:])
		} else if part != "" {
			out = append(out, part)
		}
	}
	return out
}

// String is the canonical form: "1.0.0-rc.93".
func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if len(v.Pre) > 0 {
		s += "-" + strings.Join(v.Pre, ".")
	}
	return s
}

// Compare returns -1, 0 or 1 by semver precedence: a pre-release sorts
// before its release (1.0.0-rc93 < 1.0.0), numeric identifiers compare
// numerically (rc92 < rc93 < rc100), build and repack suffixes are ignored.
func Compare(a, b Version) int {
	for _, d := range [][2]int{{a.Major, b.Major}, {a.Minor, b.Minor}, {a.Patch, b.Patch}} {
		if d[0] != d[1] {
			return cmpInt(d[0], d[1])
		}
	}
	switch {
	case len(a.Pre) == 0 && len(b.Pre) == 0:
		return 0
	case len(a.Pre) == 0:
		return 1
	case len(b.Pre) == 0:
		return -1
	}
	for i := 0; i < len(a.Pre) && i < len(b.Pre); i++ {
		if c := cmpIdent(a.Pre[i], b.Pre[i]); c != 0 {
			return c
		}
	}
	return cmpInt(len(a.Pre), len(b.Pre))
}

// Less reports a < b.
func (v Version) Less(b Version) bool { return Compare(v, b) < 0 }

func cmpIdent(a, b string) int {
	an, aerr := strconv.Atoi(a)
	bn, berr := strconv.Atoi(b)
	switch {
	case aerr == nil && berr == nil:
		return cmpInt(an, bn)
	case aerr == nil:
		return -1 // numeric identifiers sort before alphanumeric ones
	case berr == nil:
		return 1
	}
	return strings.Compare(a, b)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// gitDescribeRe and hashRe recognise commit fields that are not a
// distribution's package version.
var (
	hashRe        = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{7,40}(-dirty)?$`) })
	gitDescribeRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^v?\d+\.\d+.*-\d+-g[0-9a-f]+(-dirty)?$`) })
)

// DistroVersion returns s when it looks like a distribution package
// version (Debian's runc prints "commit: 1.1.5+ds1-1+deb12u1", Debian's
// containerd prints it as the revision), or "" for git hashes, git describe
// output and "unknown".
func DistroVersion(s string) string {
	s = strings.TrimSpace(s)
	switch {
	case s == "", strings.EqualFold(s, "unknown"), hashRe().MatchString(s), gitDescribeRe().MatchString(s):
		return ""
	case s[0] < '0' || s[0] > '9':
		return ""
	case !strings.Contains(s, "-"):
		// a distro version always has a revision after the last '-'
		return ""
	}
	return s
}

// SplitDistro splits a Debian-style package version "1.1.5+ds1-1+deb12u1"
// into its upstream part "1.1.5+ds1" and revision "1+deb12u1". An epoch
// ("1:") is dropped from the upstream part.
func SplitDistro(s string) (upstream, revision string) {
	if i := strings.Index(s, ":"); i >= 0 {
		s = s[i+1:]
	}
	i := strings.LastIndex(s, "-")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i+1:]
}
