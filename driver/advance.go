package driver

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/phases"
)

// Advanced is the outcome of one Advance.
type Advanced struct {
	// Status is the pipeline's next status.
	Status *v1alpha1.PhasedTrainingStatus
	// Step is what the state machine decided.
	Step phases.Step
	// Events tell what ended, was skipped or requeued, and the
	// pipeline's end; record them once Status is stored.
	Events []Event
}

// Advance takes a pipeline as far as it can go from what was observed of
// its workers at now: the workers' progress, then the state machine's
// step (phases.Next and Apply), its history, stopping what a failed
// pipeline still runs or queues, the conditions, state and
// observedGeneration.
func Advance(pl *phases.Pipeline, pt *v1alpha1.PhasedTraining, obs Observations, now time.Time) Advanced {
	st := pt.Status.DeepCopy()
	clearInvalid(st, pt.Generation)
	recordProgress(st, obs)
	step := pl.Next(st, obs.phases(), now)
	pl.Apply(st, step, now)
	recordHistory(st, step, now)
	if step.State == v1alpha1.PipelineFailed {
		stopRemaining(st, now, "stopped: "+step.Message)
	}
	setStepConditions(st, step, pt.Generation)
	st.State = v1alpha1.StateFromConditions(st.Conditions)
	setWorkersSummary(pt, st)
	st.ObservedGeneration = pt.Generation
	return Advanced{Status: st, Step: step, Events: stepEvents(&pt.Status, st, step)}
}

// Quiet reports whether a step only queued phases: nothing ended, was
// skipped or requeued, no timer is set and the pipeline goes on.
func Quiet(step phases.Step) bool {
	return len(step.End) == 0 && len(step.Skip) == 0 && len(step.Requeue) == 0 && step.Wake.IsZero() &&
		step.State != v1alpha1.PipelineSucceeded && step.State != v1alpha1.PipelineFailed
}

// HandsOver reports whether a step ended phases and only queued their
// successors: nothing skipped or requeued, no timer set, the pipeline goes
// on. Like a new pipeline's first status, its status can wait for the
// scheduler's first decision on the queued phases and be stored with it.
func HandsOver(step phases.Step) bool {
	return len(step.End) > 0 && len(step.Queue) > 0 && len(step.Skip) == 0 && len(step.Requeue) == 0 &&
		step.Wake.IsZero() && step.State != v1alpha1.PipelineSucceeded && step.State != v1alpha1.PipelineFailed
}

// clearInvalid lifts an Invalid condition once the spec compiles.
func clearInvalid(st *v1alpha1.PhasedTrainingStatus, gen int64) {
	if isTrue(st, v1alpha1.ConditionInvalid) {
		setCondition(st, gen, v1alpha1.ConditionInvalid, false, v1alpha1.ReasonSpecInvalid, "the spec is valid")
	}
}

// recordProgress copies the observed worker counts into the reserved
// phases, and their start time once every granted worker has started; a
// phase is Starting until its gang has started, then Running.
func recordProgress(st *v1alpha1.PhasedTrainingStatus, obs Observations) {
	for i := range st.Phases {
		ps := &st.Phases[i]
		if !ps.State.Reserved() || len(ps.Assignments) == 0 {
			continue
		}
		o, ok := obs[phases.Instance{Name: ps.Name, Iteration: ps.Iteration, Attempt: ps.Attempt}]
		if !ok {
			continue
		}
		ps.Workers.Running, ps.Workers.Succeeded, ps.Workers.Failed = o.Running, o.Succeeded, o.Failed
		// A gang that has not started says what it waits for, as a
		// queued one does (the Starting condition shows it).
		ps.WaitingFor = ""
		if !started(ps) {
			ps.WaitingFor = o.Waiting
		}
		if ps.StartTime == nil && !o.Started.IsZero() {
			t := metav1.NewTime(o.Started)
			ps.StartTime = &t
		}
		ps.State = startState(ps)
	}
}

