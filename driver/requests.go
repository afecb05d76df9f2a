package driver

import (
	"slices"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
)

// Priorities maps PriorityClass names to their values.
type Priorities map[string]int32

// Priority resolves a pipeline's priority: spec.priority, else its
// PriorityClass's value (0 when the class is unknown), else 0.
func Priority(spec *v1alpha1.PhasedTrainingSpec, classes Priorities) int32 {
	if spec.Priority != nil {
		return *spec.Priority
	}
	if spec.PriorityClassName != "" {
		return classes[spec.PriorityClassName]
	}
	return 0
}

// Schedulable says whether a pipeline takes part in scheduling: not being
// deleted, valid, not ended, and its spec validated (observed).
func Schedulable(pt *v1alpha1.PhasedTraining) bool {
	if pt.DeletionTimestamp != nil {
		return false
	}
	switch pt.Status.State {
	case v1alpha1.PipelineInvalid, v1alpha1.PipelineSucceeded, v1alpha1.PipelineFailed:
		return false
	}
	return pt.Status.ObservedGeneration == pt.Generation
}

// Request is the engine's view of a phase attempt: its gang key, the
// pipeline's priority and age (every phase carries the pipeline's
// creation time, so a later phase keeps the pipeline's place), its gang
// size, its workers' Shape and its tenant queue.
func Request(pt *v1alpha1.PhasedTraining, phase SpecPhase, ps *v1alpha1.PhaseStatus, classes Priorities) engine.Request {
	r := engine.Request{
		Gang:        GangKey(pt, ps),
		Priority:    Priority(&pt.Spec, classes),
		Created:     pt.CreationTimestamp.Time,
		Min:         phase.Spec.Gang.Min,
		Desired:     phase.Spec.Gang.DesiredOrMin(),
		Footprint:   phase.Shape.Footprint,
		Constraints: phase.Shape.Constraints,
		HostPorts:   phase.Shape.HostPorts,
		OnePerNode:  phase.Shape.OnePerNode,
		Quota:       phase.Shape.Quota,
		Queue:       pt.Spec.QueueName,
	}
	r.Queued = r.Created
	if ps.QueuedTime != nil {
		r.Queued = ps.QueuedTime.Time
	}
	if ps.NotBefore != nil {
		r.NotBefore = ps.NotBefore.Time
	}
	return r
}

// Gang points from an engine gang back to its phase status.
type Gang struct {
	Pipeline *v1alpha1.PhasedTraining
	Phase    *v1alpha1.Phase
	// Index of the PhaseStatus in Pipeline.Status.Phases.
	Index int
}

// Status is the gang's phase status (in the pipeline it was built from).
func (g Gang) Status() *v1alpha1.PhaseStatus { return &g.Pipeline.Status.Phases[g.Index] }

// Gangs indexes a cycle's gangs by key.
type Gangs map[engine.GangKey]Gang

// Demand is what pipelines put into one scheduling cycle.
type Demand struct {
	// Ledger holds the grants of running phase attempts: a grant stays
	// whatever else happens to its pipeline, until the phase ends.
	Ledger []engine.Grant
	// Queue holds the queued phase attempts of schedulable pipelines.
	Queue []engine.Request
	// Upcoming holds the phases schedulable pipelines have not queued yet,
	// so the engine finds a phase that can never fit when its pipeline
	// arrives, not after the earlier phases ran.
	Upcoming []engine.Request
	Gangs    Gangs
	// Pipelines holds the schedulable pipelines by "namespace/name".
	Pipelines map[string]*v1alpha1.PhasedTraining
	// NoClass holds the pipelines that would be schedulable but name a
	// PriorityClass that does not exist (MissingClass): none of their
	// phases queues until it does.
	NoClass []*v1alpha1.PhasedTraining
	// Levels are the cluster's topology levels (node label keys, top
	// level first): the phases' topology is resolved against them
	// (TopologyOf). Set it before Add.
	Levels []string
	// NodeDomains maps each node to its domain path (NodeDomains): with
	// it, ApplyPlan writes each granted worker's domain in the phase's
	// status (status.phases[].domains). Nil without topology levels.
	NodeDomains map[string]string
	classes     Priorities
}

func (d *Demand) pipelineKeys() []string {
	keys := make([]string, 0, len(d.Pipelines))
	for k := range d.Pipelines {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Add appends one pipeline's gangs.
func (d *Demand) Add(pt *v1alpha1.PhasedTraining, classes Priorities) {
	if pt.DeletionTimestamp != nil {
		return // its pods still terminating are the cluster's to count
	}
	if d.Gangs == nil {
		d.Gangs, d.Pipelines = Gangs{}, map[string]*v1alpha1.PhasedTraining{}
	}
	queueing := Schedulable(pt)
	if d.classes = classes; queueing && MissingClass(&pt.Spec, classes) != "" {
		d.NoClass, queueing = append(d.NoClass, pt), false
	}
	if queueing {
		d.Pipelines[pt.Namespace+"/"+pt.Name] = pt
	}
	specs := SpecPhases(pt)
	for i := range pt.Status.Phases {
		ps := &pt.Status.Phases[i]
		phase, ok := specs[ps.Name]
		if !ok || pt.Status.Phase(ps.Name, ps.Iteration) != ps {
			continue // an older attempt, or a phase the spec lost
		}
		switch {
		case ps.State.Reserved() && len(ps.Assignments) > 0:
			r := Request(pt, phase, ps, classes)
			r.Topology = TopologyOf(pt, phase.Spec, ps.Iteration, d.Levels)
			d.Ledger = append(d.Ledger, engine.Grant{Request: r, Workers: ps.Assignments})
			d.Gangs[r.Gang] = Gang{Pipeline: pt, Phase: phase.Spec, Index: i}
		case ps.State == v1alpha1.PhaseQueued && queueing:
			r := Request(pt, phase, ps, classes)
			r.Topology = TopologyOf(pt, phase.Spec, ps.Iteration, d.Levels)
			d.Queue = append(d.Queue, r)
			d.Gangs[r.Gang] = Gang{Pipeline: pt, Phase: phase.Spec, Index: i}
		}
	}
	if queueing {
		for _, r := range upcoming(pt, specs, classes) {
			r.Topology = TopologyOf(pt, specs[r.Gang.Phase].Spec, 0, d.Levels)
			d.Upcoming = append(d.Upcoming, r)
		}
	}
}

// Upcoming lists the phases of a pipeline that have no status entry yet
// (or only a Pending one), as first-attempt requests.
func Upcoming(pt *v1alpha1.PhasedTraining, classes Priorities) []engine.Request {
	return upcoming(pt, SpecPhases(pt), classes)
}

func upcoming(pt *v1alpha1.PhasedTraining, specs map[string]SpecPhase, classes Priorities) []engine.Request {
	var out []engine.Request
	for i := range pt.Spec.Phases {
		name := pt.Spec.Phases[i].Name
		if ps := pt.Status.Phase(name, 0); ps != nil && ps.State != v1alpha1.PhasePending {
			continue
		}
		out = append(out, Request(pt, specs[name], &v1alpha1.PhaseStatus{Name: name}, classes))
	}
	return out
}
