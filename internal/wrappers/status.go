package wrappers

import (
	"time"

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

// PS builds one phase status entry (status.phases[i]):
//
//	wrappers.MakePS("validate", v1alpha1.PhaseSucceeded).Attempt(0, 1).Outputs("accuracy", "0.9")
//
// Running, Starting, Queued and PhaseIn are its common cases, returned
// built.
type PS struct{ ps v1alpha1.PhaseStatus }

// MakePS starts the entry of a phase's first attempt (iteration 0,
// attempt 0) in the given state.
func MakePS(name string, state v1alpha1.PhaseState) *PS {
	return &PS{ps: v1alpha1.PhaseStatus{Name: name, State: state}}
}

// Attempt sets the entry's iteration and attempt.
func (b *PS) Attempt(iteration, attempt int32) *PS {
	b.ps.Iteration, b.ps.Attempt = iteration, attempt
	return b
}

// Outputs sets the entry's outputs from key, value pairs.
func (b *PS) Outputs(kv ...string) *PS {
	b.ps.Outputs = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		b.ps.Outputs[kv[i]] = kv[i+1]
	}
	return b
}

// Workers sets the entry's worker counts.
func (b *PS) Workers(w v1alpha1.WorkerCounts) *PS { b.ps.Workers = w; return b }

// Assignments sets the grant: worker i on nodes[i].
func (b *PS) Assignments(nodes ...string) *PS { b.ps.Assignments = nodes; return b }

// Reserved sets the time the gang was reserved.
func (b *PS) Reserved(t time.Time) *PS { b.ps.ReservedTime = Time(t); return b }

// Started sets the time the gang started.
func (b *PS) Started(t time.Time) *PS { b.ps.StartTime = Time(t); return b }

// Ended sets the time the attempt ended.
func (b *PS) Ended(t time.Time) *PS { b.ps.EndTime = Time(t); return b }

// Message sets the entry's message.
func (b *PS) Message(m string) *PS { b.ps.Message = m; return b }

// StartFailures sets how often the attempt's gang failed to start.
func (b *PS) StartFailures(n int32) *PS { b.ps.StartFailures = n; return b }

// WaitingFor sets what the gang waits for.
func (b *PS) WaitingFor(w string) *PS { b.ps.WaitingFor = w; return b }

// Obj returns the entry.
func (b *PS) Obj() v1alpha1.PhaseStatus { return *b.ps.DeepCopy() }

// Status is a PhasedTraining's status holding entries, in order.
func Status(entries ...*PS) *v1alpha1.PhasedTrainingStatus {
	s := &v1alpha1.PhasedTrainingStatus{}
	for _, e := range entries {
		s.Phases = append(s.Phases, e.Obj())
	}
	return s
}
