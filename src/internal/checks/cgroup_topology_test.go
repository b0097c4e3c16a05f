package checks

import (
	"errors"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/topology"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

func TestJudgeTopology(t *testing.T) {
	healthy := topology.Container{Name: "c1", Cgroup: "/garden/c1/init",
		Types: []topology.Type{ty("/garden/c1/init", "domain"), ty("/garden/c1", "domain"), ty("/garden", "domain")}}
	units := map[string]string{"garden": "/system.slice/cellguard-garden.service"}
	for _, tc := range []struct {
		name string
		f    topology.Facts
		want []string // status subject: detail (prefix)
	}{
		{"v1 host", topology.Facts{Mode: cgroup.Legacy},
			[]string{"skip : not applicable on cgroup v1 (legacy): cgroup-topology judges unified hosts only"}},
		{"hybrid host", topology.Facts{Mode: cgroup.Hybrid},
			[]string{"skip : not applicable on cgroup v1 (hybrid): cgroup-topology judges unified hosts only"}},
		{"healthy", topology.Facts{Mode: cgroup.Unified, Containers: []topology.Container{healthy}, Trees: []string{"/garden"},
			Daemons: []topology.Daemon{{Name: "garden", PID: 50, Cgroup: "/system.slice/cellguard-garden.service/x"}},
			Agent:   &topology.Agent{Processes: []topology.AgentProcess{ap(60, "/system.slice/bosh-agent.service")}}},
			[]string{"pass : 1 container in 1 runtime tree checked"}},
		{"threaded", topology.Facts{Mode: cgroup.Unified, Trees: []string{"/garden"}, Containers: []topology.Container{{Name: "c3", Cgroup: "/garden/c3/init",
			Types: []topology.Type{ty("/garden/c3/init", "threaded"), ty("/garden/c3", "domain threaded"), ty("/garden", "domain")}}}},
			[]string{`warn c3: cgroup /garden/c3/init has type "threaded", not domain`,
				`warn c3: cgroup /garden/c3 has type "domain threaded", not domain`,
				"pass : 1 container in 1 runtime tree checked"}},
		{"domain invalid", topology.Facts{Mode: cgroup.Unified, Containers: []topology.Container{{Name: "c4", Cgroup: "/garden/c4",
			Types: []topology.Type{ty("/garden/c4", "domain invalid")}}}},
			[]string{`warn c4: cgroup /garden/c4 has type "domain invalid", not domain`, "pass : 1 container in 0 runtime trees checked"}},
		{"internal process", topology.Facts{Mode: cgroup.Unified, Internal: []topology.Internal{{Cgroup: "/garden/c2", SubtreeControl: "pids", PIDs: []int{110, 111}}}},
			[]string{`warn /garden/c2: pids 110,111 sit in /garden/c2, whose cgroup.subtree_control enables "pids"`,
				"pass : 0 containers in 0 runtime trees checked"}},
		{"daemon outside its unit", topology.Facts{Mode: cgroup.Unified,
			Daemons: []topology.Daemon{{Name: "garden", PID: 50, Cgroup: "/system.slice/cellguard-garden.service-x"}}},
			[]string{"fail cellguard-garden.service: daemon garden (pid 50) runs in /system.slice/cellguard-garden.service-x, outside its delegated unit's cgroup /system.slice/cellguard-garden.service",
				"pass : 0 containers in 0 runtime trees checked"}},
		{"daemon unit not read", topology.Facts{Mode: cgroup.Unified,
			Daemons: []topology.Daemon{{Name: "containerd", PID: 70, Cgroup: "/elsewhere"}}},
			[]string{"pass : 0 containers in 0 runtime trees checked"}},
		{"daemon pidfile unreadable", topology.Facts{Mode: cgroup.Unified,
			Daemons: []topology.Daemon{{Name: "garden", Err: "read pidfile /p: gone"}}},
			[]string{"warn cellguard-garden.service: could not read: read pidfile /p: gone", "pass : 0 containers in 0 runtime trees checked"}},
		{"agent misplaced", topology.Facts{Mode: cgroup.Unified, Agent: &topology.Agent{Processes: []topology.AgentProcess{ap(60, "/system.slice/runit.service")}}},
			[]string{"warn bosh-agent: bosh-agent (pid 60) runs in /system.slice/runit.service, not /system.slice/bosh-agent.service",
				"pass : 0 containers in 0 runtime trees checked"}},
		{"agent absent on a BOSH VM", topology.Facts{Mode: cgroup.Unified, Agent: &topology.Agent{}},
			[]string{"warn bosh-agent: no bosh-agent process on a BOSH VM", "pass : 0 containers in 0 runtime trees checked"}},
		{"could not read", topology.Facts{Mode: cgroup.Unified, Problems: []string{"read cgroup.type of /garden: EACCES"}},
			[]string{"warn topology: could not read: read cgroup.type of /garden: EACCES", "pass : 0 containers in 0 runtime trees checked"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := JudgeTopology(&tc.f, units)
			if len(fs) != len(tc.want) {
				t.Fatalf("findings = %s, want %q", show(fs), tc.want)
			}
			for i, f := range fs {
				if got := string(f.Status) + " " + f.Subject + ": " + f.Detail; !strings.HasPrefix(got, tc.want[i]) {
					t.Errorf("finding %d = %q, want prefix %q", i, got, tc.want[i])
				}
			}
		})
	}
}

func show(fs []validator.Finding) string {
	var s []string
	for _, f := range fs {
		s = append(s, string(f.Status)+" "+f.Subject+": "+f.Detail)
	}
	return strings.Join(s, "\n")
}

func ty(cg, t string) topology.Type { return topology.Type{Cgroup: cg, Type: t} }

func ap(pid int, cg string) topology.AgentProcess { return topology.AgentProcess{PID: pid, Cgroup: cg} }

// The daemons' units' cgroups come from the unit facts; a unit that could
// not be read, or facts that could not be read at all, judge no daemon.
func TestUnitCgroups(t *testing.T) {
	uf := facts.UnitFacts{Daemons: []facts.DaemonUnits{
		{Daemon: facts.Daemon{Name: "garden"}, Unit: facts.UnitRead{Name: "cellguard-garden.service", Unit: &facts.Unit{ControlGroup: "/system.slice/cellguard-garden.service"}}},
		{Daemon: facts.Daemon{Name: "containerd"}, Unit: facts.UnitRead{Name: "cellguard-containerd.service", Err: errors.New("no such unit")}},
	}}
	if got := unitCgroups(uf); len(got) != 1 || got["garden"] != "/system.slice/cellguard-garden.service" {
		t.Errorf("unitCgroups = %v", got)
	}
	uf.Err = errors.New("dbus: refused")
	if got := unitCgroups(uf); len(got) != 0 {
		t.Errorf("unreadable unit facts: %v", got)
	}
}
