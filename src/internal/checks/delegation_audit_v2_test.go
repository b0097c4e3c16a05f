package checks

import (
	"context"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// TestDelegationAuditGardenOnUnified: today's Garden on cgroup v2 keeps its
// containers in a top-level cgroup no systemd unit owns (/garden/<h>/init,
// throttled ones in /garden/good/<h>). What decides whether systemd can strip
// them is /garden's own cgroup.subtree_control: while it enables a controller
// the kernel refuses systemd's "-cpu" at the root with EBUSY (issue 37 item 2,
// measured on noble), and systemd never writes /garden's. Containers directly
// below the root are leaves systemd's write reaches (issue 37's /c7).
func TestDelegationAuditGardenOnUnified(t *testing.T) {
	const all = "cpuset cpu io memory hugetlb pids rdma misc" // noble, garden37-run3
	testCases := []struct {
		name     string
		cgroup   string // c1 and c2 are made under it
		offered  string // the root's cgroup.controllers
		top      string // /garden's cgroup.subtree_control; "-" for no file
		subject  string
		status   validator.Status
		detail   []string
		missing  string
		topGroup string
	}{
		{
			name: "every controller kept: the kernel refuses systemd", cgroup: "/garden/", offered: all, top: all,
			subject: "/garden", status: validator.Pass, topGroup: "/garden",
			detail: []string{"2 containers under /garden, outside every systemd unit", "/garden's cgroup.subtree_control enables cpu cpuset io memory pids",
				"EBUSY", "issue 37"},
		},
		{
			name: "throttled layout: good/<h> below /garden", cgroup: "/garden/good/", offered: all, top: all,
			subject: "/garden/good", status: validator.Pass, topGroup: "/garden",
			detail: []string{"2 containers under /garden/good", "/garden's cgroup.subtree_control enables"},
		},
		{
			name: "a controller missing at /garden", cgroup: "/garden/", offered: all, top: "cpu io memory pids",
			subject: "/garden", status: validator.Warn, missing: "cpuset", topGroup: "/garden",
			detail: []string{"/garden's cgroup.subtree_control does not enable cpuset", "systemd"},
		},
		{
			name: "only what the kernel offers is wanted", cgroup: "/garden/", offered: "cpu io memory pids", top: "cpu io memory pids",
			subject: "/garden", status: validator.Pass, topGroup: "/garden",
			detail: []string{"enables cpu io memory pids"},
		},
		{
			name: "subtree_control unreadable", cgroup: "/garden/", offered: all, top: "-",
			subject: "/garden", status: validator.Warn, topGroup: "/garden",
			detail: []string{"outside every systemd unit", "/garden/cgroup.subtree_control"},
		},
		{
			name: "directly below the root: leaves systemd's write reaches", cgroup: "/", offered: all,
			subject: "/", status: validator.Warn,
			detail: []string{"2 containers under /, outside every systemd unit", "directly below the root"},
		},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			h := bootedHost(t, cgroup.Unified)
			h.RunContainer(containerAt("c1", tc.cgroup+"c1"), 100, 2, 500)
			h.RunContainer(containerAt("c2", tc.cgroup+"c2"), 200, 2, 500)
			h.Write("sys/fs/cgroup/cgroup.controllers", tc.offered+"\n")
			if tc.top != "" && tc.top != "-" {
				h.Write("sys/fs/cgroup/garden/cgroup.subtree_control", tc.top+"\n")
			}
			fs := run(t, auditDeps(h, newFakeManager()), "delegation-audit")
			g := onlyFinding(t, fs, tc.subject, tc.status, tc.detail)
			if g.Data["missing_controllers"] != tc.missing {
				t.Errorf("missing_controllers %q, want %q", g.Data["missing_controllers"], tc.missing)
			}
			if g.Data["top_cgroup"] != tc.topGroup {
				t.Errorf("top_cgroup %q, want %q", g.Data["top_cgroup"], tc.topGroup)
			}
		})
	}
}

