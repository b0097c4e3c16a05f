package runtimever

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/safefile"
)

//go:embed advisories.json
var embeddedAdvisories []byte

// Conditions an advisory may name. Each is evaluated on the host by the
// runtime-versions check; unknown names are rejected when data is loaded,
// so a typo cannot silently turn a blocking entry into a warning.
const (
	// ConditionPipeSoftLimit holds when fs.pipe-user-pages-soft is
	// non-zero: a user over the limit gets small pipes.
	ConditionPipeSoftLimit = "pipe_soft_limit_active"
	// ConditionCrunLibkrun holds when the probed crun was built with
	// libkrun: its `--version` lists +LIBKRUN among its features.
	ConditionCrunLibkrun = "crun_built_with_libkrun"
)

var knownConditions = map[string]bool{ConditionPipeSoftLimit: true, ConditionCrunLibkrun: true}

// Phase and Severity spell an advisory's severity in each of the
// validator's phases as advisories.json does; the runtime-versions check
// maps them onto the validator's own.
type (
	Phase    string
	Severity string
)

// The phases and severities an advisory may name.
const (
	PreStart         Phase    = "pre-start"
	Drain            Phase    = "drain"
	SeverityBlocking Severity = "blocking"
	SeverityWarning  Severity = "warning"
	SeverityInfo     Severity = "info"
)

// Range is one affected interval: Introduced <= v < Fixed. Introduced "0"
// means every earlier version; an introduced release also holds its own
// pre-releases (belowIntroduced); an empty Fixed means no fix is released.
type Range struct {
	// Series is the release series the range's fix belongs to
	// ("1.7", "20.10"); informative, checked by the shipped data's tests.
	Series     string `json:"series,omitempty"`
	Introduced string `json:"introduced"`
	Fixed      string `json:"fixed,omitempty"`
}

// Advisory is one entry of advisories.json.
type Advisory struct {
	ID        string `json:"id"`
	Component string `json:"component"` // one of Components
	// Class is what the flaw lets happen (class.go); the shipped data's
	// severity follows from it (docs/validator.md, "Severity rule").
	Class    string  `json:"class,omitempty"`
	Summary  string  `json:"summary"`
	Affected []Range `json:"affected"`
	// Backports are distribution builds known to carry the fix although
	// their upstream version is in an affected range. An entry is an exact
	// package version ("1.1.5+ds1-1+deb12u1", matched against the version
	// the binary reports as its commit/revision), or ">=" plus a Debian
	// version: that upload and later revisions of the same upstream
	// version, by dpkg ordering.
	Backports []string `json:"backports,omitempty"`
	// Severity per phase when the advisory matches; a missing phase means
	// warning.
	Severity map[Phase]Severity `json:"severity"`
	// Condition, when set, names a host condition under which the
	// advisory bites; when it does not hold, the entry is at most a
	// warning.
	Condition  string   `json:"condition,omitempty"`
	References []string `json:"references"`
	Note       string   `json:"note,omitempty"`
	// Disabled drops an entry of the same id from the shipped list (in an
	// operator's file).
	Disabled bool `json:"disabled,omitempty"`
}

// File is the advisories.json document.
type File struct {
	Schema     int        `json:"schema"`
	Note       string     `json:"note,omitempty"`
	Advisories []Advisory `json:"advisories"`
}

// SeverityIn returns the entry's severity in phase p.
func (a Advisory) SeverityIn(p Phase) Severity {
	if s, ok := a.Severity[p]; ok {
		return s
	}
	return SeverityWarning
}

// FixedIn lists the releases that fix the entry, for the operator.
func (a Advisory) FixedIn() []string {
	var out []string
	for _, r := range a.Affected {
		if r.Fixed != "" {
			out = append(out, r.Fixed)
		}
	}
	return out
}

