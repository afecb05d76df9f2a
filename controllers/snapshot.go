package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"

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
	// TopologyLevels are the cluster's topology levels (Scheduler's).
	TopologyLevels []string
}

// buildSnapshot turns the caches into the engine's input: the pipelines'
// demand (driver.Demand: the ledger rebuilt from the statuses every cycle,
// so after a restart nothing is lost and nothing is granted twice, the
// queue and the upcoming phases), the nodes with what the pods no grant
// covers use on them, the namespaces' ResourceQuotas with what those
// pods use of them, and the tenant queues (their use is the grants').
func buildSnapshot(v clusterView, now time.Time, fence *engine.Fence) (engine.Snapshot, *driver.Demand) {
	d := &driver.Demand{Gangs: driver.Gangs{}, Pipelines: map[string]*v1alpha1.PhasedTraining{}, Levels: v.TopologyLevels}
	for _, pt := range v.PTs {
		d.Add(pt, v.Priorities)
	}
	// Which granted workers are bound tells the engine which it may move
	// when another pod takes their node's capacity.
	driver.MarkBinding(d, v.Pods)
	snap := engine.Snapshot{Now: now, Fence: fence, Ledger: d.Ledger, Queue: d.Queue, Upcoming: d.Upcoming, Queues: driver.Queues(v.Queues)}
	covered := driver.CoveredPods(d)
	// A granted worker charges its namespace's quotas from its grant on
	// (the engine counts it); its pod, once it exists, is not counted
	// again.
	snap.Quotas = driver.Quotas(v.Quotas, v.Pods, func(ns, name string) bool {
		_, ok := covered[driver.PodKey{Namespace: ns, Name: name}]
		return ok
	}, now)
	snap.Nodes = driver.Nodes(v.Nodes, v.Pods, covered)
	driver.SetDomains(snap.Nodes, v.TopologyLevels)
	d.NodeDomains = driver.NodeDomains(snap.Nodes)
	return snap, d
}
