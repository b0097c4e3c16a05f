package checks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// The device rules of runc's default spec, as runc 1.2.8 recorded them
// (runcstate/testdata/good_runc128_hybrid_state.json), and the devices.list
// the kernel showed for them.
const (
	runcDeviceRules = `[{"type":97,"major":-1,"minor":-1,"permissions":"rwm","allow":false},
		{"type":99,"major":-1,"minor":-1,"permissions":"m","allow":true},{"type":98,"major":-1,"minor":-1,"permissions":"m","allow":true},
		{"type":99,"major":1,"minor":3,"permissions":"rwm","allow":true},{"type":99,"major":1,"minor":8,"permissions":"rwm","allow":true},
		{"type":99,"major":1,"minor":7,"permissions":"rwm","allow":true},{"type":99,"major":5,"minor":0,"permissions":"rwm","allow":true},
		{"type":99,"major":1,"minor":5,"permissions":"rwm","allow":true},{"type":99,"major":1,"minor":9,"permissions":"rwm","allow":true},
		{"type":99,"major":136,"minor":-1,"permissions":"rwm","allow":true},{"type":99,"major":5,"minor":2,"permissions":"rwm","allow":true},
		{"type":99,"major":10,"minor":200,"permissions":"rwm","allow":true}]`
	runcDevicesList = "b *:* m\nc *:* m\nc 1:3 rwm\nc 1:5 rwm\nc 1:7 rwm\nc 1:8 rwm\nc 1:9 rwm\nc 5:0 rwm\nc 5:2 rwm\nc 10:200 rwm\nc 136:* rwm\n"
	// Garden v1.58.0's unprivileged container as runc 1.1.5 recorded it
	// (src/tests/garden, TestTodayOnNoble): no leading deny of "a"; the
	// kernel's devices.list for it is runcDevicesList.
	gardenDeviceRules = `[{"type":99,"major":-1,"minor":-1,"permissions":"m","allow":true},{"type":98,"major":-1,"minor":-1,"permissions":"m","allow":true},
		{"type":99,"major":1,"minor":3,"permissions":"rwm","allow":true},{"type":99,"major":1,"minor":8,"permissions":"rwm","allow":true},
		{"type":99,"major":1,"minor":7,"permissions":"rwm","allow":true},{"type":99,"major":5,"minor":0,"permissions":"rwm","allow":true},
		{"type":99,"major":1,"minor":5,"permissions":"rwm","allow":true},{"type":99,"major":1,"minor":9,"permissions":"rwm","allow":true},
		{"type":99,"major":136,"minor":-1,"permissions":"rwm","allow":true},{"type":99,"major":5,"minor":2,"permissions":"rwm","allow":true},
		{"type":99,"major":10,"minor":200,"permissions":"rwm","allow":true}]`
)

// setDevices records rules in c1's state and writes its devices.list.
func setDevices(t *testing.T, h *fakehost.Host, statePath, rules, list string) {
	t.Helper()
	b, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	st["config"].(map[string]any)["cgroups"].(map[string]any)["devices"] = json.RawMessage(rules)
	if b, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(statePath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	h.Write("sys/fs/cgroup/devices/garden/c1/devices.list", list)
}

func TestDevicesCgroup(t *testing.T) {
	for _, tc := range []struct {
		name, rules, list string
		missing           []string
	}{
		{"as recorded", runcDeviceRules, runcDevicesList, nil},
		// An interrupted `runc update` of runc < rc91: deny all, no allow yet.
		{"deny all left behind", runcDeviceRules, "", []string{"c *:* m", "b *:* m", "c 1:3 rwm", "c 1:8 rwm", "c 1:7 rwm", "c 5:0 rwm",
			"c 1:5 rwm", "c 1:9 rwm", "c 136:* rwm", "c 5:2 rwm", "c 10:200 rwm"}},
		{"one rule lost and one narrowed", runcDeviceRules, strings.Replace(strings.Replace(runcDevicesList, "c 10:200 rwm\n", "", 1), "c 136:* rwm", "c 136:* rw", 1),
			[]string{"c 136:* rwm", "c 10:200 rwm"}},
		{"a privileged container allows all", `[{"type":97,"major":-1,"minor":-1,"permissions":"rwm","allow":true}]`, "a *:* rwm\n", nil},
		{"a privileged container denied", `[{"type":97,"major":-1,"minor":-1,"permissions":"rwm","allow":true}]`, "c 1:3 rwm\n", []string{"a *:* rwm"}},
		{"the list allows more", runcDeviceRules, "a *:* rwm\n", nil},
		// runc starts from deny when no rule says otherwise
		{"Garden's rules as recorded", gardenDeviceRules, runcDevicesList, nil},
		{"Garden's rules, deny all left behind", gardenDeviceRules, "", []string{"c *:* m", "b *:* m", "c 1:3 rwm", "c 1:8 rwm", "c 1:7 rwm",
			"c 5:0 rwm", "c 1:5 rwm", "c 1:9 rwm", "c 136:* rwm", "c 5:2 rwm", "c 10:200 rwm"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fakehost.New(t, cgroup.Hybrid)
			h.RunContainer(garden("c1"), 100, 2, 500)
			setDevices(t, h, filepath.Join(h.Root, "run/runc/c1/state.json"), tc.rules, tc.list)
			bad := failures(run(t, deps(h), "devices-cgroup"))
			if len(tc.missing) == 0 {
				if len(bad) != 0 {
					t.Fatalf("got %+v", bad)
				}
				return
			}
			if len(bad) != 1 || bad[0].Subject != "c1" || bad[0].Data["missing"] != strings.Join(tc.missing, ",") {
				t.Fatalf("got %+v, want missing %v", bad, tc.missing)
			}
		})
	}
}

// No v1 devices hierarchy (v2), a ghost and a state without rules are not
// checked; the summary says how many were.
func TestDevicesCgroupSkips(t *testing.T) {
	h := fakehost.New(t, cgroup.Unified)
	h.RunContainer(garden("c1"), 100, 2, 500)
	if fs := run(t, deps(h), "devices-cgroup"); len(fs) != 1 || fs[0].Status != "skip" {
		t.Fatalf("v2: %+v", fs)
	}
	h = fakehost.New(t, cgroup.Legacy)
	h.RunContainer(garden("c1"), 100, 2, 500)
	setDevices(t, h, filepath.Join(h.Root, "run/runc/c1/state.json"), runcDeviceRules, "")
	h.Kill(100) // init gone: a ghost, runtime-ghosts' finding
	fs := run(t, deps(h), "devices-cgroup")
	if bad := failures(fs); len(bad) != 0 || fs[len(fs)-1].Data["containers"] != "0" {
		t.Fatalf("ghost: %+v", fs)
	}
	h = fakehost.New(t, cgroup.Legacy)
	h.RunContainer(fakehost.Container{RuntimeRoot: runcstate.CrunRoot, ID: "p1", Cgroup: "/p1", Crun: true}, 100, 2, 500)
	if fs := run(t, deps(h), "devices-cgroup"); len(failures(fs)) != 0 {
		t.Fatalf("crun (no rules in its status): %+v", fs)
	}
}
