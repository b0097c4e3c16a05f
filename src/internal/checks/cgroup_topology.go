package checks

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/topology"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// CgroupTopology judges the v2 shape of the runtime's cgroups and where
// the container daemons and the BOSH agent run.
type CgroupTopology struct{}

var _ judge = CgroupTopology{}

// AgentCgroup is where noble's monit guard expects the agent: the stemcell
// builder's monit-nftables.nft matches `socket cgroupv2 level 2
// "system.slice/bosh-agent.service"`.
const AgentCgroup = "/system.slice/bosh-agent.service"

func (CgroupTopology) Meta() validator.Meta {
	return validator.Meta{
		ID:    "cgroup-topology",
		Title: "on cgroup v2, the runtime's cgroups are domains without internal processes, and daemons and agent sit in their units",
		Severity: map[validator.Phase]validator.Severity{
			// Only a daemon outside its delegated unit fails (the others
			// warn): the containers it is about to make would land
			// outside the delegation, where systemd strips controllers.
			// Wrong cgroup types and internal processes cost tenants
			// their limits, as limits-intact's losses do, and warn; so
			// does a misplaced agent, which the stemcell's rule after the
			// cgroup one (skuid 0) still lets reach monit.
			validator.PreStart: validator.Blocking,
			// At drain the arrangement is the outgoing one.
			validator.Drain: validator.Warning,
		},
		Story: "On cgroup v2 the kernel refuses domain controllers (memory, io) to a cgroup that holds processes, and to the " +
			"cgroups below one whose type is `threaded` or `domain invalid`: a process left in a cgroup that enables controllers " +
			"for its children (only threaded ones can be enabled then) competes with them, and nothing can ever limit its " +
			"children's memory (kernel/cgroup/cgroup.c cgroup_vet_subtree_control_enable, cgroup_migrate_vet_dst). A daemon " +
			"outside its delegated unit puts the containers it makes (a relative cgroupsPath resolves against its own cgroup) " +
			"where systemd strips controllers on a daemon-reload (issue 37). noble's monit API is guarded by an nft rule " +
			"that accepts the agent by its cgroup, system.slice/bosh-agent.service.",
		References: []string{
			"https://docs.kernel.org/admin-guide/cgroup-v2.html#no-internal-process-constraint",
			"https://docs.kernel.org/admin-guide/cgroup-v2.html#threads",
			"https://github.com/opencontainers/cgroups/blob/main/fs2/create.go",
			"https://github.com/cloudfoundry/bosh-linux-stemcell-builder/blob/8fb8eacc786cbfc0fbd6195f7fe30eb3be99764b/stemcell_builder/stages/bosh_monit/assets/monit-nftables.nft",
		},
		Fix: "For an internal process: move it into a leaf cgroup (or back into its container's cgroup: `cellguard validate --fix` " +
			"moves escaped container processes), or clear the cgroup's subtree_control if nothing below needs it. For a cgroup " +
			"type other than domain: recreate the container (a cgroup cannot become a domain again once threaded). For a daemon " +
			"outside its unit: restart it through monit so it starts in its cellguard-<name>.service. For the agent: restart " +
			"bosh-agent.service (`systemctl restart bosh-agent`).",
		Measured: []string{"pids"},
		Layouts:  v2Layouts,
	}
}

// Needs: the topology facts, and the unit facts for the daemons' units'
// cgroups.
func (CgroupTopology) Needs() []facts.Kind { return []facts.Kind{facts.Topology, facts.Units} }

// Judge judges the topology facts; facts that could not be read at all
// make the check "could not judge".
func (CgroupTopology) Judge(h *facts.Host) ([]validator.Finding, error) {
	tf := h.Topology()
	if tf.Err != nil {
		return nil, tf.Err
	}
	return JudgeTopology(tf.Facts, unitCgroups(h.Units())), nil
}

// unitCgroups maps each configured daemon to its unit's cgroup, as the
// manager reports it; daemons whose unit was not read are missing.
func unitCgroups(uf facts.UnitFacts) map[string]string {
	out := map[string]string{}
	if uf.Err != nil {
		return out
	}
	for _, du := range uf.Daemons {
		if du.Unit.Err == nil && du.Unit.Unit != nil && du.Unit.Unit.ControlGroup != "" {
			out[du.Daemon.Name] = du.Unit.Unit.ControlGroup
		}
	}
	return out
}

