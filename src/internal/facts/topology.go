package facts

import "github.com/cloudfoundry/cellguard/src/internal/topology"

// TopologyFacts are the v2 shape of the runtime's cgroups and where the
// daemons and the agent run (package topology); Err when nothing could be
// read.
type TopologyFacts struct {
	Facts *topology.Facts
	Err   error
}

func readTopology(s Spec) TopologyFacts {
	ds := make([]topology.DaemonSpec, 0, len(s.Daemons))
	for _, d := range s.Daemons {
		if d.PIDFile != "" {
			ds = append(ds, topology.DaemonSpec{Name: d.Name, PIDFile: d.PIDFile})
		}
	}
	f, err := topology.Read(topology.Spec{Root: s.Root, RuntimeRoots: s.RuntimeRoots, Namespaces: s.Namespaces, Daemons: ds})
	return TopologyFacts{Facts: f, Err: err}
}

// Topology is the topology facts, once waited for.
func (h *Host) Topology() TopologyFacts {
	if !h.done(Topology) {
		return TopologyFacts{Err: notRead(Topology)}
	}
	return h.topology
}
