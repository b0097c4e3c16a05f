package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"

	"github.com/cloudfoundry/cellguard/src/internal/checks"
	"github.com/cloudfoundry/cellguard/src/internal/daemonctl"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// Issue 13's lifecycle on a real systemd: pre-start converges on the
// manifest without stopping anything, the supervisor keeps its drop-in
// while it runs, uninstall removes what nothing uses, and drain judges a
// real escape by the agent's arguments.

// inBox runs args in the box and returns exit code, stdout and stderr
// apart (drain's stdout is the agent's).
func inBox(t *testing.T, box *sdbox.Box, args ...string) (int, string, string) {
	t.Helper()
	r := runCellguard(t, box, args...)
	return r.code, r.stdout, r.stderr
}

// alive fails the test unless every pid still runs in the box.
func alive(t *testing.T, box *sdbox.Box, what string, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err != nil {
			t.Errorf("%s: pid %d is gone (%v): nothing may be stopped or killed", what, pid, err)
		}
	}
}

// hostPID is the host's pid of a pid in the box's namespace, read from the
// pidfile's process through /proc/<box init>/root: the box's pids are its
// own, so kill(2) from the test needs the host's.
func hostPID(t *testing.T, box *sdbox.Box, boxPID int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "NSpid:" {
				if len(f) > 2 && f[len(f)-1] == strconv.Itoa(boxPID) && sameBox(box, pid) {
					return pid
				}
			}
		}
	}
	t.Fatalf("no host pid for box pid %d", boxPID)
	return 0
}

func sameBox(box *sdbox.Box, pid int) bool {
	a, err1 := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "ns/pid"))
	b, err2 := os.Readlink(filepath.Join("/proc", strconv.Itoa(box.InitPID), "ns/pid"))
	return err1 == nil && err2 == nil && a == b
}

func pruneItem(res daemonctl.PruneResult, path string) (daemonctl.PruneItem, bool) {
	for _, it := range res.Items {
		if it.Path == path {
			return it, true
		}
	}
	return daemonctl.PruneItem{}, false
}

