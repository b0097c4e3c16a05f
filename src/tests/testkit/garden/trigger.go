package garden

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// SystemdVersion is the box's systemd version (systemctl --version).
func SystemdVersion(t testing.TB, box *sdbox.Box) int {
	t.Helper()
	v, err := systemd.ParseVersion(box.Run(t, "systemctl", "--version"))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// FireSeed000Trigger starts src/tests/bosh/seed000-trigger.service (a
// brand-new unit in system.slice with CPU, IO, memory, tasks and device
// settings) and returns when it is active. Before systemd 232 its settings
// go by the names that systemd knows (CPUWeight came in 232, MemoryMax in
// 231, IOWeight in 230; systemd NEWS).
func FireSeed000Trigger(t testing.TB, box *sdbox.Box) {
	t.Helper()
	root, err := sdbox.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "src/tests/bosh/seed000-trigger.service"))
	if err != nil {
		t.Fatal(err)
	}
	unit := TriggerFor(string(b), SystemdVersion(t, box))
	if err := box.WriteFile("/etc/systemd/system/seed000-trigger.service", []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	box.Run(t, "systemctl", "daemon-reload")
	box.Run(t, "systemctl", "start", "seed000-trigger.service")
	// is-active is a call to systemd too: its reply comes after the moves
	// (SettleArgs).
	if s := strings.TrimSpace(box.Run(t, "systemctl", "is-active", "seed000-trigger.service")); s != "active" {
		t.Fatalf("the trigger is %s", s)
	}
}

// SettleArgs is a command whose reply comes after the moves a unit's start
// made. systemctl start returns at the job's JobRemoved, which systemd
// sends as the job finishes (job_uninstall). The start only queued the new
// unit's siblings, the unit holding monit among them, for realization "to
// the next event loop iteration" (unit_realize_cgroup), and their
// processes move there: for a Type=simple unit (the trigger before 240)
// always after JobRemoved. manager_loop empties that queue before it
// handles another bus message, so the reply to any call comes after the
// moves (read in systemd 229's and 249's src/core; docs/performance.md).
// Without it, a look at where processes are, made at once, can come
// before the moves: it did once, on a loaded machine (CI, xenial).
var SettleArgs = []string{"systemctl", "show", "--property=Version"}

// TriggerFor is the trigger unit's text (src/tests/bosh/seed000-trigger.service)
// for a systemd of the given version: before 232 its settings go by the
// names that systemd knows (CPUWeight came in 232, MemoryMax in 231,
// IOWeight in 230) and, before 240, Type=exec is Type=simple (systemd NEWS).
func TriggerFor(unit string, systemd int) string {
	if systemd < 232 {
		unit = strings.NewReplacer("CPUWeight=50", "CPUShares=512", "IOAccounting=yes", "BlockIOAccounting=yes",
			"IOWeight=50", "BlockIOWeight=500", "MemoryMax=", "MemoryLimit=").Replace(unit)
	}
	if systemd < 240 {
		unit = strings.ReplaceAll(unit, "Type=exec", "Type=simple")
	}
	return unit
}

// Moved returns, for each controller runc recorded for c, where c's
// processes are now when that differs from the record: controller ->
// [recorded, now] (the first process found outside). Paths are as the box
// sees them; name=systemd and cgroup v2 are systemd's own and not compared.
func (g *Garden) Moved(t testing.TB, c Container) map[string][2]string {
	t.Helper()
	moved := map[string][2]string{}
	for _, pid := range c.PIDs {
		now, err := g.Box.ReadCgroup(pid)
		if err != nil {
			continue // exited meanwhile
		}
		for ctrl, p := range c.CgroupPaths {
			if _, seen := moved[ctrl]; seen {
				continue
			}
			// /sys/fs/cgroup/<mount dir>/<path>
			parts := strings.SplitN(strings.TrimPrefix(p, "/sys/fs/cgroup/"), "/", 2)
			if len(parts) != 2 || strings.HasPrefix(ctrl, "name=") || ctrl == "" || ctrl == "unified" {
				continue
			}
			want := "/" + parts[1]
			for h, cur := range now {
				if !strings.Contains(","+h+",", ","+ctrl+",") {
					continue
				}
				if cur != want {
					moved[ctrl] = [2]string{want, cur}
				}
			}
		}
	}
	return moved
}

// Controllers are the keys of a Moved result, sorted.
func Controllers(moved map[string][2]string) []string {
	var cs []string
	for c := range moved {
		cs = append(cs, c)
	}
	sort.Strings(cs)
	return cs
}
