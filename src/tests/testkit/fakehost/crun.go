package fakehost

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"
)

// crunStatus writes c as crun does (containers/crun src/libcrun/status.c):
// <root>/<id>/status with the init pid, its start time and one cgroup path
// for every hierarchy, and the bundle's OCI config.json beside it, whose
// linux.namespaces say whether the container has its own pid namespace.
func (h *Host) crunStatus(c Container) string {
	h.t.Helper()
	h.Cgroup(c.Cgroup)
	st := map[string]any{
		"pid":                  c.Init,
		"process-start-time":   c.InitStart,
		"cgroup-path":          c.Cgroup,
		"scope":                "",
		"rootfs":               "/var/lib/" + c.ID + "/rootfs",
		"systemd-cgroup":       false,
		"bundle":               "/var/lib/" + c.ID,
		"created":              BootTime.Add(time.Duration(c.InitStart) * 10 * time.Millisecond).Format("2006-01-02T15:04:05.000000Z"),
		"owner":                "root",
		"detached":             true,
		"external_descriptors": `["/dev/null","/dev/null","/dev/null"]`,
	}
	namespaces := []map[string]string{{"type": "network"}, {"type": "mount"}}
	if c.JoinPidNS != 0 {
		namespaces = append(namespaces, map[string]string{"type": "pid", "path": "/proc/1/ns/pid-of-sandbox"})
	} else if !c.SharedPidNS {
		namespaces = append(namespaces, map[string]string{"type": "pid"})
	}
	cfg := map[string]any{"ociVersion": "1.0.2", "linux": map[string]any{"namespaces": namespaces, "cgroupsPath": c.Cgroup}}
	dir := filepath.Join(h.Root, c.RuntimeRoot, c.Namespace, c.ID)
	h.mkdir(dir)
	for name, v := range map[string]any{"status": st, "config.json": cfg} {
		b, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			h.t.Fatal(fmt.Errorf("fakehost: %w", err))
		}
		h.writeAbs(filepath.Join(dir, name), string(b))
	}
	if c.Created {
		h.writeAbs(filepath.Join(dir, "exec.fifo"), "")
	}
	return filepath.Join(dir, "status")
}