// TestDelegationAuditBelowASliceOnUnified: a privileged container of
// today's Garden sits at /system.slice/<h> on cgroup v2. A slice cannot
// delegate, but systemd enables in a slice what its loaded members need,
// delegated controllers included, so an active member with Delegate=yes
// (monit's unit under supervisor.protect) keeps system.slice's controllers
// through every daemon-reload (TestNobleLimits step 5 measures it on noble).
// On v1 and hybrid nothing changes: the member does not stop moves there.
func TestDelegationAuditBelowASliceOnUnified(t *testing.T) {
	const all = "cpuset cpu io memory hugetlb pids rdma misc"
	yes := []string{"cpu", "cpuset", "io", "memory", "pids"} // Delegate=yes on v2, as systemd 255 reads it back
	state := func(u *systemd.Unit, s string) *systemd.Unit { u.ActiveState = s; return u }
	testCases := []struct {
		name    string
		mode    cgroup.Mode
		offered string
		members []*systemd.Unit // units with a cgroup in system.slice
		status  validator.Status
		detail  []string
		keepers string
		missing string
		unread  string // a member systemd does not answer for (a D-Bus read past its deadline)
	}{
		{
			// TestNobleGardenToday under TCG: garden.service's read timed
			// out; a fail there was a false finding watch cleared a scan later.
			name: "a member unread: could not judge", mode: cgroup.Unified, offered: all,
			members: []*systemd.Unit{plainUnit("cron.service"), delegated("garden.service", yes...)}, unread: "garden.service",
			status: validator.Error,
			detail: []string{"whether the units there keep cpu cpuset io memory pids is unknown", "context deadline exceeded"},
		},
		{
			name: "a member unread while another keeps everything: judged", mode: cgroup.Unified, offered: all,
			members: []*systemd.Unit{plainUnit("cron.service"), delegated("monit.service", yes...)}, unread: "cron.service",
			status: validator.Pass, keepers: "monit.service",
		},
		{
			name: "no member delegates", mode: cgroup.Unified, offered: all,
			members: []*systemd.Unit{plainUnit("monit.service")},
			status:  validator.Fail, missing: "cpu cpuset io memory pids",
			detail: []string{"1 container below system.slice is exposed to systemd disabling their controllers",
				"no active unit in system.slice delegates", "cellguard.supervisor.protect"},
		},
		{
			name: "monit's unit delegated in place keeps them", mode: cgroup.Unified, offered: all,
			members: []*systemd.Unit{plainUnit("cron.service"), delegated("monit.service", yes...)},
			status:  validator.Pass, keepers: "monit.service",
			detail: []string{"keeps cpu cpuset io memory pids enabled in /system.slice while units active there delegate them (monit.service: cpu cpuset io memory pids)"},
		},
		{
			name: "an inactive unit keeps nothing: it may be unloaded", mode: cgroup.Unified, offered: all,
			members: []*systemd.Unit{state(delegated("garden.service", yes...), "inactive")},
			status:  validator.Fail, missing: "cpu cpuset io memory pids",
			detail: []string{"no active unit in system.slice delegates"},
		},
		{
			name: "a failed unit keeps nothing either", mode: cgroup.Unified, offered: all,
			members: []*systemd.Unit{state(delegated("garden.service", yes...), "failed")},
			status:  validator.Fail, missing: "cpu cpuset io memory pids",
			detail: []string{"no active unit in system.slice delegates"},
		},
		{
			name: "monit's unit restarting (activating) still keeps them: it stays loaded", mode: cgroup.Unified, offered: all,
			members: []*systemd.Unit{state(delegated("monit.service", yes...), "activating")},
			status:  validator.Pass, keepers: "monit.service",
		},
		{
			name: "a member delegating part keeps part", mode: cgroup.Unified, offered: all,
			members: []*systemd.Unit{delegated("a.service", "memory", "pids")},
			status:  validator.Fail, keepers: "a.service", missing: "cpu cpuset io",
			detail: []string{"keep only memory pids, not cpu cpuset io (a.service: memory pids)"},
		},
		{
			// systemd 255's systemd-udevd.service has Delegate=pids (read
			// back on the noble VM): it keeps pids alone.
			name: "systemd-udevd's Delegate=pids keeps pids alone", mode: cgroup.Unified, offered: all,
			members: []*systemd.Unit{delegated("systemd-udevd.service", "pids")},
			status:  validator.Fail, keepers: "systemd-udevd.service", missing: "cpu cpuset io memory",
			detail: []string{"keep only pids, not cpu cpuset io memory (systemd-udevd.service: pids)"},
		},
		{
			name: "two members together", mode: cgroup.Unified, offered: all,
			members: []*systemd.Unit{delegated("a.service", "memory", "pids"), delegated("b.scope", "cpu", "cpuset", "io")},
			status:  validator.Pass, keepers: "a.service b.scope",
			detail: []string{"while units active there delegate them (a.service: memory pids; b.scope: cpu cpuset io)"},
		},
		{
			name: "only what the kernel offers is wanted", mode: cgroup.Unified, offered: "memory pids",
			members: []*systemd.Unit{delegated("a.service", "memory", "pids")},
			status:  validator.Pass, keepers: "a.service",
			detail: []string{"keeps memory pids enabled"},
		},
		{
			name: "hybrid: a delegating member does not stop moves", mode: cgroup.Hybrid, offered: all,
			members: []*systemd.Unit{delegated("monit.service", yes...)},
			status:  validator.Fail,
			detail:  []string{"exposed to systemd moving them out", "slices cannot delegate"},
		},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			h := bootedHost(t, tc.mode)
			h.RunContainer(containerAt("p1", "/system.slice/p1"), 100, 2, 500)
			if tc.mode == cgroup.Unified {
				h.Write("sys/fs/cgroup/cgroup.controllers", tc.offered+"\n")
			}
			units := []*systemd.Unit{sliceUnit("system.slice")}
			for _, u := range tc.members {
				h.Cgroup(u.ControlGroup)
				units = append(units, u)
			}
			m := newFakeManager(units...)
			if tc.unread != "" {
				m.errs[tc.unread] = context.DeadlineExceeded
			}
			fs := run(t, auditDeps(h, m), "delegation-audit")
			g := onlyFinding(t, fs, "system.slice", tc.status, tc.detail)
			if g.Data["slice_keepers"] != tc.keepers {
				t.Errorf("slice_keepers %q, want %q", g.Data["slice_keepers"], tc.keepers)
			}
			if g.Data["missing_controllers"] != tc.missing {
				t.Errorf("missing_controllers %q, want %q", g.Data["missing_controllers"], tc.missing)
			}
		})
	}
}
