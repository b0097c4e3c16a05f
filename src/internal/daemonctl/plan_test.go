package daemonctl

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"code.cloudfoundry.org/lager/v3/lagertest"

	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// The planner tests decide without root and without systemd: each case
// is what systemd said, and the decision daemonctl takes. The same cases
// on a real systemd are src/tests/integration's (TestPruneConverges,
// TestSupervisorDropInDecision, TestInstallRefusalsOnRealSystemd...).

func TestInitialKillMode(t *testing.T) {
	loaded := func(km string) *systemd.Unit { return &systemd.Unit{LoadState: "loaded", KillMode: km} }
	testCases := []struct {
		name            string
		prev            *systemd.Unit
		fileSetsProcess bool
		want            string
	}{
		{"first install", &systemd.Unit{LoadState: "not-found"}, false, unitfile.KillModeNone},
		{"none held", loaded(unitfile.KillModeNone), false, unitfile.KillModeNone},
		{"settled on process earlier", loaded(unitfile.KillModeProcess), true, unitfile.KillModeProcess},
		// someone else's edit: the file no longer says process, so try none again
		{"loaded process, file says otherwise", loaded(unitfile.KillModeProcess), false, unitfile.KillModeNone},
		{"file says process, not loaded", &systemd.Unit{LoadState: "not-found"}, true, unitfile.KillModeNone},
	}
	for _, tc := range testCases {
		if got := initialKillMode(tc.prev, tc.fileSetsProcess); got != tc.want {
			t.Errorf("%s: initialKillMode = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestNeedsReload(t *testing.T) {
	testCases := []struct {
		name    string
		changed bool
		u       systemd.Unit
		want    bool
	}{
		{"unchanged and loaded", false, systemd.Unit{LoadState: "loaded"}, false},
		{"file changed", true, systemd.Unit{LoadState: "loaded"}, true},
		{"a run died between write and reload", false, systemd.Unit{LoadState: "loaded", NeedDaemonReload: true}, true},
		{"never loaded", false, systemd.Unit{LoadState: "not-found"}, true},
	}
	for _, tc := range testCases {
		if got := needsReload(tc.changed, &tc.u); got != tc.want {
			t.Errorf("%s: needsReload = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestJudgeInstalled(t *testing.T) {
	v1 := unitfile.Controllers(unitfile.DelegateV1)
	testCases := []struct {
		name      string
		u         systemd.Unit
		killMode  string
		wantRetry string
		wantErr   string
	}{
		{"none held, delegated", systemd.Unit{LoadState: "loaded", KillMode: "none", Delegate: true, DelegateControllers: v1},
			unitfile.KillModeNone, "", ""},
		{"none refused: fall back to process", systemd.Unit{LoadState: "loaded", KillMode: "control-group", Delegate: true, DelegateControllers: v1},
			unitfile.KillModeNone, unitfile.KillModeProcess, ""},
		{"process written, process read", systemd.Unit{LoadState: "loaded", KillMode: "process", Delegate: true, DelegateControllers: v1},
			unitfile.KillModeProcess, "", ""},
		{"not loaded", systemd.Unit{Name: "cellguard-x.service", LoadState: "bad-setting"},
			unitfile.KillModeNone, "", "LoadState=bad-setting"},
		{"delegation missing blkio", systemd.Unit{LoadState: "loaded", KillMode: "none", Delegate: true,
			DelegateControllers: []string{"cpu", "cpuacct", "io", "memory", "devices", "pids"}},
			unitfile.KillModeNone, "", "(missing blkio)"},
		{"not delegated at all", systemd.Unit{LoadState: "loaded", KillMode: "none"}, unitfile.KillModeNone, "", "read back Delegate=no"},
		{"none overridden by a drop-in: no fallback", systemd.Unit{LoadState: "loaded", KillMode: "mixed", Delegate: true, DelegateControllers: v1},
			unitfile.KillModeNone, "", "remove KillMode= from /etc/systemd/system/x.d/z.conf"},
		{"process refused too", systemd.Unit{LoadState: "loaded", KillMode: "control-group", Delegate: true, DelegateControllers: v1},
			unitfile.KillModeProcess, "", "systemd-analyze verify /etc/systemd/system/x"},
		{"Delegate=no by a drop-in", systemd.Unit{LoadState: "loaded", KillMode: "none"},
			unitfile.KillModeNone, "", "remove Delegate= from /etc/systemd/system/x.d/z.conf"},
	}
	// The drop-ins (other than cellguard's) that assign a setting, by case.
	overriding := map[string]map[string][]string{
		"none overridden by a drop-in: no fallback": {"KillMode": {"/etc/systemd/system/x.d/z.conf"}},
		"Delegate=no by a drop-in":                  {"Delegate": {"/etc/systemd/system/x.d/z.conf"}},
	}
	for _, tc := range testCases {
		over := func(setting string) []string { return overriding[tc.name][setting] }
		retry, err := judgeInstalled(&tc.u, "/etc/systemd/system/x", tc.killMode, unitfile.DelegateV1, over)
		if retry != tc.wantRetry {
			t.Errorf("%s: retry %q, want %q", tc.name, retry, tc.wantRetry)
		}
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestJudgeUse(t *testing.T) {
	procs := func(n int) []systemd.Process {
		var ps []systemd.Process
		for i := range n {
			ps = append(ps, systemd.Process{PID: uint32(100 + i), Cmdline: "/var/vcap/packages/runc/bin/runc init"})
		}
		return ps
	}
	testCases := []struct {
		name       string
		u          systemd.Unit
		procs      []systemd.Process
		wantUse    string // substring; "" means not in use
		wantFailed bool
	}{
		{"running", systemd.Unit{Name: "u", ActiveState: "active", SubState: "running", MainPID: 7}, nil, "u is active (running, main pid 7)", false},
		{"stopping", systemd.Unit{Name: "u", ActiveState: "deactivating", SubState: "stop-sigterm"}, nil, "u is deactivating", false},
		{"stopped, empty", systemd.Unit{Name: "u", ActiveState: "inactive"}, nil, "", false},
		{"failed, empty: reset", systemd.Unit{Name: "u", ActiveState: "failed"}, nil, "", true},
		{"stopped, a container left (KillMode=none)", systemd.Unit{Name: "u", ActiveState: "inactive"}, procs(1),
			"1 process is still in its cgroup: 100 (/var/vcap/packages/runc/bin/runc init)", false},
		{"failed with many left: not reset, listed to five", systemd.Unit{Name: "u", ActiveState: "failed"}, procs(7),
			"7 processes are still in its cgroup: 100 (", false},
		{"not loaded", systemd.Unit{Name: "u"}, nil, "", false},
	}
	for _, tc := range testCases {
		got := judgeUse(&tc.u, tc.procs)
		if tc.wantUse == "" && got.Why != "" || !strings.Contains(got.Why, tc.wantUse) {
			t.Errorf("%s: use %q, want %q", tc.name, got.Why, tc.wantUse)
		}
		if got.Failed != tc.wantFailed {
			t.Errorf("%s: failed %v, want %v", tc.name, got.Failed, tc.wantFailed)
		}
	}
	if got := judgeUse(&systemd.Unit{Name: "u", ActiveState: "inactive"}, procs(7)); strings.Count(got.Why, "(/var") != 5 || !strings.HasSuffix(got.Why, "...") {
		t.Errorf("seven processes not cut at five: %q", got.Why)
	}
}

func TestPruneOptionsWants(t *testing.T) {
	unit := ownFile{Unit: "cellguard-garden.service", Kind: KindUnit}
	sup := ownFile{Unit: "runit.service", Kind: KindSupervisorDropIn}
	conc := ownFile{Unit: "concourse.service", Kind: KindDelegateDropIn}
	testCases := []struct {
		name string
		opts PruneOptions
		f    ownFile
		want bool
	}{
		{"configured daemon", PruneOptions{Keep: []string{"garden"}}, unit, true},
		{"daemon dropped", PruneOptions{Keep: []string{"worker"}}, unit, false},
		{"supervisor protected", PruneOptions{KeepSupervisor: true}, sup, true},
		{"protection off", PruneOptions{}, sup, false},
		// the supervisor's unit is also in delegate_units: its drop-in stays
		{"protection off, the unit delegated", PruneOptions{KeepDelegated: []string{"runit.service"}}, sup, true},
		{"delegated unit kept", PruneOptions{KeepDelegated: []string{"concourse.service"}}, conc, true},
		// supervisor.protect does not keep another unit's delegation
		{"delegated unit dropped, supervisor protected", PruneOptions{KeepSupervisor: true}, conc, false},
		{"uninstall", PruneOptions{Uninstall: true}, unit, false},
	}
	for _, tc := range testCases {
		if got := tc.opts.wants(tc.f); got != tc.want {
			t.Errorf("%s: wants = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPlanPrune: what prune keeps and why, case by case.
func TestPlanPrune(t *testing.T) {
	unit := ownFile{Path: "/etc/systemd/system/cellguard-old.service", Unit: "cellguard-old.service", Kind: KindUnit}
	sup := ownFile{Path: "/etc/systemd/system/runit.service.d/50-cellguard-delegate.conf", Unit: "runit.service", Kind: KindSupervisorDropIn}
	conc := ownFile{Path: "/etc/systemd/system/concourse.service.d/50-cellguard-delegate.conf", Unit: "concourse.service", Kind: KindDelegateDropIn}
	running := unitUse{Why: "X is active (running, main pid 7)"}
	testCases := []struct {
		name        string
		f           ownFile
		use         unitUse
		opts        PruneOptions
		wantAction  string
		wantWhy     []string
		wantNotWhy  string
		resetFailed bool
	}{
		{"unit stopped and empty", unit, unitUse{}, PruneOptions{}, Removed,
			[]string{`daemon "old" is no longer in cellguard.daemons`, "inactive with no process left"}, "", false},
		{"unit failed: removed, then reset", unit, unitUse{Failed: true}, PruneOptions{}, Removed, []string{"inactive"}, "", true},
		{"unit in use: kept, nothing stopped, how to finish", unit, running, PruneOptions{}, Kept,
			[]string{"but X is active", "nothing is stopped", "run pre-start or `cellguard uninstall` again"}, "", false},
		// --force-supervisor-drop-in is about drop-ins: a running daemon's unit stays
		{"unit in use, forced: still kept", unit, running, PruneOptions{ForceSupervisorDropIn: true}, Kept, []string{"nothing is stopped"}, "", false},
		{"unit, uninstall wording", unit, unitUse{}, PruneOptions{Uninstall: true}, Removed, []string{"cellguard uninstall"}, "cellguard.daemons", false},
		{"supervisor not running", sup, unitUse{}, PruneOptions{}, Removed,
			[]string{"cellguard.supervisor.protect is false", "not running"}, "", false},
		{"supervisor running: kept, with the measured reason", sup, running, PruneOptions{}, Kept,
			[]string{"cellguard.supervisor.protect is false, but X is active", SupervisorDropInKept}, "", false},
		{"supervisor running, forced: removed, saying what follows", sup, running, PruneOptions{ForceSupervisorDropIn: true}, Removed,
			[]string{"removed although X is active", "--force-supervisor-drop-in", "leave their cgroups"}, "", false},
		{"delegated unit running: kept", conc, running, PruneOptions{}, Kept,
			[]string{"concourse.service is no longer in cellguard.delegate_units", SupervisorDropInKept}, "", false},
		{"delegated unit stopped", conc, unitUse{}, PruneOptions{}, Removed, []string{"delegate_units", "not running"}, "", false},
		// a drop-in's unit that is failed is not reset: its unit file is not ours
		{"drop-in on a failed unit", conc, unitUse{Failed: true}, PruneOptions{}, Removed, []string{"not running"}, "", false},
	}
	for _, tc := range testCases {
		plan := planPrune([]ownFile{tc.f}, map[string]unitUse{tc.f.Unit: tc.use}, tc.opts)
		if len(plan) != 1 {
			t.Fatalf("%s: plan %+v", tc.name, plan)
		}
		st := plan[0]
		if st.Action != tc.wantAction || st.Path != tc.f.Path || st.Kind != tc.f.Kind || st.Unit != tc.f.Unit {
			t.Errorf("%s: %+v, want action %s", tc.name, st.PruneItem, tc.wantAction)
		}
		for _, w := range tc.wantWhy {
			if !strings.Contains(st.Why, w) {
				t.Errorf("%s: why %q lacks %q", tc.name, st.Why, w)
			}
		}
		if tc.wantNotWhy != "" && strings.Contains(st.Why, tc.wantNotWhy) {
			t.Errorf("%s: why %q says %q", tc.name, st.Why, tc.wantNotWhy)
		}
		if st.resetFailed != tc.resetFailed {
			t.Errorf("%s: resetFailed %v, want %v", tc.name, st.resetFailed, tc.resetFailed)
		}
	}
}

// fakeDaemonRoot is a root with an executable ctl for Install's checks.
func fakeDaemonRoot(t *testing.T) (string, Daemon) {
	t.Helper()
	root := t.TempDir()
	ctl := filepath.Join(root, "var/vcap/jobs/garden/bin/garden_ctl")
	if err := os.MkdirAll(filepath.Dir(ctl), 0o755); err != nil {
		t.Fatal(err)
	}
	testkit.WriteExec(t, ctl, "#!/bin/sh\n")
	return root, Daemon{Name: "garden", Start: []string{"/var/vcap/jobs/garden/bin/garden_ctl", "start"}}
}

// A systemd that refuses KillMode=none gets KillMode=process, and the
// next install keeps process without writing or reloading: no flip-flop.
func TestInstallFallsBackWhenKillModeNoneIsRefused(t *testing.T) {
	root, d := fakeDaemonRoot(t)
	sd := newFakeSystemd(root)
	sd.refuseNone = true
	m := &Manager{Logger: lagertest.NewTestLogger("install"), Root: root, Delegate: unitfile.DelegateV1, conn: sd}
	res, err := m.Install(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if res.KillMode != unitfile.KillModeProcess || !res.Written || !res.Reloaded || sd.reloads != 2 {
		t.Errorf("first install: %+v after %d reloads; want KillMode process, written, two reloads", res, sd.reloads)
	}
	b, err := os.ReadFile(filepath.Join(root, res.Path))
	if err != nil {
		t.Fatal(err)
	}
	if km, _, _ := unitfile.Setting(b, "Service", "KillMode"); km != unitfile.KillModeProcess {
		t.Errorf("file says KillMode=%s", km)
	}
	res, err = m.Install(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if res.Written || res.Reloaded || sd.reloads != 2 || res.KillMode != unitfile.KillModeProcess {
		t.Errorf("second install: %+v after %d reloads; want nothing written or reloaded", res, sd.reloads)
	}
}

// TestInstallRefusalsNameTheFix: what systemd reads back differs from what
// Install wrote, and no fallback keeps container processes safe: Install
// fails, and its error names the setting, what systemd read back and the
// fix (the drop-in that overrides it, or how to ask systemd why). A drop-in
// setting KillMode=control-group would let stopping the unit kill every
// container below it; one setting Delegate=no, let systemd move (v1) or
// strip (v2) them. The same on a real systemd: src/tests/integration,
// TestInstallRefusalsOnRealSystemd.
func TestInstallRefusalsNameTheFix(t *testing.T) {
	for _, tc := range []struct {
		name       string
		dropIn     string // [Service] settings of 90-operator.conf; "" for none
		refuseKill bool
		want       []string
	}{
		{"a drop-in sets KillMode", "KillMode=control-group\n", false,
			[]string{"KillMode=none", "read back KillMode=control-group", "/etc/systemd/system/cellguard-garden.service.d/90-operator.conf", "remove KillMode="}},
		{"a drop-in sets Delegate=no", "Delegate=no\n", false,
			[]string{"Delegate=" + unitfile.DelegateV1, "read back Delegate=no", "/etc/systemd/system/cellguard-garden.service.d/90-operator.conf", "remove Delegate="}},
		{"systemd takes neither none nor process", "", true,
			[]string{"KillMode=process", "read back KillMode=control-group", "systemd-analyze verify /etc/systemd/system/cellguard-garden.service"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, d := fakeDaemonRoot(t)
			if tc.dropIn != "" {
				dir := filepath.Join(root, PersistentUnitDir, "cellguard-garden.service.d")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "90-operator.conf"), []byte("[Service]\n"+tc.dropIn), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sd := newFakeSystemd(root)
			sd.refuseKill = tc.refuseKill
			m := &Manager{Logger: lagertest.NewTestLogger("install"), Root: root, Delegate: unitfile.DelegateV1, conn: sd}
			res, err := m.Install(context.Background(), d)
			if err == nil {
				t.Fatalf("install succeeded (%+v): a refused setting was taken as installed", res)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			t.Logf("%v", err)
		})
	}
}

// Where systemd honours none, one write and one reload; an unchanged
// install does neither, and a reload a killed run missed is made up.
func TestInstallReloadsOnlyWhenNeeded(t *testing.T) {
	root, d := fakeDaemonRoot(t)
	sd := newFakeSystemd(root)
	var m *Manager
	for i, want := range []int{1, 1} {
		// A Manager per install, as each `cellguard start` is a process.
		m = &Manager{Logger: lagertest.NewTestLogger("install"), Root: root, Delegate: unitfile.DelegateV1, conn: sd}
		res, err := m.Install(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		if sd.reloads != want || res.KillMode != unitfile.KillModeNone || res.Written != (i == 0) {
			t.Errorf("install %d: %+v after %d reloads, want %d", i, res, sd.reloads, want)
		}
		// The KillMode=none note (systemd's Version) only when the unit was
		// written: not on every unchanged install, which every start is.
		if sd.versionReads != 1 {
			t.Errorf("install %d: %d Version reads, want 1 (the first install's)", i, sd.versionReads)
		}
	}
	// A run that wrote the file and died before its Reload.
	p := filepath.Join(root, PersistentUnitDir, d.UnitName())
	b, _ := os.ReadFile(p)
	sd.texts[d.UnitName()] = string(b) + "# older\n"
	res, err := m.Install(context.Background(), d)
	if err != nil || res.Written || !res.Reloaded || sd.reloads != 2 {
		t.Errorf("after a missed reload: %+v, %v, %d reloads", res, err, sd.reloads)
	}
}

// On systemd before 236 (xenial's 229) the v1 list reads back as
// Delegate=no; Install then writes "yes", which delegates every controller
// there, and later installs keep it without rewriting. On 252 it never asks
// the version for this.
func TestInstallOnSystemdBeforeDelegateLists(t *testing.T) {
	root, d := fakeDaemonRoot(t)
	sd := newFakeSystemd(root)
	sd.version, sd.boolDelegate = "229", true
	for i := range 2 {
		m := &Manager{Logger: lagertest.NewTestLogger("install"), Root: root, conn: sd}
		res, err := m.Install(context.Background(), d)
		if err != nil {
			t.Fatalf("install %d: %v", i, err)
		}
		b, _ := os.ReadFile(filepath.Join(root, PersistentUnitDir, d.UnitName()))
		v, _, _ := unitfile.Setting(b, "Service", "Delegate")
		if res.Delegate != unitfile.DelegateV2 || v != unitfile.DelegateV2 || res.Written != (i == 0) {
			t.Errorf("install %d: %+v, the file says Delegate=%s; want yes, written only by the first", i, res, v)
		}
	}
	if sd.reloads != 2 {
		t.Errorf("%d reloads; want 2 (the list, then yes), none for the unchanged install", sd.reloads)
	}
}

// Prune with systemd's answers faked: the running unit and the running
// supervisor keep their files, the stopped failed unit goes and is reset,
// one reload for all; forcing takes the supervisor's drop-in too.
func TestPruneKeepsWhatIsInUse(t *testing.T) {
	root := t.TempDir()
	write := func(p string, b []byte) {
		t.Helper()
		hp := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hp, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	unit := func(daemon string) []byte { return renderedUnit(t, daemon) }
	drop := supervisorDropIn(t)
	const supPath = "/etc/systemd/system/runit.service.d/50-cellguard-delegate.conf"
	write("/etc/systemd/system/cellguard-busy.service", unit("busy"))
	write("/etc/systemd/system/cellguard-crashed.service", unit("crashed"))
	write("/etc/systemd/system/cellguard-leftover.service", unit("leftover"))
	write(supPath, drop)
	sd := newFakeSystemd(root)
	sd.active["cellguard-busy.service"] = "active"
	sd.active["cellguard-crashed.service"] = "failed"
	sd.active["runit.service"] = "active"
	sd.procs["cellguard-leftover.service"] = []systemd.Process{{PID: 99, Cmdline: "sleep"}}
	m := &Manager{Logger: lagertest.NewTestLogger("prune"), Root: root, conn: sd}

	res, err := m.Prune(context.Background(), PruneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, it := range res.Items {
		got[filepath.Base(it.Path)] = it.Action
	}
	want := map[string]string{"cellguard-busy.service": Kept, "cellguard-crashed.service": Removed,
		"cellguard-leftover.service": Kept, "50-cellguard-delegate.conf": Kept}
	if len(got) != len(want) {
		t.Errorf("items %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
	if sd.reloads != 1 || !res.Reloaded || len(sd.resetFailed) != 1 || sd.resetFailed[0] != "cellguard-crashed.service" {
		t.Errorf("reloads %d (Reloaded %v), reset-failed %v; want one reload, crashed reset", sd.reloads, res.Reloaded, sd.resetFailed)
	}
	if _, err := os.Stat(filepath.Join(root, supPath)); err != nil {
		t.Errorf("running supervisor's drop-in: %v", err)
	}

	res, err = m.Prune(context.Background(), PruneOptions{ForceSupervisorDropIn: true, Uninstall: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, supPath)); !os.IsNotExist(err) {
		t.Errorf("forced: supervisor's drop-in still there (%v): %+v", err, res.Items)
	}
	if _, err := os.Stat(filepath.Join(root, "/etc/systemd/system/cellguard-busy.service")); err != nil {
		t.Errorf("forced: a running daemon's unit went: %v", err)
	}
	if sd.reloads != 2 {
		t.Errorf("reloads %d after the forced run, want 2", sd.reloads)
	}
}

// start's and stop's decision on systemd's job result: only "done" goes
// on to wait for the process; any other result fails with where to look.
func TestJudgeJob(t *testing.T) {
	d := Daemon{Name: "garden"}
	if err := judgeJob("start", d, "done"); err != nil {
		t.Errorf("done: %v", err)
	}
	for _, jr := range []systemd.JobResult{"failed", "canceled", "timeout", "dependency", "skipped", "odd"} {
		err := judgeJob("stop", d, jr)
		if err == nil {
			t.Errorf("%s: no error", jr)
			continue
		}
		for _, w := range []string{"stop cellguard-garden.service: job " + jr.Explain(), "journalctl -u cellguard-garden.service", "cellguard unit status garden"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", jr, err, w)
			}
		}
	}
}
