package checks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// fakeManager answers like systemd's manager: unknown units read back as
// LoadState=not-found rather than as an error.
type fakeManager struct {
	units  map[string]*systemd.Unit
	pids   map[int]string
	errs   map[string]error
	calls  map[string]int
	closed bool
}

func newFakeManager(units ...*systemd.Unit) *fakeManager {
	f := &fakeManager{units: map[string]*systemd.Unit{}, pids: map[int]string{}, errs: map[string]error{}, calls: map[string]int{}}
	for _, u := range units {
		f.units[u.Name] = u
	}
	return f
}

func (f *fakeManager) Unit(_ context.Context, name string) (*systemd.Unit, error) {
	f.calls[name]++
	if err := f.errs[name]; err != nil {
		return nil, err
	}
	if u, ok := f.units[name]; ok {
		cp := *u
		return &cp, nil
	}
	return &systemd.Unit{Name: name, LoadState: "not-found", ActiveState: "inactive"}, nil
}

func (f *fakeManager) UnitByPID(_ context.Context, pid int) (string, error) {
	if u, ok := f.pids[pid]; ok {
		return u, nil
	}
	return "", fmt.Errorf("find unit of pid %d: PID %d does not belong to any loaded unit", pid, pid)
}

func (f *fakeManager) Close() { f.closed = true }

func (f *fakeManager) dialer() facts.SystemdDialer {
	return func(context.Context) (facts.SystemdUnits, error) { return f, nil }
}

// Units as systemd 252 reports them.
func plainUnit(name string) *systemd.Unit {
	return &systemd.Unit{Name: name, LoadState: "loaded", ActiveState: "active", ControlGroup: "/system.slice/" + name}
}

func delegated(name string, controllers ...string) *systemd.Unit {
	u := plainUnit(name)
	u.Delegate, u.DelegateControllers = true, controllers
	return u
}

// delegateYesV1 is what Delegate=yes reads back as on a v1/hybrid host.
var delegateYesV1 = []string{"cpu", "cpuset", "io", "memory", "pids"}

func sliceUnit(name string) *systemd.Unit {
	return &systemd.Unit{Name: name, LoadState: "loaded", ActiveState: "active", ControlGroup: "/" + name}
}

// bootedHost is a fixture whose init is systemd (sd_booted).
func bootedHost(t *testing.T, mode cgroup.Mode) *fakehost.Host {
	t.Helper()
	h := fakehost.New(t, mode)
	if err := os.MkdirAll(filepath.Join(h.Root, "run/systemd/system"), 0o755); err != nil {
		t.Fatal(err)
	}
	return h
}

func containerAt(id, cg string) fakehost.Container {
	return fakehost.Container{RuntimeRoot: "/run/runc", ID: id, Cgroup: cg}
}

func auditDeps(h *fakehost.Host, f *fakeManager, daemons ...facts.Daemon) testDeps {
	d := deps(h)
	d.SystemdUnits = f.dialer()
	d.Daemons = daemons
	return d
}