// Validate checks one entry.
func (a Advisory) Validate() error {
	if a.ID == "" {
		return errors.New("advisory without id")
	}
	if a.Disabled {
		return nil
	}
	if !KnownComponent(a.Component) {
		return fmt.Errorf("advisory %s: component %q: want one of %s", a.ID, a.Component, strings.Join(Components, ", "))
	}
	if _, ok := LookupClass(a.Class); a.Class != "" && !ok {
		return fmt.Errorf("advisory %s: class %q: want one of %s", a.ID, a.Class, strings.Join(ClassNames(), ", "))
	}
	if a.Summary == "" || len(a.References) == 0 {
		return fmt.Errorf("advisory %s: summary and references are required", a.ID)
	}
	if len(a.Affected) == 0 {
		return fmt.Errorf("advisory %s: no affected range", a.ID)
	}
	for i, r := range a.Affected {
		if err := r.checkSeries(); err != nil {
			return fmt.Errorf("advisory %s: affected[%d]: %w", a.ID, i, err)
		}
		var lo Version
		if r.Introduced != "0" {
			v, err := ParseVersion(r.Introduced)
			if err != nil {
				return fmt.Errorf("advisory %s: affected[%d].introduced: %w", a.ID, i, err)
			}
			lo = v
		}
		if r.Fixed != "" {
			hi, err := ParseVersion(r.Fixed)
			if err != nil {
				return fmt.Errorf("advisory %s: affected[%d].fixed: %w", a.ID, i, err)
			}
			if !lo.Less(hi) {
				return fmt.Errorf("advisory %s: affected[%d]: introduced %s is not below fixed %s", a.ID, i, r.Introduced, r.Fixed)
			}
		}
	}
	for p, s := range a.Severity {
		if p != PreStart && p != Drain {
			return fmt.Errorf("advisory %s: severity phase %q: want pre-start or drain", a.ID, p)
		}
		if s != SeverityBlocking && s != SeverityWarning && s != SeverityInfo {
			return fmt.Errorf("advisory %s: severity %q: want blocking, warning or info", a.ID, s)
		}
	}
	if a.Condition != "" && !knownConditions[a.Condition] {
		return fmt.Errorf("advisory %s: unknown condition %q", a.ID, a.Condition)
	}
	for _, b := range a.Backports {
		if strings.TrimSpace(strings.TrimPrefix(b, ">=")) == "" {
			return fmt.Errorf("advisory %s: empty backport entry", a.ID)
		}
	}
	return nil
}

// Verdict is how an advisory relates to one probed binary.
type Verdict int

const (
	NotAffected Verdict = iota
	Affected
	// Backported: the upstream version is affected but the distribution
	// build is listed as carrying the fix.
	Backported
)

// Match reports whether the advisory applies to a binary of version v,
// whose distribution package version (may be empty) is distro and whose
// commit field is commit. The returned string is the backport entry that
// matched, for evidence.
func (a Advisory) Match(v Version, distro, commit string) (Verdict, string) {
	affected := false
	for _, r := range a.Affected {
		if r.Introduced != "0" && belowIntroduced(v, MustParse(r.Introduced)) {
			continue
		}
		if r.Fixed != "" && !v.Less(MustParse(r.Fixed)) {
			continue
		}
		affected = true
		break
	}
	if !affected {
		return NotAffected, ""
	}
	for _, b := range a.Backports {
		if matchBackport(b, distro, commit) {
			return Backported, b
		}
	}
	return Affected, ""
}

// belowIntroduced reports whether v comes before a range that starts at
// intro. An introduced release X.Y.Z also holds its own pre-releases
// (X.Y.Z-beta.0 .. -rc.N), which semver orders below it: they are built
// toward X.Y.Z and carry what it carries. containerd's ranges start at
// each series' X.Y.0, so without this its betas and rcs matched nothing.
func belowIntroduced(v, intro Version) bool {
	if len(intro.Pre) == 0 {
		v = Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch}
	}
	return v.Less(intro)
}

