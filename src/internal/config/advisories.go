package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/cloudfoundry/cellguard/src/internal/runtimever"
)

// OSVRecord is one OSV record as the job renders it; runtimever judges its
// content.
type OSVRecord = json.RawMessage

var osvRecordType = reflect.TypeOf(OSVRecord{})

// OperatorAdvisories parses validator.advisories; Load has judged them, so
// an error here means the config was built in code and not validated.
func (v Validator) OperatorAdvisories() ([]runtimever.Advisory, error) {
	out := make([]runtimever.Advisory, 0, len(v.Advisories))
	for i, raw := range v.Advisories {
		a, err := runtimever.ParseRecord(raw)
		if err != nil {
			return nil, fmt.Errorf("validator.advisories[%d]: %w", i, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// judgeAdvisories: each operator record is a valid OSV record of a
// runtime cellguard probes, ids are unique, and every promoted id names an
// advisory (shipped or the operator's), so a typo cannot leave a flaw the
// operator meant to block reported only.
func (c *Config) judgeAdvisories(ps *problems) {
	known := map[string]bool{}
	if shipped, err := runtimever.Shipped(); err == nil {
		for _, a := range shipped {
			known[a.ID] = true
		}
	}
	seen := map[string]bool{}
	for i, raw := range c.Validator.Advisories {
		key := fmt.Sprintf("validator.advisories[%d]", i)
		a, err := runtimever.ParseRecord(raw)
		switch {
		case err != nil:
			ps.addErr(key, err)
			continue
		case seen[a.ID]:
			ps.add(key+".id", quote(a.ID), "want an id listed once")
			continue
		}
		seen[a.ID] = true
		if a.Withdrawn {
			delete(known, a.ID)
		} else {
			known[a.ID] = true
		}
	}
	for i, id := range c.Validator.BlockingAdvisories {
		if !known[id] {
			ps.add(fmt.Sprintf("validator.blocking_advisories[%d]", i), quote(id),
				"want the id of a shipped advisory (`cellguard advisories --shipped-only`) or of one in validator.advisories")
		} else if slices.Index(c.Validator.BlockingAdvisories, id) != i {
			ps.add(fmt.Sprintf("validator.blocking_advisories[%d]", i), quote(id), "want an id listed once")
		}
	}
}
