package sim

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
)

// Topology is a scenario cluster's topology (cluster.topology): the node
// label keys that name its levels, top level first, as the controller's
// --topology-levels, and how much a phase loses by spanning domains.
//
//	cluster:
//	  topology:
//	    levels: [example.com/rack, kubernetes.io/hostname]
//	    crossDomain: {level: example.com/rack, efficiency: 0.8}
//	  nodePools:
//	  - {name: rack-0, count: 4, labels: {example.com/rack: r0}, ...}
//
// Node pools carry the level labels; kubernetes.io/hostname, if it is a
// level, is each node's name unless the pool sets it.
type Topology struct {
	Levels []string `json:"levels"`
	// CrossDomain slows down phases whose workers span domains; unset:
	// placement by topology changes no run time.
	CrossDomain *CrossDomain `json:"crossDomain,omitempty"`
}

// CrossDomain is the cross-domain slowdown model: a phase whose workers
// span d domains of Level runs at Efficiency^(d-1) of its speed (its
// all-reduce crosses the slower links between them).
type CrossDomain struct {
	Level      string  `json:"level"`
	Efficiency float64 `json:"efficiency"`
}

func (t *Topology) validate() error {
	if t == nil {
		return nil
	}
	var errs []error
	if len(t.Levels) == 0 {
		errs = append(errs, errors.New("cluster.topology.levels: at least one level is required"))
	}
	if c := t.CrossDomain; c != nil {
		if !slices.Contains(t.Levels, c.Level) {
			errs = append(errs, fmt.Errorf("cluster.topology.crossDomain.level: %q is not one of the levels %v", c.Level, t.Levels))
		}
		if !(c.Efficiency > 0 && c.Efficiency <= 1) {
			errs = append(errs, fmt.Errorf("cluster.topology.crossDomain.efficiency: %v must be in (0, 1]", c.Efficiency))
		}
	}
	return errors.Join(errs...)
}

// levels are the cluster's topology levels (none without a topology).
func (c Cluster) levels() []string {
	if c.Topology == nil {
		return nil
	}
	return c.Topology.Levels
}

// withDomains gives the nodes their hostname label (if it is a level) and
// their Domain paths.
func (c Cluster) withDomains(nodes []engine.Node) []engine.Node {
	levels := c.levels()
	if len(levels) == 0 {
		return nodes
	}
	for i := range nodes {
		if slices.Contains(levels, corev1.LabelHostname) && nodes[i].Labels[corev1.LabelHostname] == "" {
			labels := maps.Clone(nodes[i].Labels)
			if labels == nil {
				labels = map[string]string{}
			}
			labels[corev1.LabelHostname] = nodes[i].Name
			nodes[i].Labels = labels
		}
	}
	driver.SetDomains(nodes, levels)
	return nodes
}

// crossDomainModel maps each node to its domain at the slowdown level.
type crossDomainModel struct {
	efficiency float64
	domain     map[string]string
}

func newCrossDomainModel(c Cluster, nodes []engine.Node) *crossDomainModel {
	if c.Topology == nil || c.Topology.CrossDomain == nil {
		return nil
	}
	cd := c.Topology.CrossDomain
	m := &crossDomainModel{efficiency: cd.Efficiency, domain: map[string]string{}}
	for _, n := range nodes {
		m.domain[n.Name] = n.Labels[cd.Level]
	}
	return m
}

// factor is the speed factor of a run on nodes: Efficiency^(d-1) for d
// domains spanned (1 without the model).
func (m *crossDomainModel) factor(nodes []string) float64 {
	if m == nil || len(nodes) < 2 {
		return 1
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		seen[m.domain[n]] = true
	}
	return math.Pow(m.efficiency, float64(len(seen)-1))
}
