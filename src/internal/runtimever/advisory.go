package runtimever

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
)

//go:embed advisories.json
var embeddedAdvisories []byte

// Classes: what a matching advisory means for a rollout. The check applies
// them; which ids an operator promotes is policy, set at the edge.
const (
	// ClassHazard is a flaw that breaks cells by itself (runc init hangs,
	// devices briefly denied, exec failing): it blocks pre-start while its
	// conditions hold on the host.
	ClassHazard = "hazard"
	// ClassSecurity is a flaw an attacker must exploit: it is reported and
	// blocks only when the operator promotes its id.
	ClassSecurity = "security"
)

// Conditions an advisory may name. Each is judged on the host by the
// runtime-versions check; unknown names are refused when data is loaded,
// so a typo cannot silently turn a hazard into a warning.
const (
	// ConditionPipeSoftLimit holds when fs.pipe-user-pages-soft is
	// non-zero: a user over the limit gets small pipes.
	ConditionPipeSoftLimit = "pipe_soft_limit_active"
	// ConditionCrunLibkrun holds when the probed crun was built with
	// libkrun: its `--version` lists +LIBKRUN among its features.
	ConditionCrunLibkrun = "crun_built_with_libkrun"
	// ConditionCgroupV1Devices holds when the devices controller is a v1
	// hierarchy (legacy or hybrid layout).
	ConditionCgroupV1Devices = "cgroup_v1_devices"
	// ConditionCgroupV2 holds on a unified (v2 only) layout.
	ConditionCgroupV2 = "cgroup_v2"
)

// Conditions lists the condition names, for errors and docs.
var Conditions = []string{ConditionPipeSoftLimit, ConditionCrunLibkrun, ConditionCgroupV1Devices, ConditionCgroupV2}

// Impacts say what a flaw lets happen (informative; the class decides).
var Impacts = []string{"escape", "hang", "limited-host-write", "isolation", "denial-of-service", "disclosure", "integrity", "malfunction"}

// Phase and Severity spell an advisory's severity in each of the
// validator's phases; the runtime-versions check maps them onto the
// validator's own.
type (
	Phase    string
	Severity string
)

// The phases and severities an advisory may have.
const (
	PreStart         Phase    = "pre-start"
	Drain            Phase    = "drain"
	SeverityBlocking Severity = "blocking"
	SeverityWarning  Severity = "warning"
	SeverityInfo     Severity = "info"
)

// Range is one affected interval of an OSV range: Introduced <= v <
// Fixed, or <= LastAffected. Introduced "0" means every earlier version;
// an introduced release also holds its own pre-releases (belowIntroduced);
// neither bound means no fix is released.
type Range struct {
	Introduced   string `json:"introduced"`
	Fixed        string `json:"fixed,omitempty"`
	LastAffected string `json:"last_affected,omitempty"`
}

// Package is what an advisory says about one probed component.
type Package struct {
	Component string
	Ranges    []Range
	// Versions are affected versions listed one by one (OSV's versions).
	Versions []Version
}

// Advisory is one OSV record, as runtime-versions matches it.
type Advisory struct {
	ID      string
	Aliases []string
	// Class is ClassHazard or ClassSecurity; Impact what the flaw lets
	// happen (one of Impacts, may be empty).
	Class      string
	Impact     string
	Conditions []string
	Summary    string
	Details    string
	Packages   []Package
	References []string
	// Backports are distribution builds known to carry the fix although
	// their upstream version is in an affected range. An entry is an exact
	// package version ("1.1.5+ds1-1+deb12u1", matched against the version
	// the binary reports as its commit/revision), or ">=" plus a Debian
	// version: that upload and later revisions of the same upstream
	// version, by dpkg ordering.
	Backports []string
	// Withdrawn records drop a record of the same id (OSV's withdrawn).
	Withdrawn bool
}

// Components lists the components the advisory names, in order.
func (a Advisory) Components() []string {
	var out []string
	for _, p := range a.Packages {
		if !slices.Contains(out, p.Component) {
			out = append(out, p.Component)
		}
	}
	return out
}

// Ranges lists the affected ranges of component.
func (a Advisory) Ranges(component string) []Range {
	var out []Range
	for _, p := range a.Packages {
		if p.Component == component {
			out = append(out, p.Ranges...)
		}
	}
	return out
}

