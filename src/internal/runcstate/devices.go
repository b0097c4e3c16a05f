package runcstate

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// DeviceRule is one of runc's device cgroup rules, as state.json keeps it
// (opencontainers/cgroups devices/config Rule): the type is a rune written
// as a number ('a' 97, 'b' 98, 'c' 99), -1 is the wildcard.
type DeviceRule struct {
	Type        rune   `json:"type"`
	Major       int64  `json:"major"`
	Minor       int64  `json:"minor"`
	Permissions string `json:"permissions"`
	Allow       bool   `json:"allow"`
}

// String is the rule as devices.list and devices.allow write it: "c 1:3 rwm".
func (r DeviceRule) String() string {
	num := func(n int64) string {
		if n < 0 {
			return "*"
		}
		return strconv.FormatInt(n, 10)
	}
	return fmt.Sprintf("%c %s:%s %s", r.Type, num(r.Major), num(r.Minor), r.Permissions)
}

// DecodeDevices decodes config.cgroups.devices; empty input is no rules.
func DecodeDevices(raw json.RawMessage) ([]DeviceRule, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var rules []DeviceRule
	if err := json.Unmarshal(raw, &rules); err != nil {
		return nil, fmt.Errorf("decode device rules: %w", err)
	}
	return rules, nil
}
