package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
)

// clusterView is what one scheduling cycle reads from the informer caches.
type clusterView struct {
	Nodes []corev1.Node
	Pods  []corev1.Pod
	PTs   []*v1alpha1.PhasedTraining
	// Priorities maps PriorityClass names to values.
	Priorities driver.Priorities
	// Quotas are the namespaces' ResourceQuotas.
	Quotas []corev1.ResourceQuota
	// Queues are the TenantQueues.
	Queues []v1alpha1.TenantQueue
	// Proposed are new pipelines whose first status (from the
	// reconciler, see Scheduler.Propose) is not stored yet: the cycle
	// writes it, with whatever it decides for them.
	Proposed []*v1alpha1.PhasedTraining
}

// buildSnapshot turns the caches into the engine's input: the pipelines'
// demand (driver.Demand: the ledger rebuilt from the statuses every cycle,
// so after a restart nothing is lost and nothing is granted twice, the
// queue and the upcoming phases), the nodes with what the pods no grant
// covers use on them, the namespaces' ResourceQuotas with what those
// pods use of them, and the tenant queues (their use is the grants').
func buildSnapshot(v clusterView, now time.Time, fence *engine.Fence) (engine.Snapshot, *driver.Demand) {
	d := &driver.Demand{Gangs: driver.Gangs{}, Pipelines: map[string]*v1alpha1.PhasedTraining{}}
	for _, pt := range v.PTs {
		d.Add(pt, v.Priorities)
	}
	// Which granted workers are bound tells the engine which it may move
	// when another pod takes their node's capacity.
	driver.MarkBinding(d, v.Pods)
	snap := engine.Snapshot{Now: now, Fence: fence, Ledger: d.Ledger, Queue: d.Queue, Upcoming: d.Upcoming, Queues: driver.Queues(v.Queues)}
	covered := coveredPods(d)
	used := unmanagedUse(v.Pods, covered)
	// A granted worker charges its namespace's quotas from its grant on
	// (the engine counts it); its pod, once it exists, is not counted
	// again.
	snap.Quotas = driver.Quotas(v.Quotas, v.Pods, func(ns, name string) bool {
		_, ok := covered[podID{ns, name}]
		return ok
	}, now)
	for i := range v.Nodes {
		n := &v.Nodes[i]
		if n.DeletionTimestamp != nil {
			continue
		}
		u := used[n.Name]
		if u == nil {
			u = &nodeUse{}
		}
		snap.Nodes = append(snap.Nodes, engine.Node{
			Name: n.Name, Labels: n.Labels, Taints: n.Spec.Taints, Unschedulable: n.Spec.Unschedulable,
			Allocatable: driver.NodeResources(n.Status.Allocatable),
			Used:        u.all, Leaving: u.leaving, LastPod: u.lastPod, HostPorts: u.ports,
		})
	}
	return snap, d
}

type podID struct{ ns, name string }

// coveredPods maps the pods of granted workers to their granted node:
// their capacity is the grant's, not counted again as pods.
func coveredPods(d *driver.Demand) map[podID]string {
	covered := map[podID]string{}
	for _, g := range d.Ledger {
		ref := d.Gangs[g.Gang]
		ps := ref.Status()
		for w, node := range g.Workers {
			covered[podID{ref.Pipeline.Namespace, driver.PodName(ref.Pipeline, ps.Name, ps.Iteration, ps.Attempt, int32(w))}] = node
		}
	}
	return covered
}

// nodeUse is what the pods no grant covers use of one node.
type nodeUse struct {
	// all is every such pod's requests; leaving the part of it whose
	// pods go by themselves (being deleted, or phasegang's own whose
	// grant ended: the reconciler deletes them).
	all, leaving engine.ResourceList
	// lastPod is the newest pod that stays ("namespace/name").
	lastPod string
	lastAt  time.Time
	// ports are the host ports those pods bind (leaving ones too: they
	// hold them until they are gone).
	ports []engine.HostPort
}

// unmanagedUse sums, per node, the requests of every bound, unfinished pod
// no grant covers: other workloads, and phasegang's own pods whose grant
// is gone but which still terminate.
func unmanagedUse(pods []corev1.Pod, covered map[podID]string) map[string]*nodeUse {
	used := map[string]*nodeUse{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if node, ok := covered[podID{p.Namespace, p.Name}]; ok && node == p.Spec.NodeName {
			continue
		}
		u := used[p.Spec.NodeName]
		if u == nil {
			u = &nodeUse{all: engine.ResourceList{}}
			used[p.Spec.NodeName] = u
		}
		req := engine.ResourceList{engine.ResourceName(corev1.ResourcePods): engine.Milli(1)}
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			req[engine.ResourceName(name)] += q.MilliValue()
		}
		add(u.all, req)
		u.ports = append(u.ports, driver.HostPortsOf(&p.Spec)...)
		if p.DeletionTimestamp != nil || p.Labels[driver.LabelManaged] != "" {
			if u.leaving == nil {
				u.leaving = engine.ResourceList{}
			}
			add(u.leaving, req)
			continue
		}
		if at := p.CreationTimestamp.Time; u.lastPod == "" || at.After(u.lastAt) {
			u.lastPod, u.lastAt = p.Namespace+"/"+p.Name, at
		}
	}
	return used
}

func add(into, rl engine.ResourceList) {
	for name, v := range rl {
		into[name] += v
	}
}
