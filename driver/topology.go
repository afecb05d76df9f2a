package driver

import (
	"slices"
	"strings"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
)

// SetDomains fills each node's Domain from its labels: the values of the
// cluster's topology levels (label keys, top level first; the
// controller's --topology-levels, a scenario's cluster.topology). Without
// levels it leaves the nodes as they are.
func SetDomains(nodes []engine.Node, levels []string) {
	if len(levels) == 0 {
		return
	}
	for i := range nodes {
		d := make([]string, len(levels))
		for l, key := range levels {
			d[l] = nodes[i].Labels[key]
		}
		nodes[i].Domain = d
	}
}

// TopologyOf is the engine's Topology of a phase (nil when the phase has
// none): its levels resolved against the cluster's (-1 for a level the
// cluster does not have: the gang can never fit, and says so), and, for
// sameDomainAs, the nodes that phase's latest attempt in the same
// iteration was granted (its status keeps them after it ended).
func TopologyOf(pt *v1alpha1.PhasedTraining, phase *v1alpha1.Phase, iteration int32, levels []string) *engine.Topology {
	t := phase.Topology
	if t == nil {
		return nil
	}
	level := t.Level()
	out := &engine.Topology{
		Level: slices.Index(levels, level), LevelName: level, Required: t.Required != "",
	}
	if t.SliceSize != nil && *t.SliceSize > 1 {
		sl := t.SliceLevelOrLevel()
		out.SliceSize, out.SliceLevel, out.SliceLevelName = *t.SliceSize, slices.Index(levels, sl), sl
	}
	if t.SameDomainAs != "" {
		if ps := pt.Status.Phase(t.SameDomainAs, iteration); ps != nil {
			out.Near = ps.Assignments
		}
	}
	return out
}

// NodeDomains maps each node with a Domain (SetDomains) to its domain
// path, the values joined by "/" (b1/r3/node-17), down to the first
// level whose label the node lacks (a node without the top level's is
// left out); nil without levels.
func NodeDomains(nodes []engine.Node) map[string]string {
	var out map[string]string
	for _, n := range nodes {
		if len(n.Domain) == 0 {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		// A node is in no domain of the level of its first empty value,
		// nor of any below it (as the engine reads it).
		path := n.Domain
		if i := slices.Index(path, ""); i >= 0 {
			path = path[:i]
		}
		if len(path) > 0 {
			out[n.Name] = strings.Join(path, "/")
		}
	}
	return out
}

// setWorkerDomains writes each phase's domains, parallel to its
// assignments: worker w's node's domain path (empty for a node not in
// nodeDomains). A phase without assignments has none.
func setWorkerDomains(st *v1alpha1.PhasedTrainingStatus, nodeDomains map[string]string) {
	for i := range st.Phases {
		ps := &st.Phases[i]
		if len(ps.Assignments) == 0 {
			ps.Domains = nil
			continue
		}
		d := make([]string, len(ps.Assignments))
		for w, node := range ps.Assignments {
			d[w] = nodeDomains[node]
		}
		if !slices.Equal(d, ps.Domains) {
			ps.Domains = d
		}
	}
}
