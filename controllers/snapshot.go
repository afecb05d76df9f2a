package controllers

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
)

// clusterView is what one scheduling cycle reads from the informer caches.
type clusterView struct {
	Nodes []corev1.Node
	Pods  []corev1.Pod
	PTs   []*v1alpha1.PhasedTraining
	// Priorities maps PriorityClass names to values.
	Priorities map[string]int32
	// Proposed are new pipelines whose first status (from the
	// reconciler, see Scheduler.Propose) is not stored yet: the cycle
	// writes it, with whatever it decides for them.
	Proposed []*v1alpha1.PhasedTraining
}

// gangRef points from an engine gang back to its phase status.
type gangRef struct {
	pt    *v1alpha1.PhasedTraining
	phase *v1alpha1.Phase
	// index of the PhaseStatus in pt.Status.Phases
	index int
}

// schedulable says whether a pipeline takes part in scheduling: not being
// deleted, valid, and not ended.
func schedulable(pt *v1alpha1.PhasedTraining) bool {
	if pt.DeletionTimestamp != nil {
		return false
	}
	switch pt.Status.State {
	case v1alpha1.PipelineInvalid, v1alpha1.PipelineSucceeded, v1alpha1.PipelineFailed:
		return false
	}
	// A spec edited since the status was written has not been validated yet.
	return pt.Status.ObservedGeneration == pt.Generation
}

func specPhase(pt *v1alpha1.PhasedTraining, name string) *v1alpha1.Phase {
	for i := range pt.Spec.Phases {
		if pt.Spec.Phases[i].Name == name {
			return &pt.Spec.Phases[i]
		}
	}
	return nil
}

// priorityOf resolves a pipeline's priority.
func priorityOf(pt *v1alpha1.PhasedTraining, classes map[string]int32) int32 {
	if pt.Spec.Priority != nil {
		return *pt.Spec.Priority
	}
	if pt.Spec.PriorityClassName != "" {
		return classes[pt.Spec.PriorityClassName]
	}
	return 0
}

// request is the engine's view of a phase attempt.
func request(pt *v1alpha1.PhasedTraining, phase *v1alpha1.Phase, ps *v1alpha1.PhaseStatus, classes map[string]int32) engine.Request {
	r := engine.Request{
		Gang:        gangKey(pt, ps),
		Priority:    priorityOf(pt, classes),
		Created:     pt.CreationTimestamp.Time,
		Min:         phase.Gang.Min,
		Desired:     phase.Gang.DesiredOrMin(),
		Footprint:   engine.WorkerFootprint(&phase.Template.Spec),
		Constraints: engine.ConstraintsOf(&phase.Template.Spec),
	}
	if ps.QueuedTime != nil {
		r.Queued = ps.QueuedTime.Time
	} else {
		r.Queued = r.Created
	}
	if ps.NotBefore != nil {
		r.NotBefore = ps.NotBefore.Time
	}
	return r
}

// buildSnapshot turns the caches into the engine's input. The ledger is
// rebuilt from the statuses every cycle: after a restart nothing is lost
// and nothing is granted twice, because the statuses are the ledger.
func buildSnapshot(v clusterView, now time.Time, fence *engine.Fence) (engine.Snapshot, map[engine.GangKey]gangRef) {
	snap := engine.Snapshot{Now: now, Fence: fence}
	refs := map[engine.GangKey]gangRef{}
	// covered[pod name] marks managed pods whose capacity a grant holds.
	type podID struct{ ns, name string }
	covered := map[podID]string{}
	for _, pt := range v.PTs {
		if pt.DeletionTimestamp != nil {
			// Its pods still terminating are counted below, as pods.
			continue
		}
		queueing := schedulable(pt)
		for i := range pt.Status.Phases {
			ps := &pt.Status.Phases[i]
			phase := specPhase(pt, ps.Name)
			if phase == nil || pt.Status.Phase(ps.Name, ps.Iteration) != ps {
				continue
			}
			switch {
			case ps.State == v1alpha1.PhaseRunning && len(ps.Assignments) > 0:
				// A grant stays in the ledger whatever else happens to the
				// pipeline, until the reconciler ends the phase.
				r := request(pt, phase, ps, v.Priorities)
				snap.Ledger = append(snap.Ledger, engine.Grant{Request: r, Workers: ps.Assignments})
				refs[r.Gang] = gangRef{pt: pt, phase: phase, index: i}
				for w, node := range ps.Assignments {
					covered[podID{pt.Namespace, podName(pt, ps.Name, ps.Iteration, ps.Attempt, int32(w))}] = node
				}
			case ps.State == v1alpha1.PhaseQueued && queueing:
				r := request(pt, phase, ps, v.Priorities)
				snap.Queue = append(snap.Queue, r)
				refs[r.Gang] = gangRef{pt: pt, phase: phase, index: i}
			}
		}
	}
	used := map[string]engine.ResourceList{}
	for i := range v.Pods {
		p := &v.Pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if node, ok := covered[podID{p.Namespace, p.Name}]; ok && node == p.Spec.NodeName {
			continue
		}
		// Everything else bound to a node uses it: other workloads, and
		// phasegang's own pods whose grant is gone but which still
		// terminate.
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
	return snap, refs
}

// workerIndex reads a managed pod's worker index label.
func workerIndex(p *corev1.Pod) (int32, bool) {
	v, ok := p.Labels[LabelWorker]
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(v)
	return int32(i), err == nil
}
