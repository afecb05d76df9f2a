package driver

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/phasegang/phasegang/engine"
)

// PodKey names a pod: its namespace and name.
type PodKey struct{ Namespace, Name string }

// CoveredPods maps the pods of granted workers to their granted node:
// their capacity is the grant's, not counted again as pods.
func CoveredPods(d *Demand) map[PodKey]string {
	covered := map[PodKey]string{}
	for _, g := range d.Ledger {
		ref := d.Gangs[g.Gang]
		ps := ref.Status()
		for w, node := range g.Workers {
			covered[PodKey{ref.Pipeline.Namespace, PodName(ref.Pipeline, ps.Name, ps.Iteration, ps.Attempt, int32(w))}] = node
		}
	}
	return covered
}

// Nodes turns the cluster's nodes into the engine's, each with what the
// pods no grant covers use of it (UnmanagedUse); nodes being deleted are
// left out.
func Nodes(nodes []corev1.Node, pods []corev1.Pod, covered map[PodKey]string) []engine.Node {
	used := UnmanagedUse(pods, covered)
	var out []engine.Node
	for i := range nodes {
		n := &nodes[i]
		if n.DeletionTimestamp != nil {
			continue
		}
		u := used[n.Name]
		if u == nil {
			u = &NodeUse{}
		}
		out = append(out, engine.Node{
			Name: n.Name, Labels: n.Labels, Taints: n.Spec.Taints, Unschedulable: n.Spec.Unschedulable,
			Allocatable: NodeResources(n.Status.Allocatable),
			Used:        u.All, Leaving: u.Leaving, LastPod: u.LastPod, HostPorts: u.Ports,
		})
	}
	return out
}

// NodeUse is what the pods no grant covers use of one node.
type NodeUse struct {
	// All is every such pod's requests; Leaving the part of it whose
	// pods go by themselves (being deleted, or phasegang's own whose
	// grant ended: the reconciler deletes them).
	All, Leaving engine.ResourceList
	// LastPod is the newest pod that stays ("namespace/name").
	LastPod string
	lastAt  time.Time
	// Ports are the host ports those pods bind (leaving ones too: they
	// hold them until they are gone).
	Ports []engine.HostPort
}

// UnmanagedUse sums, per node, the requests of every bound, unfinished pod
// no grant covers: other workloads, and phasegang's own pods whose grant
// is gone but which still terminate.
func UnmanagedUse(pods []corev1.Pod, covered map[PodKey]string) map[string]*NodeUse {
	used := map[string]*NodeUse{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if node, ok := covered[PodKey{p.Namespace, p.Name}]; ok && node == p.Spec.NodeName {
			continue
		}
		u := used[p.Spec.NodeName]
		if u == nil {
			u = &NodeUse{All: engine.ResourceList{}}
			used[p.Spec.NodeName] = u
		}
		req := engine.ResourceList{engine.ResourceName(corev1.ResourcePods): engine.Milli(1)}
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			req[engine.ResourceName(name)] += q.MilliValue()
		}
		addTo(u.All, req)
		u.Ports = append(u.Ports, HostPortsOf(&p.Spec)...)
		if p.DeletionTimestamp != nil || p.Labels[LabelManaged] != "" {
			if u.Leaving == nil {
				u.Leaving = engine.ResourceList{}
			}
			addTo(u.Leaving, req)
			continue
		}
		if at := p.CreationTimestamp.Time; u.LastPod == "" || at.After(u.lastAt) {
			u.LastPod, u.lastAt = p.Namespace+"/"+p.Name, at
		}
	}
	return used
}

func addTo(into, rl engine.ResourceList) {
	for name, v := range rl {
		into[name] += v
	}
}