// recordHistory adds what the step decided to the phases' history:
// requeues (the gang released and the attempt queued again: a start
// timeout, a refused pod, a lost worker) and retries (a new attempt
// queued after a failed one).
func recordHistory(st *v1alpha1.PhasedTrainingStatus, step phases.Step, now time.Time) {
	t := metav1.NewTime(now)
	for _, rq := range step.Requeue {
		if ps := findAttempt(st, rq.Instance); ps != nil {
			ps.AddHistory(v1alpha1.PhaseEvent{Time: t, Type: rq.Cause, Message: rq.Message})
		}
	}
	for _, q := range step.Queue {
		if q.Attempt == 0 {
			continue
		}
		ps := findAttempt(st, q)
		if ps == nil {
			continue
		}
		msg := fmt.Sprintf("attempt %d failed", q.Attempt-1)
		if prev := findAttempt(st, phases.Instance{Name: q.Name, Iteration: q.Iteration, Attempt: q.Attempt - 1}); prev != nil && prev.Message != "" {
			msg += ": " + prev.Message
		}
		ps.AddHistory(v1alpha1.PhaseEvent{Time: t, Type: v1alpha1.PhaseEventRetry, Message: msg})
	}
}

func findAttempt(st *v1alpha1.PhasedTrainingStatus, in phases.Instance) *v1alpha1.PhaseStatus {
	for i := range st.Phases {
		ps := &st.Phases[i]
		if ps.Name == in.Name && ps.Iteration == in.Iteration && ps.Attempt == in.Attempt {
			return ps
		}
	}
	return nil
}

// stopRemaining ends what a failed pipeline still has queued or running:
// its sibling phases give their capacity back at once.
func stopRemaining(st *v1alpha1.PhasedTrainingStatus, now time.Time, msg string) {
	t := metav1.NewTime(now)
	for i := range st.Phases {
		ps := &st.Phases[i]
		if ps.State.Reserved() || ps.State == v1alpha1.PhaseQueued || ps.State == v1alpha1.PhasePending {
			ps.State, ps.Message, ps.EndTime = v1alpha1.PhaseFailed, msg, &t
			ps.WaitingFor = ""
		}
	}
}

// stepEvents tells what a person reads of a step: a phase that failed,
// was requeued or skipped, and the pipeline's end. A phase that succeeds
// has no event (its end, outputs and history are in the status, and the
// pipeline's own end says it all went well); nor has a phase being
// queued: the scheduler's Reserved says when one waited long, and a
// phase still waiting says why in its waitingFor. Between phases the
// pipeline goes Queued ↔ Running, which the conditions tell.
func stepEvents(before, after *v1alpha1.PhasedTrainingStatus, step phases.Step) []Event {
	var out []Event
	for _, e := range step.End {
		if e.State == v1alpha1.PhaseFailed {
			out = append(out, warning("Phase"+string(e.State), "Run", fmt.Sprintf("phase %s %s: %s", e.Name, strings.ToLower(string(e.State)), e.Message)))
		}
	}
	for _, rq := range step.Requeue {
		out = append(out, warning(string(rq.Cause), "Run", fmt.Sprintf("phase %s: %s", rq.Name, rq.Message)))
	}
	for _, s := range step.Skip {
		out = append(out, normal("Skipped", "Run", fmt.Sprintf("phase %s skipped: %s", s.Name, s.Message)))
	}
	if before.State != after.State && (after.State == v1alpha1.PipelineSucceeded || after.State == v1alpha1.PipelineFailed) {
		out = append(out, normal(string(after.State), "Run", "pipeline "+strings.ToLower(string(after.State))))
	}
	return out
}

// Invalid is the status of a spec the API server accepted but phasegang
// cannot run (a cycle, an expression that does not compile...): condition
// Invalid with every error and its field path, and no other summary
// condition true. Such a pipeline is never scheduled; a fixed spec (a new
// generation) is validated again.
func Invalid(pt *v1alpha1.PhasedTraining, errs field.ErrorList) (*v1alpha1.PhasedTrainingStatus, Event) {
	st := pt.Status.DeepCopy()
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	msg := strings.Join(msgs, "; ")
	setCondition(st, pt.Generation, v1alpha1.ConditionInvalid, true, v1alpha1.ReasonSpecInvalid, msg)
	for _, t := range []v1alpha1.ConditionType{v1alpha1.ConditionQueued, v1alpha1.ConditionStarting, v1alpha1.ConditionRunning, v1alpha1.ConditionInfeasible} {
		if isTrue(st, t) {
			setCondition(st, pt.Generation, t, false, v1alpha1.ReasonSpecInvalid, "the spec is invalid")
		}
	}
	st.State = v1alpha1.StateFromConditions(st.Conditions)
	setWorkersSummary(pt, st)
	st.ObservedGeneration = pt.Generation
	return st, warning(v1alpha1.ReasonSpecInvalid, "Validate", msg)
}
