package checks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// DevicesCgroup compares what each container's v1 devices cgroup allows
// (devices.list) with the device rules its runtime state records.
type DevicesCgroup struct {
	host *snapshot.Source
}

var _ validator.Check = (*DevicesCgroup)(nil)

// Needs: the host snapshot.
func (*DevicesCgroup) Needs() []facts.Kind { return []facts.Kind{facts.Snapshot} }

func (*DevicesCgroup) Meta() validator.Meta {
	return validator.Meta{
		ID:    "devices-cgroup",
		Title: "each container's v1 devices cgroup allows what its runtime recorded",
		Severity: map[validator.Phase]validator.Severity{
			// The container is broken (no /dev/null, no pty), not the
			// rollout: report it, do not hold a deploy on it.
			validator.PreStart: validator.Warning,
			validator.Drain:    validator.Warning,
		},
		Story: "runc before 1.0.0-rc91 rewrote a v1 devices cgroup on every `runc update` by denying all devices " +
			"first and allowing the container's rules after; an update interrupted in between (or a daemon that " +
			"wrote devices.deny itself) left the container unable to open /dev/null, /dev/pts or /dev/fuse while " +
			"its state still recorded the rules.",
		References: []string{
			// "minimal transition rules", first in v1.0.0-rc91 (merge 3f1e886).
			"https://github.com/opencontainers/runc/pull/2391",
			"https://www.kernel.org/doc/html/latest/admin-guide/cgroup-v1/devices.html",
		},
		Fix: "Re-apply the container's rules: `runc update <id>` with runc >= 1.0.0-rc91 (which writes only the " +
			"difference), or recreate the container; upgrade runc where it is older.",
		// v2 has no devices controller to list: runc attaches an eBPF
		// program to the container's cgroup, replaced whole on update.
		Layouts: v1Layouts,
	}
}

func (d *DevicesCgroup) Run(ctx context.Context) ([]validator.Finding, error) {
	v, err := d.host.Get()
	if err != nil {
		return nil, err
	}
	if fs, na := notApplicable(d.Meta(), v.Layout().Mode, "v2 filters devices with an eBPF program, which has no list to read"); na {
		return fs, nil
	}
	h := v.Layout().ForKey("devices")
	if h == nil {
		return []validator.Finding{{Subject: "devices", Status: validator.Skip,
			Detail: fmt.Sprintf("no v1 devices hierarchy is mounted on this %s host: no list to read", v.Layout().Mode)}}, nil
	}
	var fs []validator.Finding
	decoded := map[string][]runcstate.DeviceRule{} // a cell's containers share their rules
	// devices.list is read relative to its hierarchy, as cgroup.procs is.
	pr := v.Layout().NewProcsReader()
	defer pr.Close()
	checked := 0
	for i := range v.Discovery().Containers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c := &v.Discovery().Containers[i]
		if c.State.Config.Cgroups == nil || len(c.State.Config.Cgroups.Devices) == 0 || v.InitOf(c) == nil {
			continue // no rules recorded (crun, old runc), or not running: runtime-ghosts' finding
		}
		rel, ok := devicesCgroupOf(v.Members(i), h)
		if !ok {
			continue
		}
		raw := string(c.State.Config.Cgroups.Devices)
		rules, ok := decoded[raw]
		if !ok {
			if rules, err = runcstate.DecodeDevices(c.State.Config.Cgroups.Devices); err != nil {
				fs = append(fs, validator.Finding{Subject: c.Name(), Status: validator.Warn,
					Detail: fmt.Sprintf("cannot check: %v in %s", err, c.StatePath)})
				continue
			}
			decoded[raw] = rules
		}
		b, err := pr.ReadFile(h, rel, "devices.list")
		if errors.Is(err, cgroup.ErrNoCgroup) {
			continue // the cgroup went away with the container
		}
		if err != nil {
			return nil, fmt.Errorf("read devices.list of %s: %w", c.Name(), err)
		}
		checked++
		if missing := missingDevices(rules, parseDevicesList(b)); len(missing) > 0 {
			var ms []string
			for _, m := range missing {
				ms = append(ms, m.String())
			}
			fs = append(fs, validator.Finding{Subject: c.Name(), Status: validator.Fail,
				Detail: fmt.Sprintf("devices cgroup %s allows less than the state records: missing %s", rel, strings.Join(ms, ", ")),
				Data: map[string]string{"container": c.Name(), "runtime": c.Runtime, "state": c.StatePath,
					"cgroup": rel, "missing": strings.Join(ms, ","), "devices_list": strings.Join(strings.Fields(strings.ReplaceAll(string(b), "\n", ";")), " ")}})
		}
	}
	fs = append(fs, validator.Finding{Status: validator.Pass,
		Detail: fmt.Sprintf("%s checked against their recorded device rules", plural(checked, "running container")),
		Data:   map[string]string{"containers": strconv.Itoa(checked)}})
	return fs, nil
}

