package controllers

import (
	"context"
	"time"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/phases"
)

// PhaseTracer receives the moments of a pipeline's life that a trace
// shows. A nil PhaseTracer traces nothing.
type PhaseTracer interface {
	// Reserved: a gang was granted (waitingFor is what it waited for).
	Reserved(ctx context.Context, pt *v1alpha1.PhasedTraining, ps *v1alpha1.PhaseStatus, waitingFor string, now time.Time)
	// Step: the reconciler stored a step of the state machine (phases
	// queued, ended, skipped or requeued).
	Step(ctx context.Context, before, after *v1alpha1.PhasedTraining, step phases.Step)
}