// JudgeTopology is the check's judgement of facts: units maps daemon names
// to their units' cgroups.
func JudgeTopology(f *topology.Facts, units map[string]string) []validator.Finding {
	if fs, na := notApplicable(CgroupTopology{}.Meta(), f.Mode, "v1 hierarchies have no cgroup.type, and a v1 cgroup may hold processes beside its children"); na {
		return fs
	}
	var fs []validator.Finding
	for _, p := range f.Problems {
		fs = append(fs, validator.Finding{Subject: "topology", Status: validator.Warn, Detail: "could not read: " + p})
	}
	for _, c := range f.Containers {
		for _, t := range c.Types {
			if t.Type != "domain" {
				fs = append(fs, validator.Finding{Subject: c.Name, Status: validator.Warn,
					Detail: fmt.Sprintf("cgroup %s has type %q, not domain: runc refuses to enter it with memory or io, and neither can be enabled below it", t.Cgroup, t.Type),
					Data:   map[string]string{"container": c.Name, "state": c.StatePath, "cgroup": t.Cgroup, "type": t.Type}})
			}
		}
	}
	for _, in := range f.Internal {
		fs = append(fs, validator.Finding{Subject: in.Cgroup, Status: validator.Warn,
			Detail: fmt.Sprintf("pids %s sit in %s, whose cgroup.subtree_control enables %q: they compete with the cgroups below, "+
				"and the kernel refuses memory and io there", joinPIDs(in.PIDs), in.Cgroup, in.SubtreeControl),
			Data: map[string]string{"cgroup": in.Cgroup, "subtree_control": in.SubtreeControl, "pids": joinPIDs(in.PIDs)}})
	}
	for _, d := range f.Daemons {
		fs = append(fs, judgeDaemonCgroup(d, units)...)
	}
	if f.Agent != nil {
		fs = append(fs, judgeAgent(f.Agent)...)
	}
	fs = append(fs, validator.Finding{Status: validator.Pass,
		Detail: fmt.Sprintf("%s in %s checked", plural(len(f.Containers), "container"), plural(len(f.Trees), "runtime tree")),
		Data:   map[string]string{"containers": strconv.Itoa(len(f.Containers)), "trees": strconv.Itoa(len(f.Trees))}})
	return fs
}

func judgeDaemonCgroup(d topology.Daemon, units map[string]string) []validator.Finding {
	unit := unitfile.UnitName(d.Name)
	data := map[string]string{"daemon": d.Name, "unit": unit, "pidfile": d.PIDFile}
	if d.PID > 0 {
		data["pid"] = strconv.Itoa(d.PID)
	}
	if d.Err != "" {
		return []validator.Finding{{Subject: unit, Status: validator.Warn, Detail: "could not read: " + d.Err, Data: data}}
	}
	want, ok := units[d.Name]
	if !ok {
		return nil // the unit was not read (no manager): delegation-audit says why
	}
	data["cgroup"], data["unit_cgroup"] = d.Cgroup, want
	if cgroup.Under(d.Cgroup, want) {
		return nil
	}
	return []validator.Finding{{Subject: unit, Status: validator.Fail, Data: data,
		Detail: fmt.Sprintf("daemon %s (pid %d) runs in %s, outside its delegated unit's cgroup %s", d.Name, d.PID, d.Cgroup, want)}}
}

func judgeAgent(a *topology.Agent) []validator.Finding {
	if len(a.Processes) == 0 {
		return []validator.Finding{{Subject: "bosh-agent", Status: validator.Warn,
			Detail: "no bosh-agent process on a BOSH VM (" + topology.BoshDir + " exists)"}}
	}
	var fs []validator.Finding
	for _, p := range a.Processes {
		if p.Cgroup == AgentCgroup {
			continue
		}
		fs = append(fs, validator.Finding{Subject: "bosh-agent", Status: validator.Warn,
			Detail: fmt.Sprintf("bosh-agent (pid %d) runs in %s, not %s, where noble's monit nft rule accepts it by cgroup", p.PID, p.Cgroup, AgentCgroup),
			Data:   map[string]string{"pid": strconv.Itoa(p.PID), "cgroup": p.Cgroup, "expected_cgroup": AgentCgroup}})
	}
	return fs
}

func joinPIDs(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}