// TestPruneConverges: pre-start's unit prune after daemons left the
// manifest. An installed unit that never ran and a failed one are removed
// (the failed state reset); a running unit is kept; a stopped unit whose
// KillMode=none left a process in its cgroup (a daemon's container) is
// kept until that process is gone. Nothing is stopped or killed, and
// systemd reloads once per run that removed something.
func TestPruneConverges(t *testing.T) {
	box := bootBox(t, "prune")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m := &daemonctl.Manager{Logger: lagertest.NewTestLogger("prune"), Root: box.Root,
		DBus: systemd.Options{Address: box.SystemBusAddress}}
	t.Cleanup(m.Close)
	daemon := func(name string) daemonctl.Daemon {
		ctl, pidfile := installFakeGarden(t, box, name)
		d := daemonctl.Daemon{Name: name, Start: []string{ctl, "start"}, Stop: []string{ctl, "stop"}, PIDFile: pidfile,
			StartTimeout: 20 * time.Second, StopTimeout: 20 * time.Second}
		if _, err := m.Install(ctx, d); err != nil {
			t.Fatalf("install %s: %v", name, err)
		}
		return d
	}
	running, stopped := daemon("running"), daemon("stopped")
	daemon("idle") // installed, never started
	writeFile(t, box, "/var/vcap/jobs/broken/bin/broken_ctl", "#!/bin/sh\nexit 1\n", 0o755)
	broken := daemonctl.Daemon{Name: "broken", Start: []string{"/var/vcap/jobs/broken/bin/broken_ctl", "start"}, StartTimeout: 10 * time.Second}
	if _, err := m.Install(ctx, broken); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Start(ctx, broken); err == nil {
		t.Fatal("the broken daemon started")
	}
	if u, _ := m.Status(ctx, "cellguard-broken.service"); u == nil || u.ActiveState != "failed" {
		t.Fatalf("cellguard-broken.service: %+v, want failed", u)
	}
	if _, err := m.Start(ctx, running); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Start(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	runningPID := readPID(t, box, running.PIDFile)
	runningChild := readPID(t, box, "/var/vcap/sys/run/running/child.pid")
	leftover := readPID(t, box, "/var/vcap/sys/run/stopped/child.pid")
	if _, err := m.Stop(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	pids := []int{hostPID(t, box, runningPID), hostPID(t, box, runningChild), hostPID(t, box, leftover)}
	cgBefore := cgroups(t, box, runningChild)

	reloads := sdbox.WatchReloads(t, box.SystemBusAddress)
	before := reloads.Settle(t)
	res, err := m.Prune(ctx, daemonctl.PruneOptions{KeepSupervisor: true}) // every daemon left the manifest
	if err != nil {
		t.Fatalf("prune: %v", err)
	}
	for _, it := range res.Items {
		t.Logf("%s %s %s: %s", it.Action, it.Kind, it.Path, it.Why)
	}
	want := map[string]string{
		"/etc/systemd/system/cellguard-idle.service":    daemonctl.Removed,
		"/etc/systemd/system/cellguard-broken.service":  daemonctl.Removed,
		"/etc/systemd/system/cellguard-running.service": daemonctl.Kept,
		"/etc/systemd/system/cellguard-stopped.service": daemonctl.Kept,
	}
	for p, action := range want {
		it, ok := pruneItem(res, p)
		if !ok || it.Action != action {
			t.Errorf("%s: %+v, want %s", p, it, action)
		}
		if _, err := os.Stat(box.HostPath(p)); (err == nil) != (action == daemonctl.Kept) {
			t.Errorf("%s on disk: %v, want it %s", p, err, action)
		}
	}
	if it, _ := pruneItem(res, "/etc/systemd/system/cellguard-running.service"); !strings.Contains(it.Why, "is active (running") {
		t.Errorf("running unit kept for %q", it.Why)
	}
	if it, _ := pruneItem(res, "/etc/systemd/system/cellguard-stopped.service"); !strings.Contains(it.Why, "1 process is still in its cgroup: "+strconv.Itoa(leftover)) {
		t.Errorf("stopped unit kept for %q, want its leftover pid %d named", it.Why, leftover)
	}
	if got := reloads.Settle(t) - before; got != 1 || !res.Reloaded {
		t.Errorf("systemd saw %d reloads (reported %v), want 1", got, res.Reloaded)
	}
	for _, u := range []string{"cellguard-broken.service", "cellguard-idle.service"} {
		if st, err := m.Status(ctx, u); !errors.Is(err, daemonctl.ErrUnitMissing) {
			t.Errorf("%s after prune: %+v %v, want not found (failed state reset)", u, st, err)
		}
	}
	alive(t, box, "after prune", pids...)
	if d := moved(cgBefore, cgroups(t, box, runningChild)); len(d) != 0 {
		t.Errorf("the running daemon's child moved: %s", describe(d))
	}

	// The leftover goes (the test started it, through the stand-in); the
	// next pre-start finishes.
	if err := syscall.Kill(pids[2], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the leftover to exit", func() (bool, string) { return syscall.Kill(pids[2], 0) != nil, "" })
	before = reloads.Settle(t)
	res, err = m.Prune(ctx, daemonctl.PruneOptions{Keep: []string{"running"}, KeepSupervisor: true})
	if err != nil {
		t.Fatal(err)
	}
	if it, ok := pruneItem(res, "/etc/systemd/system/cellguard-stopped.service"); !ok || it.Action != daemonctl.Removed || len(res.Items) != 1 {
		t.Fatalf("second prune: %+v", res.Items)
	}
	// Converged: a third run finds nothing and does not reload.
	res, err = m.Prune(ctx, daemonctl.PruneOptions{Keep: []string{"running"}, KeepSupervisor: true})
	if err != nil || len(res.Items) != 0 || res.Reloaded {
		t.Fatalf("third prune: %+v %v", res, err)
	}
	if got := reloads.Settle(t) - before; got != 1 {
		t.Errorf("second and third prune: %d reloads, want 1", got)
	}
	alive(t, box, "after the last prune", pids[:2]...)
}

// TestSupervisorDropInDecision measures what removing the supervisor's
// drop-in from a running supervisor does to a monit job's container child,
// and proves the decision built on it: with supervisor.protect false,
// pre-start keeps the drop-in while the unit runs, and nothing moves while
// units with accounting come and go; only uninstall
// --force-supervisor-drop-in removes it. Nothing is ever stopped or killed.
//
// Measured on systemd 252 (hybrid), in every layout below: once no other
// unit of the slice needs cpu and blkio (a unit with accounting came and
// went), the daemon-reload that drops the delegation moves the child's cpu
// and blkio out of garden/c1 to the root; a later unit with accounting may
// move them on into the supervisor's cgroup (on 2026-12-01 only with the
// drop-in added while running; the others stayed at the root). Either way
// the child left garden/c1, which is what the test asserts: seed-000's escape, made
// by the removal itself; the kept drop-in is what stops it. The layouts:
// the supervisor started with the drop-in (any VM rebooted since it was
// protected) or got it while running (the first deploy), and a child in
// garden/c1 in the v1 hierarchies only (runc before 1.1 on a hybrid host)
// or in every hierarchy (runc 1.1 and later join cgroup v2 there too, runc
// commit a8435007d).
func TestSupervisorDropInDecision(t *testing.T) {
	for _, tc := range []struct {
		name     string
		hier     string // fakeGarden's placement
		rebooted bool
	}{
		{"runc before 1.1, supervisor started with the drop-in", "ctl", true},
		{"runc before 1.1, drop-in added to the running supervisor", "ctl", false},
		{"runc 1.1 and later, supervisor started with the drop-in", "all", true},
	} {
		t.Run(tc.name, func(t *testing.T) { supervisorDropInScenario(t, tc.hier, tc.rebooted) })
	}
}

func supervisorDropInScenario(t *testing.T, hier string, rebooted bool) {
	box := bootBox(t, "unprotect")
	cellguard := box.InstallCellguard(t)
	ctl, pidfile := installFakeGarden(t, box, "legacy")
	writeFile(t, box, ctl, fmt.Sprintf(fakeGardenCtl, "legacy", hier), 0o755)
	setUpBOSHMonit(t, box, nil)
	box.Run(t, cellguard, "unit", "protect-supervisor")
	if rebooted {
		box.Run(t, "systemctl", "restart", "runit.service")
		waitFor(t, 20*time.Second, "monit's httpd to answer again", func() (bool, string) {
			out, err := box.Output("monit", "-c", monitrc, "summary")
			return err == nil, out
		})
	}
	monitPID, _ := strconv.Atoi(strings.TrimSpace(box.Run(t, "systemctl", "show", "-p", "MainPID", "--value", "runit.service")))
	writeFile(t, box, "/var/vcap/monit/job/legacy.monitrc", fmt.Sprintf("check process legacy\n  with pidfile %s\n  start program \"%[2]s start\"\n  stop program \"%[2]s stop\"\n", pidfile, ctl), 0o644)
	monit(t, box, "reload")
	waitFor(t, 20*time.Second, "monit to start the legacy job", func() (bool, string) {
		out, err := box.Output("monit", "-c", monitrc, "start", "legacy")
		return err == nil, out
	})
	child := readPID(t, box, "/var/vcap/sys/run/legacy/child.pid")
	pids := []int{hostPID(t, box, monitPID), hostPID(t, box, child)}
	before := cgroups(t, box, child)
	t.Logf("child %d before: %s", child, describeCgroups(before))
	// A unit with accounting comes and goes (systemd-tmpfiles-clean, a
	// timer's job): while it runs, systemd realizes cpu and blkio for every
	// unit of the slice; when it ends, for none that does not need them.
	trigger := func(n int) {
		box.Run(t, "systemd-run", "--wait", fmt.Sprintf("--unit=trigger%d", n), "-p", "CPUAccounting=yes", "-p", "CPUWeight=50",
			"-p", "IOWeight=50", "-p", "MemoryAccounting=yes", "-p", "TasksAccounting=yes", "/bin/sleep", "1")
	}
	dropIn := "/etc/systemd/system/runit.service.d/" + unitfile.DropInName

	writeFile(t, box, "/etc/cellguard.json", `{"supervisor":{"protect":false}}`, 0o644)
	code, out, errOut := inBox(t, box, cellguard, "unit", "prune", "--config", "/etc/cellguard.json")
	t.Logf("unit prune, protect false:\n%s%s", out, errOut)
	if code != 0 || !strings.Contains(out, "KEPT") || !strings.Contains(errOut, "warning: kept "+dropIn) ||
		!strings.Contains(errOut, "recreate") {
		t.Fatalf("prune with protect false: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := box.ReadFile(dropIn); err != nil {
		t.Fatalf("the drop-in went: %v", err)
	}
	trigger(1)
	trigger(2)
	if d := moved(before, cgroups(t, box, child)); len(d) != 0 {
		t.Fatalf("with the drop-in kept, the child moved: %s", describe(d))
	}

	code, out, errOut = inBox(t, box, cellguard, "uninstall", "--force-supervisor-drop-in", "--config", "/etc/cellguard.json")
	t.Logf("uninstall --force-supervisor-drop-in:\n%s%s", out, errOut)
	if code != 0 || !regexp.MustCompile(`removed\s+supervisor-drop-in`).MatchString(out) {
		t.Fatalf("forced uninstall: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("runit.service after the removal: %s", strings.Join(strings.Fields(box.Run(t, "systemctl", "show", "-p", "Delegate", "-p", "DelegateControllers", "-p", "DropInPaths", "-p", "ControlGroup", "runit.service")), " "))
	atReload := moved(before, cgroups(t, box, child))
	t.Logf("measured, drop-in removed and systemd reloaded: %s", describe(atReload))
	trigger(3)
	atTrigger := moved(before, cgroups(t, box, child))
	t.Logf("measured, then a new unit with accounting started: %s", describe(atTrigger))
	for _, c := range []string{"cpu", "blkio"} {
		if !controllerMoved(atTrigger, c) {
			t.Errorf("%s did not move: the measurement behind keeping the drop-in no longer holds (at the reload: %s; after a new unit: %s)",
				c, describe(atReload), describe(atTrigger))
		}
	}
	alive(t, box, "monit and the job's child", pids...)
	if n := strings.TrimSpace(box.Run(t, "systemctl", "show", "-p", "NRestarts", "--value", "runit.service")); n != "0" {
		t.Errorf("runit.service restarted %s times", n)
	}
	if hier != "all" || !rebooted {
		return
	}
	// A supervisor unit that does not run loses its drop-in at once.
	idle, err := unitfile.RenderSupervisorDropIn("idle.service", unitfile.DelegateV1)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, box, "/etc/systemd/system/idle.service", "[Service]\nExecStart=/bin/sleep 300\n", 0o644)
	writeFile(t, box, "/etc/systemd/system/idle.service.d/"+unitfile.DropInName, string(idle), 0o644)
	box.Run(t, "systemctl", "daemon-reload")
	code, out, errOut = inBox(t, box, cellguard, "unit", "prune", "--config", "/etc/cellguard.json")
	if code != 0 || !regexp.MustCompile(`removed\s+supervisor-drop-in\s+/etc/systemd/system/idle.service.d/`+unitfile.DropInName).MatchString(out) {
		t.Fatalf("prune of an idle supervisor's drop-in: exit %d\n%s%s", code, out, errOut)
	}
}

// TestUninstall: over bosh ssh, uninstall removes what cellguard put on a
// VM and nothing uses, keeps the running daemon's unit and the running
// supervisor's drop-in with why, kills nothing, and a second run removes
// nothing more.
func TestUninstall(t *testing.T) {
	box := bootBox(t, "uninstall")
	cellguard := box.InstallCellguard(t)
	ctl, pidfile := installFakeGarden(t, box, "garden")
	setUpBOSHMonit(t, box, nil)
	monitPID, _ := strconv.Atoi(strings.TrimSpace(box.Run(t, "systemctl", "show", "-p", "MainPID", "--value", "runit.service")))
	cfg := fmt.Sprintf(`{"daemons":[{"name":"garden","start":"%[1]s start","stop":"%[1]s stop","pidfile":"%[2]s"},
	  {"name":"idle","start":"%[1]s start"}],"supervisor":{"protect":true},
	  "validator":{"prometheus_textfile":"/var/vcap/data/node_exporter/cellguard.prom"}}`, ctl, pidfile)
	writeFile(t, box, "/etc/cellguard.json", cfg, 0o644)
	c := []string{"--config", "/etc/cellguard.json"}
	box.Run(t, append([]string{cellguard, "unit", "install", "garden"}, c...)...)
	box.Run(t, append([]string{cellguard, "unit", "install", "idle"}, c...)...)
	box.Run(t, append([]string{cellguard, "unit", "protect-supervisor"}, c...)...)
	box.Run(t, append([]string{cellguard, "start", "garden"}, c...)...)
	gardenPID := readPID(t, box, pidfile)
	child := readPID(t, box, "/var/vcap/sys/run/garden/child.pid")
	pids := []int{hostPID(t, box, monitPID), hostPID(t, box, gardenPID), hostPID(t, box, child)}
	// What the other commands leave: the sysctl file, the textfile, a lift,
	// and a temp file of a write killed mid-way.
	writeFile(t, box, "/etc/sysctl.d/60-cellguard.conf", "# Written by cellguard sysctl apply (profile none).\nnet.ipv4.ip_forward = 1\n", 0o644)
	writeFile(t, box, "/var/vcap/data/node_exporter/cellguard.prom", "# HELP cellguard_check_status x\n", 0o644)
	box.Run(t, cellguard, "drain", "lift", "--reason", "test", "--by", "tester")
	writeFile(t, box, "/etc/systemd/system/.cellguard-garden.service.tmp-123", "half", 0o644)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(box.HostPath("/etc/systemd/system/.cellguard-garden.service.tmp-123"), old, old); err != nil {
		t.Fatal(err)
	}
	// A start stamp of a cellguard before the stamps were dropped, on a VM
	// upgraded in place.
	const legacyStamp = "/run/cellguard/verified/cellguard-garden.service"
	writeFile(t, box, legacyStamp, "0b5e... 9f86...\n", 0o644)

	code, out, errOut := inBox(t, box, append([]string{cellguard, "uninstall"}, c...)...)
	t.Logf("uninstall:\n%s%s", out, errOut)
	if code != 0 {
		t.Fatalf("uninstall: exit %d", code)
	}
	for _, p := range []string{"/etc/systemd/system/cellguard-idle.service", "/etc/sysctl.d/60-cellguard.conf",
		"/var/vcap/data/node_exporter/cellguard.prom", "/var/vcap/data/cellguard-lift/drain-lift.json",
		"/etc/systemd/system/.cellguard-garden.service.tmp-123", legacyStamp} {
		if _, err := box.ReadFile(p); err == nil {
			t.Errorf("%s is still there", p)
		}
		if !strings.Contains(out, p) {
			t.Errorf("uninstall does not list %s", p)
		}
	}
	for _, p := range []string{"/etc/systemd/system/cellguard-garden.service", "/etc/systemd/system/runit.service.d/" + unitfile.DropInName} {
		if _, err := box.ReadFile(p); err != nil {
			t.Errorf("%s was removed although it is in use: %v", p, err)
		}
	}
	mustContainAll(t, out, "cellguard-garden.service is active", "removing its Delegate= drop-in", "6 removed, 2 kept")
	alive(t, box, "after uninstall", pids...)

	code, out2, _ := inBox(t, box, append([]string{cellguard, "uninstall"}, c...)...)
	if code != 0 || !strings.Contains(out2, "0 removed, 2 kept") {
		t.Fatalf("second uninstall: exit %d\n%s", code, out2)
	}
	alive(t, box, "after the second uninstall", pids...)
}

func describeCgroups(m map[string]string) string {
	var parts []string
	for h, p := range m {
		if h == "" {
			h = "unified"
		}
		parts = append(parts, h+":"+p)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func mustContainAll(t *testing.T, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("output lacks %q:\n%s", w, s)
		}
	}
}

// TestDrainOnARealEscape: Debian's runc runs a container below a plain
// unit, a new unit with accounting moves its cpu and blkio (seed-000), and
// cellguard drain judges it by the agent's arguments: job_shutdown lets the
// VM go with the escape logged and in the metrics; an update blocks (no
// integer) naming the pid; a lift unblocks it and expires on its own; a
// config that cannot run does not block. All that is with
// cellguard.drain.heal off (its absence). On, drain heals the escape where
// it can and blocks on the rest, naming each process and why: with the
// container's blkio cgroup gone (a destroy that removed its empty cgroups
// while the process was outside) the cpu move holds, the blkio one fails
// and the update blocks; with the cgroup there again the move holds,
// verified by the kernel, and the update passes.
func TestDrainOnARealEscape(t *testing.T) {
	box := bootBox(t, "drain-escape")
	cellguard := box.InstallCellguard(t)
	installRunc(t, box)
	pid := startGarden(t, box)
	removeContainersAtEnd(t, box, "c1")
	startTrigger(t, box)

	// Only the container checks decide: the box's runc has advisories and
	// its unit is not delegated, which other tests cover.
	var others []string
	for _, id := range checks.IDs() {
		switch id {
		case "cgroup-integrity", "runtime-ghosts", "stuck-runc-init":
		default:
			others = append(others, `"`+id+`"`)
		}
	}
	config := func(extra string) string {
		return fmt.Sprintf(`{"validator":{"runtime_roots":["%s"],"ignore":[%s],"prometheus_textfile":"/var/log/cellguard.prom"%s}}`,
			runcRoot, strings.Join(others, ","), extra)
	}
	writeFile(t, box, "/etc/cellguard.json", config(""), 0o644)
	drain := func(args ...string) (int, string, string) {
		return inBox(t, box, append([]string{"env", "BOSH_JOB_STATE={\"persistent_disk\":0}", cellguard, "drain",
			"--config", "/etc/cellguard.json", "--log-file", "/var/log/drain.log", "--"}, args...)...)
	}
	read := func(p string) string {
		b, err := box.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	code, out, errOut := drain("job_shutdown", "hash_unchanged")
	if code != 0 || out != "0\n" || !strings.Contains(errOut, fmt.Sprintf("pid %d (sleep) escaped in blkio", pid)) {
		t.Fatalf("job_shutdown: exit %d stdout %q\n%s", code, out, errOut)
	}
	mustContainAll(t, read("/var/log/drain.log"), `"outcome":"released_on_shutdown"`, fmt.Sprintf(`"pid":"%d"`, pid))
	mustContainAll(t, read("/var/log/cellguard.prom"), `cellguard_validate_blocked{phase="drain"} 1`,
		`cellguard_drain_outcome{event="shutdown",outcome="released_on_shutdown"} 1`)

	code, out, errOut = drain("job_changed", "hash_changed", "cellguard")
	if code != 1 || out != "" || !strings.Contains(errOut, fmt.Sprintf("pid %d (sleep) escaped", pid)) {
		t.Fatalf("job_changed: exit %d stdout %q, want 1 and nothing\n%s", code, out, errOut)
	}
	t.Logf("update blocked:\n%s", errOut)

	code, out, errOut = inBox(t, box, "env", "SUDO_USER=bosh_a1b2", cellguard, "drain", "lift", "--reason", "INC-7: recreating next", "--for", "4s")
	if code != 0 {
		t.Fatalf("lift: exit %d\n%s%s", code, out, errOut)
	}
	lifted := time.Now()
	code, out, _ = drain("job_changed", "hash_changed", "cellguard")
	if code != 0 || out != "0\n" {
		t.Fatalf("lifted update: exit %d stdout %q", code, out)
	}
	mustContainAll(t, read("/var/log/drain.log"), `"message":"cellguard.drain.drain-block-lifted"`, `"sudo_user":"bosh_a1b2"`)
	time.Sleep(time.Until(lifted.Add(5 * time.Second))) // the lift expires on the box's own clock
	if code, out, _ = drain("job_changed", "hash_changed", "cellguard"); code != 1 || out != "" {
		t.Fatalf("after the lift expired: exit %d stdout %q, want blocked", code, out)
	}

	writeFile(t, box, "/etc/cellguard.json", `{"validator":{"blocking":{"drain":["cgroup-integrty"]}}}`, 0o644)
	code, out, errOut = drain("job_changed", "hash_changed", "cellguard")
	if code != 2 || out != "0\n" || !strings.Contains(errOut, "could_not_run") {
		t.Fatalf("config that cannot run: exit %d stdout %q\n%s", code, out, errOut)
	}

	// cellguard.drain.heal, with watch's heal budget.
	healing := config(``)
	healing = healing[:len(healing)-1] + `,"drain":{"heal":true},"watch":{"heal_per_minute":5}}`
	writeFile(t, box, "/etc/cellguard.json", healing, 0o644)
	blkio := "/sys/fs/cgroup/blkio" + ctrCgroup
	box.Run(t, "rmdir", blkio)
	code, out, errOut = drain("job_changed", "hash_changed", "cellguard")
	t.Logf("heal with c1's blkio cgroup gone:\n%s", errOut)
	if code != 1 || out != "" {
		t.Fatalf("update with an escape drain cannot heal: exit %d stdout %q, want 1 and nothing\n%s", code, out, errOut)
	}
	mustContainAll(t, errOut, "drain could not heal 1 (cellguard.drain.heal)",
		fmt.Sprintf("pid %d (sleep) of c1 in blkio: moving it back failed: move pid %d: open %s/cgroup.procs", pid, pid, blkio),
		fmt.Sprintf("pid %d (sleep) had escaped in cpu", pid))
	mustContainAll(t, read("/var/log/drain.log"), `"message":"cellguard.drain.heal"`, `"result":"moved"`, `"result":"failed"`,
		`"outcome":"blocked"`)
	for h, p := range cgroups(t, box, pid) {
		if strings.Contains(h, "cpu") && p != ctrCgroup || h == "blkio" && p == ctrCgroup {
			t.Errorf("after a partial heal pid %d is in %s:%s, want cpu back in %s and blkio still out", pid, h, p, ctrCgroup)
		}
	}

	box.Run(t, "mkdir", blkio)
	code, out, errOut = drain("job_changed", "hash_changed", "cellguard")
	t.Logf("heal:\n%s", errOut)
	if code != 0 || out != "0\n" || !strings.Contains(errOut, "moved back to "+ctrCgroup) || !strings.Contains(errOut, ": healed: no blocking finding left; drain moved 1 escaped process back") {
		t.Fatalf("update with drain.heal: exit %d stdout %q\n%s", code, out, errOut)
	}
	mustContainAll(t, read("/var/log/cellguard.prom"), `cellguard_drain_outcome{event="update",outcome="healed"} 1`)
	for h, p := range cgroups(t, box, pid) {
		if p != ctrCgroup {
			t.Errorf("after the heal pid %d is in %s:%s", pid, h, p)
		}
	}
	box.Run(t, "kill", "-0", strconv.Itoa(pid)) // moved, never killed
}

// TestPruneKeepsDelegatedUnitsByTheirList: the drop-in `unit delegate`
// writes on another release's unit (cellguard.delegate_units) has the
// supervisor's file name. pre-start's prune keeps it by delegate_units,
// whatever supervisor.protect says; a unit dropped from the list keeps it
// while it runs (its containers would move, as the supervisor's) and
// loses it once it does not. Nothing is stopped but by the test.
func TestPruneKeepsDelegatedUnitsByTheirList(t *testing.T) {
	box := bootBox(t, "prune-delegated")
	cellguard := box.InstallCellguard(t)
	writeFile(t, box, "/etc/systemd/system/worker.service", "[Service]\nExecStart=/bin/sleep infinity\n", 0o644)
	box.Run(t, "systemctl", "daemon-reload")
	box.Run(t, "systemctl", "start", "worker.service")
	workerPID, _ := strconv.Atoi(strings.TrimSpace(box.Run(t, "systemctl", "show", "-p", "MainPID", "--value", "worker.service")))
	pid := hostPID(t, box, workerPID)
	dropIn := "/etc/systemd/system/worker.service.d/" + unitfile.DropInName
	prune := func(cfg string) (string, string) {
		t.Helper()
		writeFile(t, box, "/etc/cellguard.json", cfg, 0o644)
		code, out, errOut := inBox(t, box, cellguard, "unit", "prune", "--config", "/etc/cellguard.json")
		t.Logf("unit prune with %s:\n%s%s", cfg, out, errOut)
		if code != 0 {
			t.Fatalf("unit prune: exit %d", code)
		}
		return out, errOut
	}

	writeFile(t, box, "/etc/cellguard.json", `{"supervisor":{"protect":false},"delegate_units":["worker.service"]}`, 0o644)
	box.Run(t, cellguard, "unit", "delegate", "--config", "/etc/cellguard.json")
	if out, _ := prune(`{"supervisor":{"protect":false},"delegate_units":["worker.service"]}`); !strings.Contains(out, "nothing to remove") {
		t.Errorf("protect false touched the delegated unit's drop-in:\n%s", out)
	}
	if _, err := box.ReadFile(dropIn); err != nil {
		t.Fatalf("the delegated unit's drop-in went: %v", err)
	}

	out, errOut := prune(`{"supervisor":{"protect":true},"delegate_units":[]}`)
	if !regexp.MustCompile(`KEPT\s+delegate-drop-in\s+`+dropIn).MatchString(out) ||
		!strings.Contains(errOut, "worker.service is no longer in cellguard.delegate_units, but worker.service is active") {
		t.Errorf("a running unit dropped from delegate_units: want its drop-in kept with why")
	}
	if _, err := box.ReadFile(dropIn); err != nil {
		t.Fatalf("the running unit's drop-in went: %v", err)
	}
	alive(t, box, "after prune", pid)

	box.Run(t, "systemctl", "stop", "worker.service") // the test's own unit
	if out, _ := prune(`{"supervisor":{"protect":true},"delegate_units":[]}`); !regexp.MustCompile(`removed\s+delegate-drop-in\s+` + dropIn).MatchString(out) {
		t.Errorf("a stopped unit dropped from delegate_units: want its drop-in removed")
	}
	if _, err := box.ReadFile(dropIn); err == nil {
		t.Errorf("%s is still there", dropIn)
	}
}