// bySubject returns the findings about subject, failing if there are none.
func bySubject(t *testing.T, fs []validator.Finding, subject string) []validator.Finding {
	t.Helper()
	var out []validator.Finding
	for _, f := range fs {
		if f.Subject == subject {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no finding about %q in %+v", subject, fs)
	}
	return out
}

// onlyFinding returns the one finding about subject, checking its status
// and that its detail says each of says.
func onlyFinding(t *testing.T, fs []validator.Finding, subject string, status validator.Status, says []string) validator.Finding {
	t.Helper()
	got := bySubject(t, fs, subject)
	if len(got) != 1 {
		t.Fatalf("want one finding about %s, got %+v", subject, got)
	}
	g := got[0]
	if g.Status != status {
		t.Fatalf("status %s, want %s: %s", g.Status, status, g.Detail)
	}
	for _, s := range says {
		if !strings.Contains(g.Detail, s) {
			t.Errorf("detail %q lacks %q", g.Detail, s)
		}
	}
	return g
}

// TestDelegationAuditContainers is the heart of the check: the unit above
// each container cgroup decides, per cgroup mode.
func TestDelegationAuditContainers(t *testing.T) {
	const runit = "/system.slice/runit.service/garden/"
	testCases := []struct {
		name    string
		modes   []cgroup.Mode
		cgroup  string // container cgroup prefix; c1 and c2 are made under it
		units   []*systemd.Unit
		subject string
		status  validator.Status
		detail  []string
		missing string
	}{
		{
			name:    "plain unit: seed-000",
			modes:   []cgroup.Mode{cgroup.Legacy, cgroup.Hybrid},
			cgroup:  runit,
			units:   []*systemd.Unit{sliceUnit("system.slice"), plainUnit("runit.service")},
			subject: "runit.service", status: validator.Fail,
			detail: []string{"2 containers below runit.service are exposed to systemd moving them out", "Delegate=no"},
		},
		{
			name:    "plain unit on v2: controllers, not processes",
			modes:   []cgroup.Mode{cgroup.Unified},
			cgroup:  runit,
			units:   []*systemd.Unit{sliceUnit("system.slice"), plainUnit("runit.service")},
			subject: "runit.service", status: validator.Fail,
			detail: []string{"2 containers below runit.service are exposed to systemd disabling their controllers", "Delegate=no"},
		},
		{
			name:    "Delegate=yes on v1 leaves blkio",
			modes:   []cgroup.Mode{cgroup.Legacy, cgroup.Hybrid},
			cgroup:  runit,
			units:   []*systemd.Unit{delegated("runit.service", delegateYesV1...)},
			subject: "runit.service", status: validator.Fail,
			detail:  []string{"delegates only cpu cpuset io memory pids", "not cpuacct blkio devices"},
			missing: "cpuacct blkio devices",
		},
		{
			name:    "Delegate=yes is enough on v2",
			modes:   []cgroup.Mode{cgroup.Unified},
			cgroup:  runit,
			units:   []*systemd.Unit{delegated("runit.service", delegateYesV1...)},
			subject: "runit.service", status: validator.Pass,
			detail: []string{"2 containers below runit.service: runit.service delegates"},
		},
		{
			name:    "explicit v1 list",
			modes:   allModes,
			cgroup:  runit,
			units:   []*systemd.Unit{delegated("runit.service", unitfile.Controllers(unitfile.DelegateV1)...)},
			subject: "runit.service", status: validator.Pass,
		},
		{
			name:    "unit gone, cgroup left",
			modes:   allModes,
			cgroup:  runit,
			subject: "runit.service", status: validator.Fail,
			detail: []string{"not loaded (LoadState=not-found)"},
		},
		{
			// On v2 see TestDelegationAuditBelowASliceOnUnified.
			name:    "directly under a slice",
			modes:   []cgroup.Mode{cgroup.Legacy, cgroup.Hybrid},
			cgroup:  "/system.slice/garden/",
			units:   []*systemd.Unit{sliceUnit("system.slice")},
			subject: "system.slice", status: validator.Fail,
			detail: []string{"slices cannot delegate"},
		},
		{
			// On v2 see TestDelegationAuditGardenOnUnified.
			name:    "Garden's /garden at the root",
			modes:   []cgroup.Mode{cgroup.Legacy, cgroup.Hybrid},
			cgroup:  "/garden/",
			subject: "/garden", status: validator.Warn,
			detail: []string{"2 containers under /garden, outside every systemd unit"},
		},
	}
	for _, tc := range testCases {
		for _, mode := range tc.modes {
			t.Run(tc.name+"/"+mode.String(), func(t *testing.T) {
				h := bootedHost(t, mode)
				h.RunContainer(containerAt("c1", tc.cgroup+"c1"), 100, 2, 500)
				h.RunContainer(containerAt("c2", tc.cgroup+"c2"), 200, 2, 500)
				f := newFakeManager(tc.units...)
				fs := run(t, auditDeps(h, f), "delegation-audit")
				g := onlyFinding(t, fs, tc.subject, tc.status, tc.detail)
				if g.Data["containers"] != "c1 c2" || g.Data["container_count"] != "2" {
					t.Errorf("containers %q count %q", g.Data["containers"], g.Data["container_count"])
				}
				if g.Data["missing_controllers"] != tc.missing {
					t.Errorf("missing_controllers %q, want %q", g.Data["missing_controllers"], tc.missing)
				}
				if f.calls[tc.subject] > 1 {
					t.Errorf("read %s %d times; the run caches units", tc.subject, f.calls[tc.subject])
				}
				if !f.closed {
					t.Error("connection not closed")
				}
				if bad := failures(fs); tc.status == validator.Pass && len(bad) != 0 {
					t.Errorf("unexpected failures %+v", bad)
				}
			})
		}
	}
}

func TestDelegationAuditSystemdDriverScope(t *testing.T) {
	h := bootedHost(t, cgroup.Hybrid)
	h.RunContainer(containerAt("c1", "/system.slice/garden-c1.scope"), 100, 2, 500)
	h.RunContainer(containerAt("c2", "/system.slice/garden-c2.scope"), 200, 2, 500)
	scope := delegated("garden-c1.scope", delegateYesV1...)
	fs := run(t, auditDeps(h, newFakeManager(scope)), "delegation-audit")
	if g := bySubject(t, fs, "garden-c1.scope")[0]; g.Status != validator.Pass || !strings.Contains(g.Detail, "runc's systemd cgroup driver") {
		t.Fatalf("own scope: %+v", g)
	}
	// A scope systemd no longer knows holds processes nobody tracks.
	if g := bySubject(t, fs, "garden-c2.scope")[0]; g.Status != validator.Warn || !strings.Contains(g.Detail, "LoadState=not-found") {
		t.Fatalf("unknown scope: %+v", g)
	}
}

func TestDelegationAuditDaemons(t *testing.T) {
	garden := unitfile.UnitName("garden")
	testCases := []struct {
		name    string
		units   []*systemd.Unit
		pidfile string // content; "" means no pidfile
		holder  string // unit UnitByPID answers for pid 50
		want    map[string]validator.Status
		detail  string
	}{
		{
			name: "not installed",
			want: map[string]validator.Status{garden: validator.Fail}, detail: "cellguard unit install garden",
		},
		{
			name:  "installed, not running",
			units: []*systemd.Unit{delegated(garden, unitfile.Controllers(unitfile.DelegateV1)...)},
			want:  map[string]validator.Status{garden: validator.Pass}, detail: "is not running",
		},
		{
			name:    "running in its unit",
			units:   []*systemd.Unit{delegated(garden, unitfile.Controllers(unitfile.DelegateV1)...)},
			pidfile: "50\n", holder: garden,
			want: map[string]validator.Status{garden: validator.Pass},
		},
		{
			// Started by monit directly: the seed-000 arrangement.
			name:    "running in monit's plain unit",
			units:   []*systemd.Unit{delegated(garden, unitfile.Controllers(unitfile.DelegateV1)...), plainUnit("monit.service")},
			pidfile: "50\n", holder: "monit.service",
			want:   map[string]validator.Status{garden: validator.Pass, "monit.service": validator.Fail},
			detail: "daemon garden (pid 50) runs in monit.service, not in cellguard-garden.service",
		},
		{
			name:    "running in monit's protected unit",
			units:   []*systemd.Unit{delegated(garden, unitfile.Controllers(unitfile.DelegateV1)...), delegated("monit.service", unitfile.Controllers(unitfile.DelegateV1)...)},
			pidfile: "50\n", holder: "monit.service",
			want: map[string]validator.Status{garden: validator.Pass, "monit.service": validator.Pass},
		},
		{
			name:    "stale pidfile",
			units:   []*systemd.Unit{delegated(garden, unitfile.Controllers(unitfile.DelegateV1)...)},
			pidfile: "4242\n",
			want:    map[string]validator.Status{garden: validator.Pass}, detail: "pid 4242 from /var/vcap/sys/run/garden/garden.pid is gone",
		},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			h := bootedHost(t, cgroup.Hybrid)
			h.Add(fakehost.Proc{PID: 50, Comm: "gdn", Cgroup: "/system.slice/" + tc.holder})
			const pidfile = "/var/vcap/sys/run/garden/garden.pid"
			if tc.pidfile != "" {
				h.Write(pidfile, tc.pidfile)
			}
			f := newFakeManager(tc.units...)
			if tc.holder != "" {
				f.pids[50] = tc.holder
			}
			fs := run(t, auditDeps(h, f, facts.Daemon{Name: "garden", PIDFile: pidfile}), "delegation-audit")
			var all []string
			for subject, st := range tc.want {
				if got := worst(bySubject(t, fs, subject)); got != st {
					t.Errorf("%s: %s, want %s: %+v", subject, got, st, fs)
				}
			}
			for _, f := range fs {
				all = append(all, f.Detail)
			}
			if !strings.Contains(strings.Join(all, "\n"), tc.detail) {
				t.Errorf("no finding says %q:\n%s", tc.detail, strings.Join(all, "\n"))
			}
		})
	}
}

