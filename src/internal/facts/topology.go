package facts

import (
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/topology"
)

// TopologyFacts are the v2 shape of the runtime's cgroups and where the
// daemons and the agent run (package topology); Err when nothing could be
// read.
type TopologyFacts struct {
	Facts *topology.Facts
	Err   error
}

// readTopology reads the topology of the containers in the run's
// snapshot: its runtime states, inits, listings and processes are the
// facts every check shares.
func readTopology(s Spec, src *snapshot.Source) TopologyFacts {
	v, err := src.Get()
	if err != nil {
		return TopologyFacts{Err: err}
	}
	ds := make([]topology.DaemonSpec, 0, len(s.Daemons))
	for _, d := range s.Daemons {
		if d.PIDFile != "" {
			ds = append(ds, topology.DaemonSpec{Name: d.Name, PIDFile: d.PIDFile})
		}
	}
	return TopologyFacts{Facts: topology.Read(v, ds)}
}

// Topology is the topology facts, once waited for.
func (h *Host) Topology() TopologyFacts {
	if !h.done(Topology) {
		return TopologyFacts{Err: notRead(Topology)}
	}
	return h.topology
}