func matchBackport(entry, distro, commit string) bool {
	if min, ok := strings.CutPrefix(entry, ">="); ok {
		min = strings.TrimSpace(min)
		if distro == "" {
			return false
		}
		du, _ := SplitDistro(distro)
		mu, _ := SplitDistro(min)
		// later revisions of the same upstream carry the fix; a different
		// upstream version is judged by the affected ranges alone
		return du == mu && CompareDpkg(distro, min) >= 0
	}
	return entry == distro || (commit != "" && entry == commit)
}

// Parse decodes and validates advisory data; name is used in errors.
func Parse(b []byte, name string) (File, error) {
	var f File
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return File{}, fmt.Errorf("parse advisories %s: %w", name, err)
	}
	if f.Schema != 1 {
		return File{}, fmt.Errorf("parse advisories %s: schema %d: want 1", name, f.Schema)
	}
	seen := map[string]bool{}
	for _, a := range f.Advisories {
		if err := a.Validate(); err != nil {
			return File{}, fmt.Errorf("advisories %s: %w", name, err)
		}
		if seen[a.ID] {
			return File{}, fmt.Errorf("advisories %s: id %q listed twice", name, a.ID)
		}
		seen[a.ID] = true
	}
	return f, nil
}

// Shipped returns the advisory list embedded in the release.
func Shipped() ([]Advisory, error) {
	f, err := Parse(embeddedAdvisories, "(shipped)")
	if err != nil {
		return nil, err
	}
	return f.Advisories, nil
}

// Load returns the shipped list merged with the operator's file at path
// (host path; read under root). Entries of the file replace shipped
// entries of the same id; "disabled": true removes one. On a real root
// ("" or "/") it is read through safefile.OpenTrusted: owned by root and
// writable by no one else, and so is every directory and symlink on the
// way to it: whoever can edit the list can silence a blocking check.
func Load(root, path string) ([]Advisory, error) {
	shipped, err := Shipped()
	if err != nil {
		return nil, err
	}
	if path == "" {
		return shipped, nil
	}
	f, err := readOperatorFile(root, path)
	if err != nil {
		return nil, err
	}
	return merge(shipped, f.Advisories), nil
}

// readOperatorFile reads and parses the operator's advisories file at path
// under root, refusing an untrusted one on a real root (see Load).
func readOperatorFile(root, path string) (File, error) {
	host := filepath.Join(root, path)
	open := os.Open // a fixture tree: no root decision rests on it
	if hostroot.IsLive(root) {
		open = safefile.OpenTrusted
	}
	f, err := open(host)
	if errors.Is(err, safefile.ErrUntrusted) {
		return File{}, fmt.Errorf("advisories: %w", err)
	} else if err != nil {
		return File{}, fmt.Errorf("read advisories %s: %w", host, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return File{}, fmt.Errorf("read advisories %s: %w", host, err)
	}
	return Parse(b, host)
}

func merge(base, over []Advisory) []Advisory {
	byID := map[string]Advisory{}
	var order []string
	for _, a := range base {
		byID[a.ID] = a
		order = append(order, a.ID)
	}
	for _, a := range over {
		if _, ok := byID[a.ID]; !ok {
			order = append(order, a.ID)
		}
		byID[a.ID] = a
	}
	var out []Advisory
	for _, id := range order {
		if a := byID[id]; !a.Disabled {
			out = append(out, a)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Component < out[j].Component })
	return out
}

// PipeSoftLimit reads fs.pipe-user-pages-soft under root: the number of
// pipe pages a user may hold before new pipes shrink to one page; 0 means
// no limit.
func PipeSoftLimit(root string) (int64, error) {
	p := filepath.Join(root, "/proc/sys/fs/pipe-user-pages-soft")
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, fmt.Errorf("read sysctl %s: %w", p, err)
	}
	var n int64
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &n); err != nil {
		return 0, fmt.Errorf("parse sysctl %s %q: %w", p, bytes.TrimSpace(b), err)
	}
	return n, nil
}
