package integration

import (
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
)

// concourseUnit is concourse-bosh-release's jobs/worker/templates/concourse.service
// (read at 723c03f, 2026-08-22) with a stand-in for the worker binary: the
// worker's ctl copies it to /lib/systemd/system and runs `systemctl start
// concourse.service`, outside monit's unit.
const concourseUnit = `[Unit]
Description=Concourse worker runtime

[Service]
Type=exec
ExecStart=/bin/sleep infinity
Delegate=yes
KillMode=none
TasksMax=infinity
`

// auditOf returns delegation-audit's finding about unit.
func auditOf(t *testing.T, v *validation, unit string) map[string]string {
	t.Helper()
	for _, r := range v.report.Results {
		if r.ID != "delegation-audit" {
			continue
		}
		for _, f := range r.Findings {
			if f.Data["unit"] == unit {
				d := f.Data
				d["status"], d["detail"] = f.Status, f.Detail
				return d
			}
		}
	}
	t.Fatalf("no delegation-audit finding for %s:\n%s", unit, v.stdout)
	return nil
}

// TestDelegateUnitsInPlace: Concourse's concourse.service (Delegate=yes)
// runs in a real systemd on a hybrid host. delegation-audit says what its
// own Delegate= leaves out (v1 blkio among them); `cellguard unit delegate`
// gives it the supervisor's drop-in in place, without a restart, and the
// audit then passes. A unit named before its release installs it gets the
// drop-in, which applies once systemd loads the unit.
func TestDelegateUnitsInPlace(t *testing.T) {
	box := bootBoxMode(t, "delegate-units", cgroup.Hybrid)
	cellguard := box.InstallCellguard(t)
	writeFile(t, box, "/lib/systemd/system/concourse.service", concourseUnit, 0o644)
	box.Run(t, "systemctl", "daemon-reload")
	box.Run(t, "systemctl", "start", "concourse.service")
	pid := strings.TrimSpace(box.Run(t, "systemctl", "show", "-P", "MainPID", "concourse.service"))
	cfg := `{"delegate_units":["concourse.service","later.service"]}`

	v := validateWith(t, box, cellguard, cfg, "--phase", "pre-start")
	before := auditOf(t, v, "concourse.service")
	if before["status"] != "fail" || !strings.Contains(before["missing_controllers"], "blkio") || !strings.Contains(before["detail"], "blkio") {
		t.Fatalf("before: %v", before)
	}
	t.Logf("before: %s", before["detail"])
	if later := auditOf(t, v, "later.service"); later["status"] != "skip" {
		t.Fatalf("a unit not installed yet: %v", later)
	}

	writeFile(t, box, "/etc/cellguard-test.json", cfg, 0o644)
	out := box.Run(t, cellguard, "unit", "delegate", "--config", "/etc/cellguard-test.json")
	t.Logf("cellguard unit delegate:\n%s", out)
	if !strings.Contains(out, "concourse.service: /etc/systemd/system/concourse.service.d/50-cellguard-delegate.conf written and reloaded") ||
		!strings.Contains(out, "later.service: /etc/systemd/system/later.service.d/50-cellguard-delegate.conf written; systemd does not know the unit yet") {
		t.Fatalf("unit delegate said:\n%s", out)
	}
	if now := strings.TrimSpace(box.Run(t, "systemctl", "show", "-P", "MainPID", "concourse.service")); now != pid {
		t.Fatalf("concourse.service restarted: MainPID %s, was %s", now, pid)
	}
	v = validateWith(t, box, cellguard, cfg, "--phase", "pre-start")
	after := auditOf(t, v, "concourse.service")
	if after["status"] != "pass" || !strings.Contains(after["delegate_controllers"], "blkio") {
		t.Fatalf("after: %v", after)
	}
	t.Logf("after: %s", after["detail"])

	// Its release installs it later (the worker's ctl at monit start).
	writeFile(t, box, "/lib/systemd/system/later.service", concourseUnit, 0o644)
	box.Run(t, "systemctl", "daemon-reload")
	if dc := box.Run(t, "systemctl", "show", "-P", "DelegateControllers", "later.service"); !strings.Contains(dc, "blkio") {
		t.Fatalf("later.service loaded without the drop-in's controllers: %q", dc)
	}
	// Idempotent: a second run writes and reloads nothing.
	if out := box.Run(t, cellguard, "unit", "delegate", "concourse.service"); !strings.Contains(out, "unchanged") {
		t.Fatalf("second run: %s", out)
	}
}