// worst is the status a finding list gives its subject.
func worst(fs []validator.Finding) validator.Status {
	rank := map[validator.Status]int{validator.Skip: 0, validator.Pass: 1, validator.Warn: 2, validator.Fail: 3, validator.Error: 4}
	st := validator.Skip
	for _, f := range fs {
		if rank[f.Status] > rank[st] {
			st = f.Status
		}
	}
	if st == validator.Skip {
		return validator.Pass
	}
	return st
}

func TestDelegationAuditSkipsAndErrors(t *testing.T) {
	t.Run("systemd not init", func(t *testing.T) {
		h := fakehost.New(t, cgroup.Hybrid) // no /run/systemd/system
		f := newFakeManager()
		dialed := false
		d := deps(h)
		d.SystemdUnits = func(context.Context) (facts.SystemdUnits, error) { dialed = true; return f, nil }
		fs := run(t, d, "delegation-audit")
		if len(fs) != 1 || fs[0].Status != validator.Skip || !strings.Contains(fs[0].Detail, "not the init system") {
			t.Fatalf("%+v", fs)
		}
		if dialed {
			t.Fatal("dialed D-Bus on a host without systemd")
		}
	})
	t.Run("no dialer", func(t *testing.T) {
		fs := run(t, deps(bootedHost(t, cgroup.Unified)), "delegation-audit")
		if len(fs) != 1 || fs[0].Status != validator.Skip {
			t.Fatalf("%+v", fs)
		}
	})
	t.Run("dial fails", func(t *testing.T) {
		d := deps(bootedHost(t, cgroup.Unified))
		d.SystemdUnits = func(context.Context) (facts.SystemdUnits, error) { return nil, errors.New("connection refused") }
		c := byID(t, all(d), "delegation-audit")
		if _, err := c.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("one unit unreadable", func(t *testing.T) {
		h := bootedHost(t, cgroup.Legacy)
		h.RunContainer(containerAt("c1", "/system.slice/a.service/garden/c1"), 100, 1, 500)
		h.RunContainer(containerAt("c2", "/system.slice/b.service/garden/c2"), 200, 1, 500)
		f := newFakeManager(plainUnit("b.service"))
		f.errs["a.service"] = errors.New("read properties of a.service: access denied")
		fs := run(t, auditDeps(h, f), "delegation-audit")
		if g := bySubject(t, fs, "a.service")[0]; g.Status != validator.Error {
			t.Fatalf("a.service: %+v", g)
		}
		if g := bySubject(t, fs, "b.service")[0]; g.Status != validator.Fail {
			t.Fatalf("b.service still audited: %+v", g)
		}
	})
}

// TestDelegationAuditSeverity: the same unsafe host blocks pre-start and
// only warns at drain.
func TestDelegationAuditSeverity(t *testing.T) {
	h := bootedHost(t, cgroup.Hybrid)
	h.RunContainer(containerAt("c1", "/system.slice/runit.service/garden/c1"), 100, 1, 500)
	d := auditDeps(h, newFakeManager(plainUnit("runit.service")))
	c := byID(t, all(d), "delegation-audit")
	for phase, blocked := range map[validator.Phase]bool{validator.PreStart: true, validator.Drain: false} {
		rep := validator.Run(context.Background(), []validator.Check{c}, validator.Options{Phase: phase})
		if rep.Blocked != blocked {
			t.Errorf("%s: blocked=%v, want %v (%+v)", phase, rep.Blocked, blocked, rep.Results[0])
		}
	}
}

func byID(t *testing.T, cs []validator.Check, id string) validator.Check {
	t.Helper()
	for _, c := range cs {
		if c.Meta().ID == id {
			return c
		}
	}
	t.Fatalf("no check %q", id)
	return nil
}

// A false record (guardian's throttler names /garden/good/<h> for a
// privileged container runc put at /system.slice/<h>): systemd sees the
// container where its init is, below system.slice, which cannot delegate;
// nothing is under /garden/good.
func TestDelegationAuditPlacesFalseRecordsWhereTheInitIs(t *testing.T) {
	h := bootedHost(t, cgroup.Unified)
	h.Cgroup("/garden/good")
	h.RunContainer(fakehost.Container{RuntimeRoot: "/run/containerd/runc", Namespace: "garden", ID: "p2",
		Cgroup: "/system.slice/p2", Recorded: "/garden/good/p2"}, 1445, 1, 900)
	fs := run(t, auditDeps(h, newFakeManager(sliceUnit("system.slice"))), "delegation-audit")
	got := bySubject(t, fs, "system.slice")
	if len(got) != 1 || got[0].Status != validator.Fail || got[0].Data["containers"] != "garden/p2" ||
		!strings.Contains(got[0].Detail, "slices cannot delegate") {
		t.Fatalf("system.slice: %+v", got)
	}
	for _, f := range fs {
		if strings.Contains(f.Subject, "/garden/good") || strings.Contains(f.Detail, "/garden/good") {
			t.Errorf("placed by the false record: %+v", f)
		}
	}
}
