package v1alpha1

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// summaryOrder lists the condition types that can summarize a pipeline, most
// decisive first: an Invalid spec outranks everything, a final outcome
// outranks progress.
var summaryOrder = []struct {
	cond  ConditionType
	state PipelineState
}{
	{ConditionInvalid, PipelineInvalid},
	{ConditionFailed, PipelineFailed},
	{ConditionSucceeded, PipelineSucceeded},
	{ConditionInfeasible, PipelineInfeasible},
	{ConditionRunning, PipelineRunning},
	{ConditionStarting, PipelineStarting},
	{ConditionQueued, PipelineQueued},
}

// StateFromConditions derives the one-word state from the conditions. It is
// the only way status.state is computed, so the two never disagree.
func StateFromConditions(conds []metav1.Condition) PipelineState {
	for _, o := range summaryOrder {
		if meta.IsStatusConditionTrue(conds, string(o.cond)) {
			return o.state
		}
	}
	return PipelinePending
}

// Phase returns the status entry of the named phase in the given iteration
// with the highest attempt, or nil.
func (s *PhasedTrainingStatus) Phase(name string, iteration int32) *PhaseStatus {
	var found *PhaseStatus
	for i := range s.Phases {
		p := &s.Phases[i]
		if p.Name == name && p.Iteration == iteration && (found == nil || p.Attempt > found.Attempt) {
			found = p
		}
	}
	return found
}

// AddHistory appends an event to the attempt's history, keeping the newest
// MaxPhaseHistory entries. A message longer than the API's bound is cut.
func (ps *PhaseStatus) AddHistory(e PhaseEvent) {
	if len(e.Message) > 1024 {
		e.Message = strings.ToValidUTF8(e.Message[:1021], "") + "..."
	}
	ps.History = append(ps.History, e)
	if n := len(ps.History) - MaxPhaseHistory; n > 0 {
		ps.History = append([]PhaseEvent(nil), ps.History[n:]...)
	}
}
