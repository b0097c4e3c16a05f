package checks

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// layoutWords is how a not-applicable finding names each layout.
var layoutWords = map[cgroup.Mode]string{
	cgroup.Legacy:  "cgroup v1 (legacy)",
	cgroup.Hybrid:  "cgroup v1 (hybrid)",
	cgroup.Unified: "cgroup v2 (unified)",
}

// TestChecksNameTheLayoutsTheyJudge: every check says which cgroup layouts
// it judges, by cgroup.Mode's names; the one that reads v1 devices lists
// judges v1 hosts only, the one about v2 topology v2 hosts only, and the
// others every layout.
func TestChecksNameTheLayoutsTheyJudge(t *testing.T) {
	every := []string{"legacy", "hybrid", "unified"}
	only := map[string][]string{"devices-cgroup": {"legacy", "hybrid"}, "cgroup-topology": {"unified"}}
	for _, c := range all(testDeps{}) {
		m := c.Meta()
		want, ok := only[m.ID]
		if !ok {
			want = every
		}
		if !slices.Equal(m.Layouts, want) {
			t.Errorf("%s judges %q, want %q", m.ID, m.Layouts, want)
		}
	}
}

// TestNotApplicableOnALayoutNotJudged: on each layout, every check that
// does not judge it says so in one skip finding ("not applicable on cgroup
// v2 (unified)"), and its result is a skip: no pass, no finding, no "could
// not read". The host has a container whose v1 devices cgroup would be
// judged (its rules recorded, its devices.list empty), so a check that
// judged where it should not would show.
func TestNotApplicableOnALayoutNotJudged(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			h := bootedHost(t, mode)
			h.RunContainer(garden("c1"), 100, 2, 500)
			// On v2 this writes a v2 cgroup named "devices", not v1's.
			setDevices(t, h, filepath.Join(h.Root, "run/runc/c1/state.json"), runcDeviceRules, "")
			d := deps(h)
			d.SystemdUnits = newFakeManager(sliceUnit("system.slice")).dialer()
			rep := validator.Run(context.Background(), all(d), validator.Options{Phase: validator.PreStart})
			for _, r := range rep.Results {
				na := notApplicableFindings(r.Findings)
				if slices.Contains(r.Layouts, mode.String()) {
					if len(na) != 0 {
						t.Errorf("%s judges %s hosts but said %+v", r.ID, mode, na)
					}
					continue
				}
				if r.Status != validator.Skip || r.Error != "" || len(r.Findings) != 1 || len(na) != 1 {
					t.Errorf("%s on a %s host: status %s, error %q, findings %+v; want one not-applicable skip", r.ID, mode, r.Status, r.Error, r.Findings)
					continue
				}
				f := na[0]
				if want := "not applicable on " + layoutWords[mode]; !strings.HasPrefix(f.Detail, want) || f.Data["cgroup_mode"] != mode.String() ||
					f.Data["layouts"] != strings.Join(r.Layouts, " ") {
					t.Errorf("%s on a %s host: %+v; want detail %q..., cgroup_mode and layouts in data", r.ID, mode, f, want)
				}
			}
			// The devices cgroup is judged where it exists.
			for _, r := range rep.Results {
				if r.ID == "devices-cgroup" && mode != cgroup.Unified && r.Status != validator.Warn {
					t.Errorf("devices-cgroup on a %s host: %s %+v, want the deny-all left behind", mode, r.Status, r.Findings)
				}
			}
		})
	}
}

func notApplicableFindings(fs []validator.Finding) []validator.Finding {
	var out []validator.Finding
	for _, f := range fs {
		if f.Data["kind"] == "not-applicable" {
			out = append(out, f)
		}
	}
	return out
}

// TestDelegationAuditSaysWhatEachLayoutRisks: a container below a unit
// that does not delegate is judged on every layout, and the finding says
// what that layout's systemd does to it: on v1 and hybrid it moves the
// processes out (seed 000), on v2 it moves none (systemd 255 migrates only
// on legacy and hybrid hosts: issue 37, measured in the noble VM) but
// disables controllers above them, and their limits vanish.
func TestDelegationAuditSaysWhatEachLayoutRisks(t *testing.T) {
	for _, tc := range []struct {
		name, cgroup, subject string
		units                 []*systemd.Unit
	}{
		{"plain unit", "/system.slice/runit.service/garden/", "runit.service", []*systemd.Unit{sliceUnit("system.slice"), plainUnit("runit.service")}},
		{"a slice", "/system.slice/garden/", "system.slice", []*systemd.Unit{sliceUnit("system.slice")}},
	} {
		for _, mode := range allModes {
			t.Run(tc.name+"/"+mode.String(), func(t *testing.T) {
				h := bootedHost(t, mode)
				h.RunContainer(containerAt("c1", tc.cgroup+"c1"), 100, 2, 500)
				g := bySubject(t, run(t, auditDeps(h, newFakeManager(tc.units...)), "delegation-audit"), tc.subject)[0]
				if g.Status != validator.Fail {
					t.Fatalf("status %s: %s", g.Status, g.Detail)
				}
				want, not := "moving them out", "disabling"
				if mode == cgroup.Unified {
					want, not = "disabling their controllers", "mov"
				}
				if !strings.Contains(g.Detail, want) || strings.Contains(g.Detail, not) {
					t.Errorf("detail %q: want %q and no %q on a %s host", g.Detail, want, not, mode)
				}
			})
		}
	}
}
