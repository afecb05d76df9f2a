package driver

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/phases"
)

// setCondition sets one condition; an empty message repeats the reason.
func setCondition(st *v1alpha1.PhasedTrainingStatus, gen int64, t v1alpha1.ConditionType, on bool, reason, msg string) {
	status := metav1.ConditionFalse
	if on {
		status = metav1.ConditionTrue
	}
	if msg == "" {
		msg = reason
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(t), Status: status, Reason: reason, Message: msg, ObservedGeneration: gen})
}

func isTrue(st *v1alpha1.PhasedTrainingStatus, t v1alpha1.ConditionType) bool {
	return meta.IsStatusConditionTrue(st.Conditions, string(t))
}

// setStepConditions derives the conditions from the phases and the step.
func setStepConditions(st *v1alpha1.PhasedTrainingStatus, step phases.Step, gen int64) {
	set := func(t v1alpha1.ConditionType, on bool, reason, msg string) { setCondition(st, gen, t, on, reason, msg) }
	switch step.State {
	case v1alpha1.PipelineSucceeded, v1alpha1.PipelineFailed:
		if isTrue(st, v1alpha1.ConditionInfeasible) {
			set(v1alpha1.ConditionInfeasible, false, string(step.State), "the pipeline ended")
		}
	}
	switch step.State {
	case v1alpha1.PipelineSucceeded:
		set(v1alpha1.ConditionSucceeded, true, v1alpha1.ReasonAllPhasesEnded, step.Message)
		endProgress(st, gen, v1alpha1.ReasonAllPhasesEnded)
		return
	case v1alpha1.PipelineFailed:
		reason := step.Reason
		if reason == "" {
			reason = v1alpha1.ReasonPhaseFailed
		}
		set(v1alpha1.ConditionFailed, true, reason, step.Message)
		endProgress(st, gen, reason)
		return
	}
	setPhaseConditions(st, gen)
}

// endProgress turns the progress conditions (Running, Queued, and Starting
// when the pipeline ever had it) off with the reason the pipeline ended:
// an ended pipeline neither runs, waits nor starts, and the one True
// condition left is its outcome, which kubectl get -o wide's Reason column
// (the first True condition's reason) then shows.
func endProgress(st *v1alpha1.PhasedTrainingStatus, gen int64, reason string) {
	setCondition(st, gen, v1alpha1.ConditionRunning, false, reason, "")
	setCondition(st, gen, v1alpha1.ConditionQueued, false, reason, "")
	if meta.FindStatusCondition(st.Conditions, string(v1alpha1.ConditionStarting)) != nil {
		setCondition(st, gen, v1alpha1.ConditionStarting, false, reason, "")
	}
}

// setPhaseConditions derives Running and Queued from the phases of a
// pipeline that has not ended. ApplyPlan calls it too, so a grant's status
// write already carries them and the step that follows has nothing to
// write before the pods are created.
func setPhaseConditions(st *v1alpha1.PhasedTrainingStatus, gen int64) {
	set := func(t v1alpha1.ConditionType, on bool, reason, msg string) { setCondition(st, gen, t, on, reason, msg) }
	var running, starting, queued []string
	var waiting string
	reason := v1alpha1.ReasonWaitingForCapacity
	for i := range st.Phases {
		ps := &st.Phases[i]
		switch ps.State {
		case v1alpha1.PhaseStarting, v1alpha1.PhaseRunning:
			if started(ps) {
				running = append(running, fmt.Sprintf("%s on %d workers", PhaseLabel(ps), len(ps.Assignments)))
				continue
			}
			s := fmt.Sprintf("%s: %d of %d workers running (it runs at %d)", PhaseLabel(ps), ps.Workers.Running, len(ps.Assignments), minWorkers(ps))
			if ps.WaitingFor != "" {
				s += "; " + ps.WaitingFor
			}
			starting = append(starting, s)
		case v1alpha1.PhaseQueued:
			queued = append(queued, PhaseLabel(ps))
			if waiting == "" && ps.WaitingFor != "" {
				waiting = PhaseLabel(ps) + " " + ps.WaitingFor
				if waitsForClass(ps) {
					reason = v1alpha1.ReasonWaitingForPriorityClass
				}
			}
		}
	}
	if len(running) > 0 {
		set(v1alpha1.ConditionRunning, true, v1alpha1.ReasonPhaseRunning, "running: "+strings.Join(running, ", "))
	} else {
		set(v1alpha1.ConditionRunning, false, v1alpha1.ReasonWaitingForCapacity, "no phase is running")
	}
	// Starting: a gang is reserved but fewer than its min workers run (its
	// pods are Pending, pulling, waiting for a volume). It is not Running:
	// a synchronous job would still wait at its rendezvous.
	if len(starting) > 0 && len(running) == 0 {
		set(v1alpha1.ConditionStarting, true, v1alpha1.ReasonGangStarting, "starting: "+strings.Join(starting, ", "))
	} else if meta.FindStatusCondition(st.Conditions, string(v1alpha1.ConditionStarting)) != nil {
		set(v1alpha1.ConditionStarting, false, v1alpha1.ReasonPhaseRunning, "")
	}
	if len(queued) > 0 && len(running) == 0 && len(starting) == 0 && !isTrue(st, v1alpha1.ConditionInfeasible) {
		if waiting == "" {
			waiting = "queued: " + strings.Join(queued, ", ")
		}
		set(v1alpha1.ConditionQueued, true, reason, waiting)
	} else {
		set(v1alpha1.ConditionQueued, false, v1alpha1.ReasonPhaseRunning, "")
	}
}

// started reports whether a reserved gang runs: at least its min workers
// run, or it has started before (every worker ran once; some may have
// ended since).
func started(ps *v1alpha1.PhaseStatus) bool {
	return ps.StartTime != nil || ps.Workers.Running >= minWorkers(ps) ||
		ps.Workers.Running+ps.Workers.Succeeded+ps.Workers.Failed >= int32(len(ps.Assignments))
}

// startState is a reserved phase's state: Running once its gang has
// started, Starting while fewer than its min workers run. It follows the
// same rule as the Starting and Running conditions, so a phase never reads
// Running while its pipeline is Starting.
func startState(ps *v1alpha1.PhaseStatus) v1alpha1.PhaseState {
	if started(ps) {
		return v1alpha1.PhaseRunning
	}
	return v1alpha1.PhaseStarting
}

// minWorkers is the gang's min, or its grant when the status does not say.
func minWorkers(ps *v1alpha1.PhaseStatus) int32 {
	if ps.Workers.Min > 0 {
		return min(ps.Workers.Min, int32(len(ps.Assignments)))
	}
	return int32(len(ps.Assignments))
}

// settled: a finished or invalid pipeline's conditions are the step's
// (Advance's), not the scheduler's.
func settled(st *v1alpha1.PhasedTrainingStatus) bool {
	switch v1alpha1.StateFromConditions(st.Conditions) {
	case v1alpha1.PipelineSucceeded, v1alpha1.PipelineFailed, v1alpha1.PipelineInvalid:
		return true
	}
	return false
}

// PhaseLabel names a phase attempt for people: "train (iteration 2) (attempt 1)".
func PhaseLabel(ps *v1alpha1.PhaseStatus) string {
	s := ps.Name
	if ps.Iteration > 0 {
		s += fmt.Sprintf(" (iteration %d)", ps.Iteration)
	}
	if ps.Attempt > 0 {
		s += fmt.Sprintf(" (attempt %d)", ps.Attempt)
	}
	return s
}
