package runcstate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// State is the part of runc's state.json the validator reads.
type State struct {
	ID             string `json:"id"`
	InitProcessPid int    `json:"init_process_pid"`
	// InitProcessStart is /proc/<pid>/stat field 22 of init when runc
	// started it; a live pid with another start time is a reused pid.
	InitProcessStart StartTime         `json:"init_process_start"`
	Created          time.Time         `json:"created"`
	Rootless         bool              `json:"rootless"`
	CgroupPaths      map[string]string `json:"cgroup_paths"`
	NamespacePaths   map[string]string `json:"namespace_paths"`
	Config           Config            `json:"config"`
}

// Config is the part of libcontainer's configs.Config we read.
type Config struct {
	Cgroups    *Cgroups    `json:"cgroups"`
	Namespaces []Namespace `json:"namespaces"`
}

// Cgroups is the part of configs.Cgroup we read: the requested path, or the
// systemd driver's parent/scope naming.
type Cgroups struct {
	Path        string `json:"path"`
	Name        string `json:"name"`
	Parent      string `json:"parent"`
	ScopePrefix string `json:"scope_prefix"`
	Systemd     bool   `json:"Systemd"`
	// Devices is the device rules runc applied (configs.Resources is
	// embedded in configs.Cgroup, so they sit in config.cgroups), kept
	// undecoded: only devices-cgroup reads them, with DecodeDevices.
	Devices json.RawMessage `json:"devices"`
	// Resources are the limits runc recorded (configs.Resources sits
	// embedded in configs.Cgroup): limits-intact judges them. Decoded in
	// the same pass as the rest, not by a second read of the file.
	Resources
}

// Resources are the limits of configs.Resources that cellguard compares,
// under the names runc writes them in state.json's config.cgroups. Zero
// is "not set" for each, as runc's own setters read them.
type Resources struct {
	Memory      int64  `json:"memory"`
	MemorySwap  int64  `json:"memory_swap"`
	PidsLimit   *int64 `json:"pids_limit"`
	CpuShares   uint64 `json:"cpu_shares"`
	CpuWeight   uint64 `json:"cpu_weight"`
	CpuQuota    int64  `json:"cpu_quota"`
	CpuPeriod   uint64 `json:"cpu_period"`
	BlkioWeight uint16 `json:"blkio_weight"`
}

// Namespace is one entry of configs.Namespaces; Path is set when the
// container joined an existing namespace instead of making one.
type Namespace struct {
	Type string `json:"type"` // NEWPID, NEWNET, ...
	Path string `json:"path"`
}

// StartTime is init_process_start: a number in current runc, a decimal
// string in runc releases before 1.0.0-rc5, which long-lived cells may still
// hold state from.
type StartTime uint64

// UnmarshalJSON accepts 12345 or "12345".
func (s *StartTime) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return fmt.Errorf("init_process_start: %w", err)
		}
		if str == "" {
			*s = 0
			return nil
		}
		b = []byte(str)
	}
	if string(b) == "null" {
		*s = 0
		return nil
	}
	v, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("init_process_start %s: %w", b, err)
	}
	*s = StartTime(v)
	return nil
}

// Decode parses state.json bytes.
func Decode(b []byte) (*State, error) { return decode(b, nil) }

// decode is Decode, matching large config values against k (nil: none).
func decode(b []byte, k *Known) (*State, error) {
	var s State
	if decodeFast(b, &s, k) {
		return &s, nil
	}
	s = State{} // encoding/json decides what decodeFast would not
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// NewPidNS reports whether the container has a pid namespace of its own
// (NEWPID without a path to join). Without one, "its pid namespace" is the
// host's and says nothing about membership.
func (s *State) NewPidNS() bool {
	for _, ns := range s.Config.Namespaces {
		if ns.Type == "NEWPID" {
			return ns.Path == ""
		}
	}
	return false
}

// HasPidNS reports whether the container runs in a pid namespace other than
// its creator's: its own, or one it joined.
func (s *State) HasPidNS() bool {
	for _, ns := range s.Config.Namespaces {
		if ns.Type == "NEWPID" {
			return true
		}
	}
	return false
}
