package driver

import (
	"fmt"
	"strings"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// ReasonPriorityClassNotFound is the Event reason of a pipeline that names
// a PriorityClass the cluster does not have.
const ReasonPriorityClassNotFound = "PriorityClassNotFound"

// MissingClass is the PriorityClass spec names that classes does not
// hold, "" when spec.priority is set, no class is named, or it exists. A
// pod naming a missing class is rejected; a pipeline naming one waits
// (Demand.Add keeps it out of the queue) instead of running at priority 0.
func MissingClass(spec *v1alpha1.PhasedTrainingSpec, classes Priorities) string {
	if spec.Priority != nil || spec.PriorityClassName == "" {
		return ""
	}
	if _, ok := classes[spec.PriorityClassName]; ok {
		return ""
	}
	return spec.PriorityClassName
}

// waitingForClassPrefix starts what a queued phase waiting for a missing
// PriorityClass says.
const waitingForClassPrefix = "waits for PriorityClass "

// WaitingForClass is what a queued phase of such a pipeline waits for.
func WaitingForClass(name string) string {
	return fmt.Sprintf(waitingForClassPrefix+"%q, which does not exist (create it, or set spec.priority)", name)
}

// waitsForClass reports whether a queued phase waits for a missing
// PriorityClass rather than for capacity: the Queued condition's reason
// is then WaitingForPriorityClass. It reads the phase's waitingFor, which
// applyNoClass wrote, so the status alone says it (Advance, which knows
// no PriorityClass, keeps the reason).
func waitsForClass(ps *v1alpha1.PhaseStatus) bool {
	return ps.State == v1alpha1.PhaseQueued && strings.HasPrefix(ps.WaitingFor, waitingForClassPrefix)
}

// applyNoClass says, on every queued phase of the pipelines Demand.Add
// kept out of the queue, which PriorityClass they wait for (the Queued
// condition then repeats it), with a Warning Event when it starts.
func applyNoClass(d *Demand, changes Changes) {
	for _, pt := range d.NoClass {
		name := MissingClass(&pt.Spec, d.classes)
		msg := WaitingForClass(name)
		for i := range pt.Status.Phases {
			ps := &pt.Status.Phases[i]
			if ps.State != v1alpha1.PhaseQueued || ps.WaitingFor == msg || pt.Status.Phase(ps.Name, ps.Iteration) != ps {
				continue
			}
			c := changes.Touch(pt)
			c.Status.Phases[i].WaitingFor = msg
			c.Events = append(c.Events, warning(ReasonPriorityClassNotFound, "Schedule", fmt.Sprintf("phase %s %s", PhaseLabel(ps), msg)))
		}
	}
}
