package runcstate

import (
	"encoding/json"
	"fmt"
	"time"
)

// crunStatus is crun's status file, <root>/<id>/status, as
// libcrun_write_container_status writes it (containers/crun
// src/libcrun/status.c): the init pid and its start time, one cgroup path
// for every hierarchy (crun joins each hierarchy listed in its own
// /proc/self/cgroup at that same path, cgroup-setup.c), the creation time
// and the bundle. crun keeps no namespace list there; it copies the
// bundle's OCI config.json beside it (libcrun_copy_config_file).
type crunStatus struct {
	PID              *int   `json:"pid"`
	ProcessStartTime uint64 `json:"process-start-time"` // absent before crun 0.14: 0
	CgroupPath       string `json:"cgroup-path"`
	SystemdCgroup    bool   `json:"systemd-cgroup"`
	Created          string `json:"created"`
}

// ociNamespaces is the part of an OCI config.json crun's NewPidNS needs.
type ociNamespaces struct {
	Linux struct {
		Namespaces []struct {
			Type string `json:"type"` // pid, network, ...
			Path string `json:"path"`
		} `json:"namespaces"`
	} `json:"linux"`
}

// ociToRunc names OCI namespace types as libcontainer's state does.
var ociToRunc = map[string]string{
	"pid": "NEWPID", "network": "NEWNET", "mount": "NEWNS", "ipc": "NEWIPC",
	"uts": "NEWUTS", "user": "NEWUSER", "cgroup": "NEWCGROUP", "time": "NEWTIME",
}

// DecodeCrun turns crun's status file (and, when not nil, the config.json
// crun keeps beside it) into a State: the fields the checks read. crun's
// one cgroup path, the same in every hierarchy, is config.cgroups.path
// (Container.CgroupPath says so for the checks).
func DecodeCrun(id string, status, config []byte) (*State, error) {
	var cs crunStatus
	if err := json.Unmarshal(status, &cs); err != nil {
		return nil, err
	}
	if cs.PID == nil {
		return nil, fmt.Errorf("crun status: no pid")
	}
	s := &State{ID: id, InitProcessPid: *cs.PID, InitProcessStart: StartTime(cs.ProcessStartTime)}
	s.Config.Cgroups = &Cgroups{Path: cs.CgroupPath, Systemd: cs.SystemdCgroup}
	if cs.Created != "" {
		// crun's get_current_timestamp (utils.c): UTC with microseconds.
		if t, err := time.Parse(time.RFC3339Nano, cs.Created); err == nil {
			s.Created = t
		}
	}
	if config != nil {
		var oc ociNamespaces
		if err := json.Unmarshal(config, &oc); err != nil {
			return nil, fmt.Errorf("crun config.json: %w", err)
		}
		for _, n := range oc.Linux.Namespaces {
			t, ok := ociToRunc[n.Type]
			if !ok {
				t = n.Type
			}
			s.Config.Namespaces = append(s.Config.Namespaces, Namespace{Type: t, Path: n.Path})
		}
	}
	return s, nil
}
