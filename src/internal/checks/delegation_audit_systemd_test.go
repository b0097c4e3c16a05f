package checks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/checks"
	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// TestDelegationAuditRealSystemd runs delegation-audit from the host against
// a real systemd 252 booted in a box, over the box's system bus: units and
// their Delegate/DelegateControllers as systemd reports them, the unit of a
// pid as systemd resolves it, and runc-style state files whose cgroups sit
// below those units.
func TestDelegationAuditRealSystemd(t *testing.T) {
	for _, mode := range []cgroup.Mode{cgroup.Hybrid, cgroup.Unified} {
		t.Run(mode.String(), func(t *testing.T) { testDelegationAuditRealSystemd(t, mode) })
	}
}

func testDelegationAuditRealSystemd(t *testing.T, mode cgroup.Mode) {
	box := startBox(t, "audit-"+mode.String(), mode)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// One daemon per arrangement, each a plain long-running service.
	units := map[string]string{
		"plain-rt.service":      "",                                       // seed-000: monit's kind of unit
		"yes-rt.service":        "Delegate=yes\n",                         // not enough on v1: blkio
		unitfile.UnitName("rt"): "Delegate=" + unitfile.DelegateV1 + "\n", // what cellguard installs
	}
	for name, extra := range units {
		text := "[Service]\nExecStart=/bin/sleep infinity\n" + extra
		if err := box.WriteFile("/etc/systemd/system/"+name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	box.Run(t, "systemctl", "daemon-reload")
	for name := range units {
		box.Run(t, "systemctl", "start", name)
	}

	// A container cgroup below each unit, and Garden's /garden at the root,
	// with a state.json the way runc writes it for the cgroupfs driver.
	tracked := "systemd" // name=systemd: where systemd tracks units on v1/hybrid
	if mode == cgroup.Unified {
		tracked = ""
	}
	containers := map[string]string{"c-plain": "", "c-yes": "", "c-rt": "", "c-root": "/garden/c-root"}
	for id, unitName := range map[string]string{"c-plain": "plain-rt.service", "c-yes": "yes-rt.service", "c-rt": unitfile.UnitName("rt")} {
		cg := strings.TrimSpace(box.Run(t, "systemctl", "show", "-P", "ControlGroup", unitName))
		if cg == "" {
			t.Fatalf("%s has no ControlGroup", unitName)
		}
		containers[id] = cg + "/garden/" + id
	}
	for id, cg := range containers {
		dir := path.Join("/sys/fs/cgroup", tracked, cg)
		box.Run(t, "mkdir", "-p", dir)
		key := "name=systemd"
		if tracked == "" {
			key = ""
		}
		writeState(t, box, id, map[string]string{key: dir})
	}

	// Daemons: rt runs in its own delegated unit; "plain" is configured but
	// was started elsewhere (in plain-rt.service, as monit would).
	writePIDFile(ctx, t, box, "/var/vcap/sys/run/rt/rt.pid", unitfile.UnitName("rt"))
	writePIDFile(ctx, t, box, "/var/vcap/sys/run/plain/plain.pid", "plain-rt.service")

	h := facts.New(facts.Spec{
		Root:     box.Root,
		Snapshot: snapshot.Lazy(snapshot.Spec{Root: box.Root, RuntimeRoots: []string{"/run/runc"}}),
		Units:    facts.DialSystemd(systemd.Options{Address: box.SystemBusAddress}),
		Daemons: []facts.Daemon{
			{Name: "rt", PIDFile: "/var/vcap/sys/run/rt/rt.pid"},
			{Name: "plain", PIDFile: "/var/vcap/sys/run/plain/plain.pid"},
		},
	})
	var audit validator.Check
	for _, c := range checks.All(h, checks.Policy{}) {
		if c.Meta().ID == "delegation-audit" {
			audit = c
		}
	}
	t0 := time.Now()
	fs, err := audit.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("audit over the box's bus took %v", time.Since(t0).Round(time.Millisecond))
	for _, f := range fs {
		t.Logf("%-5s %-28s %s", f.Status, f.Subject, f.Detail)
	}

	yes := validator.Pass // Delegate=yes covers every v2 controller
	risk := "disabling their controllers"
	// On v2 /garden is judged by what the box's root offers and /garden
	// enables: the box's cgroup offers no controller, so nothing to strip.
	garden, gardenSays := validator.Pass, "offers none of cpu cpuset io memory pids"
	if mode != cgroup.Unified {
		yes = validator.Fail // ... but not v1 blkio
		risk = "moving them out"
		garden, gardenSays = validator.Warn, "outside every systemd unit"
	}
	want := []struct {
		subject, contains string
		status            validator.Status
	}{
		{"plain-rt.service", "1 container below plain-rt.service is exposed to systemd " + risk, validator.Fail},
		{"yes-rt.service", "1 container below yes-rt.service", yes},
		{unitfile.UnitName("rt"), "1 container below " + unitfile.UnitName("rt"), validator.Pass},
		{"/garden", gardenSays, garden},
		{unitfile.UnitName("rt"), "daemon rt: " + unitfile.UnitName("rt") + " delegates", validator.Pass},
		{unitfile.UnitName("plain"), "not loaded (LoadState=not-found)", validator.Fail},
		{"plain-rt.service", "daemon plain (pid ", validator.Fail},
	}
	for _, w := range want {
		found := false
		for _, f := range fs {
			if f.Subject == w.subject && strings.Contains(f.Detail, w.contains) {
				found = true
				if f.Status != w.status {
					t.Errorf("%s %q: status %s, want %s", w.subject, f.Detail, f.Status, w.status)
				}
			}
		}
		if !found {
			t.Errorf("no finding about %s saying %q", w.subject, w.contains)
		}
	}
	for _, f := range fs {
		if f.Subject == "yes-rt.service" && mode != cgroup.Unified && !strings.Contains(f.Data["missing_controllers"], "blkio") {
			t.Errorf("yes-rt.service: missing_controllers %q lacks blkio (DelegateControllers read back %q)",
				f.Data["missing_controllers"], f.Data["delegate_controllers"])
		}
	}
}

// startBox boots a box for one test: booting per test keeps the package's
// pure tests free of a systemd container.
func startBox(t *testing.T, name string, mode cgroup.Mode) *sdbox.Box {
	t.Helper()
	sdbox.RequireRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	box, err := sdbox.Start(ctx, name, sdbox.WithCgroupMode(mode))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := box.Stop(); err != nil {
			t.Error(err)
		}
	})
	return box
}

// writeState writes a minimal runc state.json for id with cgroup_paths.
func writeState(t *testing.T, box *sdbox.Box, id string, paths map[string]string) {
	t.Helper()
	st := map[string]any{
		"id": id, "init_process_pid": 0, "init_process_start": 0,
		"created":      time.Now().UTC().Format(time.RFC3339Nano),
		"config":       map[string]any{"cgroups": map[string]any{"path": "/garden/" + id}},
		"cgroup_paths": paths,
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := box.WriteFile("/run/runc/"+id+"/state.json", b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// writePIDFile records unitName's MainPID (a pid in the box) the way a ctl
// script would.
func writePIDFile(ctx context.Context, t *testing.T, box *sdbox.Box, file, unitName string) {
	t.Helper()
	pid := strings.TrimSpace(box.Run(t, "systemctl", "show", "-P", "MainPID", unitName))
	if n, err := strconv.Atoi(pid); err != nil || n <= 0 {
		t.Fatalf("%s: MainPID %q", unitName, pid)
	}
	if err := box.WriteFile(file, []byte(fmt.Sprintln(pid)), 0o644); err != nil {
		t.Fatal(err)
	}
}
