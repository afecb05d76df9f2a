package driver

import (
	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/phases"
)

// Shape is what the engine needs of one phase's workers, read from the
// phase's pod template once: a worker's footprint, its node constraints,
// the host ports it binds, whether the gang spreads one worker per node,
// and what quotas read of it. Every engine.Request of the phase's
// attempts (each a status entry, each cycle) is built from it.
type Shape struct {
	Footprint   engine.ResourceList
	Constraints engine.Constraints
	HostPorts   []engine.HostPort
	OnePerNode  bool
	Quota       engine.QuotaFacts
}

// ShapeOf reads a phase's Shape from its pod template.
func ShapeOf(phase *v1alpha1.Phase) Shape {
	spec := &phase.Template.Spec
	return Shape{
		Footprint:   WorkerFootprint(spec),
		Constraints: ConstraintsOf(spec),
		HostPorts:   HostPortsOf(spec),
		OnePerNode:  phases.SpreadsOwnWorkers(spec, phase.Template.Labels),
		Quota:       QuotaFactsOf(spec),
	}
}

// SpecPhase is one phase of a pipeline's spec with its Shape.
type SpecPhase struct {
	Spec  *v1alpha1.Phase
	Shape Shape
}

// SpecPhases reads every phase of a pipeline's spec once, by name.
func SpecPhases(pt *v1alpha1.PhasedTraining) map[string]SpecPhase {
	out := make(map[string]SpecPhase, len(pt.Spec.Phases))
	for i := range pt.Spec.Phases {
		phase := &pt.Spec.Phases[i]
		out[phase.Name] = SpecPhase{Spec: phase, Shape: ShapeOf(phase)}
	}
	return out
}

// PhaseSpec returns the spec of the phase named name (nil: none), for a
// caller that needs one phase once; one that walks a pipeline's status
// reads SpecPhases.
func PhaseSpec(pt *v1alpha1.PhasedTraining, name string) *v1alpha1.Phase {
	for i := range pt.Spec.Phases {
		if pt.Spec.Phases[i].Name == name {
			return &pt.Spec.Phases[i]
		}
	}
	return nil
}
