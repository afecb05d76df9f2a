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
		snap.Nodes = append(snap.Nodes, engine.Node{
			Name: n.Name, Labels: n.Labels, Taints: n.Spec.Taints, Unschedulable: n.Spec.Unschedulable,
			Allocatable: engine.NodeResources(n.Status.Allocatable),
			Used:        used[n.Name],
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

// unmanagedUse sums, per node, the requests of every bound, unfinished pod
// no grant covers: other workloads, and phasegang's own pods whose grant
// is gone but which still terminate.
func unmanagedUse(pods []corev1.Pod, covered map[podID]string) map[string]engine.ResourceList {
	used := map[string]engine.ResourceList{}
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
			u = engine.ResourceList{}
			used[p.Spec.NodeName] = u
		}
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			u[engine.ResourceName(name)] += q.MilliValue()
		}
		u[engine.ResourceName(corev1.ResourcePods)] += engine.Milli(1)
	}
	return used
}
