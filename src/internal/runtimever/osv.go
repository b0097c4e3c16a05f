package runtimever

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// record is an OSV record (https://ossf.github.io/osv-schema/, 1.6): the
// fields the schema defines, decoded strictly so a misspelt one is refused.
// database_specific is free for each database; cellguard reads its
// "cellguard" key only, so records exported from GHSA or osv.dev keep
// theirs.
type record struct {
	SchemaVersion    string            `json:"schema_version"`
	ID               string            `json:"id"`
	Modified         string            `json:"modified"`
	Published        string            `json:"published"`
	Withdrawn        string            `json:"withdrawn"`
	Aliases          []string          `json:"aliases"`
	Related          []string          `json:"related"`
	Upstream         []string          `json:"upstream"`
	Summary          string            `json:"summary"`
	Details          string            `json:"details"`
	Severity         []json.RawMessage `json:"severity"`
	Affected         []osvAffected     `json:"affected"`
	References       []osvReference    `json:"references"`
	Credits          []json.RawMessage `json:"credits"`
	DatabaseSpecific json.RawMessage   `json:"database_specific"`
}

type osvAffected struct {
	Package           osvPackage        `json:"package"`
	Severity          []json.RawMessage `json:"severity"`
	Ranges            []osvRange        `json:"ranges"`
	Versions          []string          `json:"versions"`
	EcosystemSpecific json.RawMessage   `json:"ecosystem_specific"`
	DatabaseSpecific  json.RawMessage   `json:"database_specific"`
}

type osvPackage struct {
	Ecosystem string `json:"ecosystem"`
	Name      string `json:"name"`
	Purl      string `json:"purl"`
}

type osvRange struct {
	Type             string              `json:"type"`
	Repo             string              `json:"repo"`
	Events           []map[string]string `json:"events"`
	DatabaseSpecific json.RawMessage     `json:"database_specific"`
}

type osvReference struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// cellguardSpecific is database_specific.cellguard of a record.
type cellguardSpecific struct {
	Class      string   `json:"class"`
	Impact     string   `json:"impact"`
	Conditions []string `json:"conditions"`
	Backports  []string `json:"backports"`
}

// affectedSpecific is affected[].database_specific.cellguard: which of the
// binaries built from the package the advisory is about, when not the
// package's main one (containerd's runc shim).
type affectedSpecific struct {
	Binaries []string `json:"binaries"`
}

// osvPackage identifies the component binaries built from a package. crun
// is C and has no OSV ecosystem; cellguard names it by its repository, as
// OSV's GIT ranges do.
var packageComponents = map[osvPackage][]string{
	{Ecosystem: "Go", Name: "github.com/opencontainers/runc"}:      {Runc},
	{Ecosystem: "Go", Name: "github.com/containerd/containerd"}:    {Containerd},
	{Ecosystem: "Go", Name: "github.com/containerd/containerd/v2"}: {Containerd},
	{Ecosystem: "Go", Name: "github.com/docker/docker"}:            {Dockerd},
	{Ecosystem: "Go", Name: "github.com/moby/moby"}:                {Dockerd},
	{Ecosystem: "GIT", Name: "https://github.com/containers/crun"}: {Crun},
}

// KnownPackages lists the OSV packages cellguard matches, for errors and
// docs.
func KnownPackages() []string {
	var out []string
	for p := range packageComponents {
		out = append(out, p.Ecosystem+"/"+p.Name)
	}
	slices.Sort(out)
	return out
}

// ParseRecord decodes and judges one OSV record. Affected packages
// cellguard does not probe are skipped (an export may name several), but a
// record must name at least one it does, so a misspelt package cannot
// match nothing silently.
func ParseRecord(raw []byte) (Advisory, error) {
	var r record
	if err := strictDecode(raw, &r); err != nil {
		return Advisory{}, fmt.Errorf("OSV record: %w", err)
	}
	if r.ID == "" {
		return Advisory{}, errors.New("OSV record: id is required")
	}
	fail := func(format string, args ...any) (Advisory, error) {
		return Advisory{}, fmt.Errorf("advisory %s: "+format, append([]any{r.ID}, args...)...)
	}
	if _, err := time.Parse(time.RFC3339, r.Modified); err != nil {
		return fail("modified %q: want an RFC 3339 time (OSV requires it)", r.Modified)
	}
	a := Advisory{ID: r.ID, Aliases: r.Aliases, Summary: r.Summary, Details: r.Details, Withdrawn: r.Withdrawn != ""}
	if a.Withdrawn {
		return a, nil
	}
	cg, err := readCellguardSpecific(r.DatabaseSpecific)
	if err != nil {
		return fail("database_specific.cellguard: %v", err)
	}
	a.Class, a.Impact, a.Conditions, a.Backports = cg.Class, cg.Impact, cg.Conditions, cg.Backports
	if a.Class == "" {
		// records from OSV exports say nothing of cellguard: report them
		a.Class = ClassSecurity
	}
	if err := a.checkSpecific(); err != nil {
		return fail("database_specific.cellguard.%v", err)
	}
	if a.Summary == "" && a.Details == "" {
		return fail("%v", errNoText)
	}
	for _, ref := range r.References {
		if ref.URL == "" {
			return fail("references: an entry without url")
		}
		a.References = append(a.References, ref.URL)
	}
	for i, af := range r.Affected {
		ps, err := readAffected(af)
		if err != nil {
			return fail("affected[%d]: %v", i, err)
		}
		a.Packages = append(a.Packages, ps...)
	}
	if len(a.Packages) == 0 {
		return fail("affected names no package cellguard probes: want one of %s", strings.Join(KnownPackages(), ", "))
	}
	return a, nil
}

