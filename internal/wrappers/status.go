package wrappers

import (
	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// Running is a phase attempt holding a grant, worker i on nodes[i], whose
// workers all run.
func Running(name string, nodes ...string) v1alpha1.PhaseStatus {
	return v1alpha1.PhaseStatus{Name: name, State: v1alpha1.PhaseRunning, Assignments: nodes,
		Workers: v1alpha1.WorkerCounts{Running: int32(len(nodes))}}
}

// Starting is a phase attempt whose gang is reserved on nodes (worker i on
// nodes[i]) but none of whose workers runs yet.
func Starting(name string, nodes ...string) v1alpha1.PhaseStatus {
	return v1alpha1.PhaseStatus{Name: name, State: v1alpha1.PhaseStarting, Assignments: nodes}
}

// Queued is a phase attempt waiting for its gang.
func Queued(name string) v1alpha1.PhaseStatus {
	return v1alpha1.PhaseStatus{Name: name, State: v1alpha1.PhaseQueued}
}

// PhaseIn is a phase status entry in any state.
func PhaseIn(name string, state v1alpha1.PhaseState) v1alpha1.PhaseStatus {
	return v1alpha1.PhaseStatus{Name: name, State: state}
}

// Attempt sets a status entry's iteration and attempt.
func Attempt(ps v1alpha1.PhaseStatus, iteration, attempt int32) v1alpha1.PhaseStatus {
	ps.Iteration, ps.Attempt = iteration, attempt
	return ps
}