// FixedIn lists the releases that fix the advisory, for the operator.
func (a Advisory) FixedIn() []string {
	var out []string
	for _, p := range a.Packages {
		for _, r := range p.Ranges {
			if r.Fixed != "" && !slices.Contains(out, r.Fixed) {
				out = append(out, r.Fixed)
			}
		}
	}
	return out
}

// SeverityIn is the advisory's severity in phase p when it matches and its
// conditions hold: a hazard, or a security advisory the operator promoted,
// blocks pre-start; the rest warn. At drain each is one step milder: the
// old runtime is on its way out and blocking would stop the update that
// replaces it.
func (a Advisory) SeverityIn(p Phase, promoted bool) Severity {
	blocks := a.Class == ClassHazard || promoted
	switch {
	case p == Drain && blocks:
		return SeverityWarning
	case p == Drain:
		return SeverityInfo
	case blocks:
		return SeverityBlocking
	}
	return SeverityWarning
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

// Match reports whether the advisory applies to a component binary of
// version v, whose distribution package version (may be empty) is distro
// and whose commit field is commit. The returned string is the backport
// entry that matched, for evidence.
func (a Advisory) Match(component string, v Version, distro, commit string) (Verdict, string) {
	affected := false
	for _, p := range a.Packages {
		if p.Component == component && p.affects(v) {
			affected = true
			break
		}
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

func (p Package) affects(v Version) bool {
	for _, lv := range p.Versions {
		if Compare(v, lv) == 0 {
			return true
		}
	}
	for _, r := range p.Ranges {
		if r.Introduced != "0" && belowIntroduced(v, MustParse(r.Introduced)) {
			continue
		}
		if r.Fixed != "" && !v.Less(MustParse(r.Fixed)) {
			continue
		}
		if r.LastAffected != "" && MustParse(r.LastAffected).Less(v) {
			continue
		}
		return true
	}
	return false
}

// belowIntroduced reports whether v comes before a range that starts at
// intro. An introduced release X.Y.Z also holds its own pre-releases
// (X.Y.Z-beta.0 .. -rc.N), which semver orders below it: they are built
// toward X.Y.Z and carry what it carries. containerd's ranges start at
// each series' X.Y.0, so without this its betas and rcs matched nothing.
// OSV's own rule is stricter (>= introduced); for records from OSV exports
// this errs toward reporting.
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

// Parse decodes and judges a JSON array of OSV records; name is used in
// errors. Ids must be unique.
func Parse(b []byte, name string) ([]Advisory, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(b, &raws); err != nil {
		return nil, fmt.Errorf("parse advisories %s: want a JSON array of OSV records: %w", name, err)
	}
	out := make([]Advisory, 0, len(raws))
	seen := map[string]bool{}
	for i, raw := range raws {
		a, err := ParseRecord(raw)
		if err != nil {
			return nil, fmt.Errorf("advisories %s: [%d]: %w", name, i, err)
		}
		if seen[a.ID] {
			return nil, fmt.Errorf("advisories %s: id %q listed twice", name, a.ID)
		}
		seen[a.ID] = true
		out = append(out, a)
	}
	return out, nil
}

// Shipped returns the advisory list embedded in the release.
func Shipped() ([]Advisory, error) {
	advs, err := shipped()
	return slices.Clone(advs), err
}

// shipped parses the embedded list once: config judges every Load against
// its ids, and watch matches it on every scan.
var shipped = sync.OnceValues(func() ([]Advisory, error) { return Parse(embeddedAdvisories, "(shipped)") })

// Load returns the shipped list merged with the operator's records (already
// parsed, by config): an operator's record replaces a shipped one of the
// same id, and a withdrawn one removes it.
func Load(operator []Advisory) ([]Advisory, error) {
	shipped, err := Shipped()
	if err != nil {
		return nil, err
	}
	return merge(shipped, operator), nil
}

func merge(base, over []Advisory) []Advisory {
	byID := map[string]Advisory{}
	var order []string
	for _, a := range append(slices.Clone(base), over...) {
		if _, ok := byID[a.ID]; !ok {
			order = append(order, a.ID)
		}
		byID[a.ID] = a
	}
	var out []Advisory
	for _, id := range order {
		if a := byID[id]; !a.Withdrawn {
			out = append(out, a)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		return slices.Index(Components, firstComponent(out[i])) < slices.Index(Components, firstComponent(out[j]))
	})
	return out
}

func firstComponent(a Advisory) string {
	if len(a.Packages) == 0 {
		return ""
	}
	return a.Packages[0].Component
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

var errNoText = errors.New("summary or details is required")