func (a Advisory) checkSpecific() error {
	if a.Class != ClassHazard && a.Class != ClassSecurity {
		return fmt.Errorf("class %q: want %s or %s", a.Class, ClassHazard, ClassSecurity)
	}
	if a.Impact != "" && !slices.Contains(Impacts, a.Impact) {
		return fmt.Errorf("impact %q: want one of %s", a.Impact, strings.Join(Impacts, ", "))
	}
	for _, c := range a.Conditions {
		if !slices.Contains(Conditions, c) {
			return fmt.Errorf("conditions: unknown condition %q: want one of %s", c, strings.Join(Conditions, ", "))
		}
	}
	for _, b := range a.Backports {
		if strings.TrimSpace(strings.TrimPrefix(b, ">=")) == "" {
			return errors.New("backports: an empty entry")
		}
	}
	return nil
}

func readCellguardSpecific(raw json.RawMessage) (cellguardSpecific, error) {
	var cg cellguardSpecific
	var ds map[string]json.RawMessage
	if len(raw) == 0 {
		return cg, nil
	}
	if err := json.Unmarshal(raw, &ds); err != nil {
		return cg, fmt.Errorf("want an object: %w", err)
	}
	if b, ok := ds["cellguard"]; ok {
		if err := strictDecode(b, &cg); err != nil {
			return cg, err
		}
	}
	return cg, nil
}

// readAffected turns one affected entry into the packages of the
// components it names: none for a package cellguard does not probe.
func readAffected(af osvAffected) ([]Package, error) {
	if af.Package.Ecosystem == "" || af.Package.Name == "" {
		return nil, errors.New("package: ecosystem and name are required")
	}
	comps, ok := packageComponents[osvPackage{Ecosystem: af.Package.Ecosystem, Name: af.Package.Name}]
	if !ok {
		return nil, nil
	}
	var spec struct {
		Cellguard affectedSpecific `json:"cellguard"`
	}
	if len(af.DatabaseSpecific) > 0 {
		var ds map[string]json.RawMessage
		if err := json.Unmarshal(af.DatabaseSpecific, &ds); err != nil {
			return nil, fmt.Errorf("database_specific: want an object: %w", err)
		}
		if b, ok := ds["cellguard"]; ok {
			if err := strictDecode(b, &spec.Cellguard); err != nil {
				return nil, fmt.Errorf("database_specific.cellguard: %w", err)
			}
		}
	}
	if bins := spec.Cellguard.Binaries; len(bins) > 0 {
		for _, b := range bins {
			if !KnownComponent(b) {
				return nil, fmt.Errorf("database_specific.cellguard.binaries: %q: want one of %s", b, strings.Join(Components, ", "))
			}
		}
		comps = bins
	}
	p := Package{}
	for i, rg := range af.Ranges {
		rs, err := readRange(rg)
		if err != nil {
			return nil, fmt.Errorf("ranges[%d]: %w", i, err)
		}
		p.Ranges = append(p.Ranges, rs...)
	}
	for i, s := range af.Versions {
		v, err := ParseVersion(s)
		if err != nil {
			return nil, fmt.Errorf("versions[%d]: %w", i, err)
		}
		p.Versions = append(p.Versions, v)
	}
	if len(p.Ranges) == 0 && len(p.Versions) == 0 {
		return nil, errors.New("no SEMVER or ECOSYSTEM range and no versions: nothing to compare a binary's version with")
	}
	out := make([]Package, 0, len(comps))
	for _, c := range comps {
		cp := p
		cp.Component = c
		out = append(out, cp)
	}
	return out, nil
}

// readRange turns an OSV range's events into intervals. GIT ranges name
// commits, which a binary's version cannot be placed among: skipped.
func readRange(rg osvRange) ([]Range, error) {
	switch rg.Type {
	case "GIT":
		return nil, nil
	case "SEMVER", "ECOSYSTEM":
	default:
		return nil, fmt.Errorf("type %q: want SEMVER, ECOSYSTEM or GIT", rg.Type)
	}
	var out []Range
	var cur *Range
	for i, ev := range rg.Events {
		if len(ev) != 1 {
			return nil, fmt.Errorf("events[%d]: want exactly one of introduced, fixed, last_affected", i)
		}
		for k, s := range ev {
			if k != "introduced" && k != "fixed" && k != "last_affected" {
				return nil, fmt.Errorf("events[%d]: %q: want introduced, fixed or last_affected (limit is for GIT ranges)", i, k)
			}
			if !(k == "introduced" && s == "0") {
				if _, err := ParseVersion(s); err != nil {
					return nil, fmt.Errorf("events[%d].%s: %w", i, k, err)
				}
			}
			switch {
			case k == "introduced":
				out = append(out, Range{Introduced: s})
				cur = &out[len(out)-1]
			case cur == nil || cur.Fixed != "" || cur.LastAffected != "":
				return nil, fmt.Errorf("events[%d]: %s without an introduced before it", i, k)
			case k == "fixed":
				cur.Fixed = s
			default:
				cur.LastAffected = s
			}
		}
	}
	for i, r := range out {
		if r.Introduced == "0" || r.Fixed == "" {
			continue
		}
		if !MustParse(r.Introduced).Less(MustParse(r.Fixed)) {
			return nil, fmt.Errorf("range %d: introduced %s is not below fixed %s", i, r.Introduced, r.Fixed)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("events: no introduced")
	}
	return out, nil
}

func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the object")
	}
	return nil
}
