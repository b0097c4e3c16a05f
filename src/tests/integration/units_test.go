package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"

	"github.com/cloudfoundry/cellguard/src/internal/daemonctl"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// TestUnitLifecycleOverDBus drives a real systemd from the host through its
// system bus: install -> Reload -> start -> properties read back -> daemon in
// the unit's cgroup -> stop; reinstall unchanged does not Reload; a changed
// command does.
func TestUnitLifecycleOverDBus(t *testing.T) {
	box := bootBox(t, "units")
	m, d := fakeGardenUnit(t, box, "garden")
	ctl := d.Start[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reloads := sdbox.WatchReloads(t, box.SystemBusAddress)
	before := reloads.Settle(t)

	res, err := m.Install(ctx, d)
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	if !res.Written || !res.Reloaded {
		t.Fatalf("first install: written=%v reloaded=%v, want both", res.Written, res.Reloaded)
	}
	if got := reloads.Settle(t) - before; got != 1 {
		t.Fatalf("first install: systemd saw %d reloads, want 1", got)
	}
	text, err := os.ReadFile(filepath.Join(box.Root, "/etc/systemd/system/cellguard-garden.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "Delegate="+unitfile.DelegateV1+"\n") {
		t.Fatalf("unit file lacks the v1 delegation list on this hybrid host:\n%s", text)
	}

	st, err := m.Start(ctx, d)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if st.JobResult != "done" || st.PID == 0 {
		t.Fatalf("start result %+v", st)
	}
	u, err := m.Status(ctx, "cellguard-garden.service")
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	if u.ActiveState != "active" || !u.Delegate || u.KillMode != "none" || u.TasksMax != ^uint64(0) {
		t.Fatalf("unit read back: active=%s delegate=%v killmode=%s tasksmax=%d", u.ActiveState, u.Delegate, u.KillMode, u.TasksMax)
	}
	for _, c := range []string{"blkio", "cpu", "cpuacct", "devices", "io", "memory", "pids"} {
		if !slices.Contains(u.DelegateControllers, c) {
			t.Errorf("DelegateControllers %v lacks %s", u.DelegateControllers, c)
		}
	}
	if int(u.MainPID) != st.PID {
		t.Errorf("MainPID %d, pidfile says %d", u.MainPID, st.PID)
	}
	cg := cgroups(t, box, st.PID)
	if cg["name=systemd"] != u.ControlGroup {
		t.Errorf("daemon pid %d is in %q in name=systemd, want the unit's %q (all: %v)", st.PID, cg["name=systemd"], u.ControlGroup, cg)
	}

	after := reloads.Settle(t)
	res, err = m.Install(ctx, d)
	if err != nil {
		t.Fatalf("reinstall: %v", err)
	}
	if res.Written || res.Reloaded {
		t.Fatalf("unchanged reinstall: written=%v reloaded=%v, want neither", res.Written, res.Reloaded)
	}
	if got := reloads.Settle(t) - after; got != 0 {
		t.Fatalf("unchanged reinstall: systemd saw %d reloads, want 0", got)
	}

	sp, err := m.Stop(ctx, d)
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	if sp.JobResult != "done" || sp.PID != st.PID {
		t.Fatalf("stop result %+v, want done for pid %d", sp, st.PID)
	}
	if state := procState(box, st.PID); state != "" && state != "Z" && state != "X" {
		t.Fatalf("daemon pid %d is still running after stop (state %s)", st.PID, state)
	}
	if u, err = m.Status(ctx, "cellguard-garden.service"); err != nil || u.ActiveState != "inactive" {
		t.Fatalf("after stop: %+v %v", u, err)
	}

	after = reloads.Settle(t)
	d.Stop = []string{ctl, "stop", "--now"}
	res, err = m.Install(ctx, d)
	if err != nil {
		t.Fatalf("changed reinstall: %v", err)
	}
	if !res.Written || !res.Reloaded {
		t.Fatalf("changed reinstall: written=%v reloaded=%v, want both", res.Written, res.Reloaded)
	}
	if got := reloads.Settle(t) - after; got != 1 {
		t.Fatalf("changed reinstall: systemd saw %d reloads, want 1", got)
	}
}

// TestInstallRefusesBadInputAndWritesNothing: an executable that does not
// exist, or an injected directive, leaves the unit directory untouched.
func TestInstallRefusesBadInputAndWritesNothing(t *testing.T) {
	box := bootBox(t, "badinput")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	writeFile(t, box, "/var/vcap/jobs/ghost/bin/not-executable", "#!/bin/sh\n", 0o644)
	m := &daemonctl.Manager{Logger: lagertest.NewTestLogger("bad"), Root: box.Root,
		DBus: systemd.Options{Address: box.SystemBusAddress}}
	t.Cleanup(m.Close)
	// Each refusal must be the input's (its sentinel and what is wrong),
	// not any error: a broken D-Bus connection must not pass.
	for name, tc := range map[string]struct {
		d    daemonctl.Daemon
		err  error
		want string
	}{
		"missing executable": {daemonctl.Daemon{Name: "ghost", Start: []string{"/var/vcap/jobs/ghost/bin/ctl", "start"}}, unitfile.ErrBadCommand, "no such file"},
		"not executable":     {daemonctl.Daemon{Name: "ghost", Start: []string{"/var/vcap/jobs/ghost/bin/not-executable"}}, unitfile.ErrBadCommand, "is not an executable file"},
		"injected argument":  {daemonctl.Daemon{Name: "ghost", Start: []string{"/bin/sleep", "1\nExecStartPre=/bin/rm"}}, unitfile.ErrBadCommand, `argument "1\nExecStartPre=/bin/rm": only letters, digits`},
		"bad name":           {daemonctl.Daemon{Name: "gho st", Start: []string{"/bin/sleep", "1"}}, unitfile.ErrBadName, `"gho st" contains ' '`},
	} {
		_, err := m.Install(ctx, tc.d)
		if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: install = %v, want %v with %q", name, err, tc.err, tc.want)
		}
	}
	matches, _ := filepath.Glob(filepath.Join(box.Root, "/etc/systemd/system/cellguard-*"))
	if len(matches) != 0 {
		t.Fatalf("bad input wrote %v", matches)
	}
	// The same manager installs good input: the refusals above were not
	// a connection that could install nothing.
	if res, err := m.Install(ctx, daemonctl.Daemon{Name: "ghost", Start: []string{"/bin/sleep", "1"}}); err != nil || !res.Written {
		t.Fatalf("good input after the refusals: %+v %v", res, err)
	}
}

// TestStartFailsWhenTheProgramExitsSoon: a daemon without a pidfile runs as
// Type=exec, whose start job is done once the exec succeeded. A start
// program that fails 0.3 s later must not be reported started (it was, before
// daemonctl.ExecSettle: its MainPID was alive when Start looked), and one
// that stays is.
func TestStartFailsWhenTheProgramExitsSoon(t *testing.T) {
	box := bootBox(t, "exec-settle")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := &daemonctl.Manager{Logger: lagertest.NewTestLogger("exec-settle"), Root: box.Root,
		DBus: systemd.Options{Address: box.SystemBusAddress}}
	t.Cleanup(m.Close)
	for _, tc := range []struct {
		name, script string
		started      bool
	}{
		{"late-failure", "#!/bin/sh\nsleep 0.3\nexit 1\n", false},
		{"foreground", "#!/bin/sh\nexec sleep 600\n", true},
	} {
		ctl := "/var/vcap/jobs/" + tc.name + "/bin/ctl"
		writeFile(t, box, ctl, tc.script, 0o755)
		d := daemonctl.Daemon{Name: tc.name, Start: []string{ctl, "start"}, StartTimeout: 20 * time.Second}
		if _, err := m.Install(ctx, d); err != nil {
			t.Fatalf("install %s: %v", tc.name, err)
		}
		res, err := m.Start(ctx, d)
		if tc.started && err != nil {
			t.Errorf("%s: start failed: %v", tc.name, err)
		}
		if !tc.started {
			if err == nil {
				t.Errorf("%s: reported started (pid %d) though its start program exits 0.3 s later", tc.name, res.PID)
			} else {
				t.Logf("%s: %v", tc.name, err)
			}
		}
	}
}

// procState is a process's state letter from /proc/<pid>/stat inside the box,
// "" when it is gone. Stop's contract is that the daemon has exited: it may
// still be a zombie for a moment, until the box's systemd reaps it (under
// load that moment was long enough to fail a plain existence check).
func procState(box *sdbox.Box, pid int) string {
	b, err := os.ReadFile(filepath.Join(box.Root, "proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+3 > len(s) {
		return ""
	}
	return s[i+2 : i+3]
}