// devicesCgroupOf is the container's recorded cgroup in the devices
// hierarchy h.
func devicesCgroupOf(m *snapshot.Members, h *cgroup.Hierarchy) (string, bool) {
	for _, e := range m.Exps {
		if e.Hierarchy == h {
			return e.Rel, true
		}
	}
	return "", false
}

// parseDevicesList reads devices.list: one "type major:minor access" per
// line; "a *:* rwm" when everything is allowed.
func parseDevicesList(b []byte) []runcstate.DeviceRule {
	var out []runcstate.DeviceRule
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || len(f[0]) != 1 {
			continue
		}
		mm := strings.SplitN(f[1], ":", 2)
		if len(mm) != 2 {
			continue
		}
		out = append(out, runcstate.DeviceRule{Type: rune(f[0][0]), Major: devNum(mm[0]), Minor: devNum(mm[1]), Permissions: f[2], Allow: true})
	}
	return out
}

func devNum(s string) int64 {
	if s == "*" {
		return -1
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -2 // matches nothing
	}
	return n
}

// missingDevices (opencontainers/cgroups has an emulator for this, but it
// is unexported: devices/devices_emulator.go) applies rules in order from
// a default deny, as runc since 1.0.0-rc91 builds its target (buildEmulator
// in libcontainer/cgroups/fs/devices.go: "This defaults to a white-list"):
// a deny of "a" makes the default deny and drops every exception, an allow
// of "a" makes it allow, other allows add exceptions. Garden records no
// leading deny of "a" (its containers' rules start with "c *:* m"), so a
// default allow would want "a *:* rwm" of every Garden container. Older
// runc wrote the rules onto a cgroup that allowed everything, which covers
// any allow list, so they are not reported either way. It returns the
// allows the list does not cover.
func missingDevices(rules, list []runcstate.DeviceRule) []runcstate.DeviceRule {
	allowAll := false
	var want []runcstate.DeviceRule
	for _, r := range rules {
		switch {
		case r.Type == 'a' && !r.Allow:
			allowAll, want = false, nil
		case r.Type == 'a' && r.Allow:
			allowAll, want = true, nil
		case r.Allow && !allowAll:
			want = append(want, r)
		case !r.Allow && !allowAll:
			var kept []runcstate.DeviceRule
			for _, w := range want {
				if !(w.Type == r.Type && w.Major == r.Major && w.Minor == r.Minor) {
					kept = append(kept, w)
				}
			}
			want = kept
		}
	}
	if allowAll {
		want = []runcstate.DeviceRule{{Type: 'a', Major: -1, Minor: -1, Permissions: "rwm", Allow: true}}
	}
	var missing []runcstate.DeviceRule
	for _, w := range want {
		covered := false
		for _, e := range list {
			if covers(e, w) {
				covered = true
				break
			}
		}
		if !covered {
			missing = append(missing, w)
		}
	}
	return missing
}

// covers reports whether list entry e allows everything rule w allows.
func covers(e, w runcstate.DeviceRule) bool {
	if e.Type != 'a' && e.Type != w.Type {
		return false
	}
	if e.Major != -1 && e.Major != w.Major || e.Minor != -1 && e.Minor != w.Minor {
		return false
	}
	for _, p := range w.Permissions {
		if !strings.ContainsRune(e.Permissions, p) {
			return false
		}
	}
	return true
}
