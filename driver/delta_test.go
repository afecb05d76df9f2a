package driver

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// deltaSummary is a LedgerDelta by gang keys.
type deltaSummary struct {
	Submit, Withdraw, Release, Upcoming []string
}

func summarizeDelta(d LedgerDelta) deltaSummary {
	var s deltaSummary
	for _, r := range d.Submit {
		s.Submit = append(s.Submit, r.Gang.String())
	}
	for _, g := range d.Withdraw {
		s.Withdraw = append(s.Withdraw, g.String())
	}
	for _, g := range d.Release {
		s.Release = append(s.Release, g.String())
	}
	for _, r := range d.Upcoming {
		s.Upcoming = append(s.Upcoming, r.Gang.String())
	}
	return s
}

// statusOf is a running pipeline's status with these phases.
func statusOf(state v1alpha1.PipelineState, ps ...v1alpha1.PhaseStatus) *v1alpha1.PhasedTrainingStatus {
	return &v1alpha1.PhasedTrainingStatus{ObservedGeneration: 1, State: state, Phases: ps}
}

func TestDelta(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("train", 2).Phase("eval", 1).DependsOn("train").Phase("test", 1).DependsOn("eval").Obj()
	running := v1alpha1.PipelineRunning
	tests := map[string]struct {
		before, after *v1alpha1.PhasedTrainingStatus
		want          deltaSummary
	}{
		"a new pipeline's first phase is submitted": {
			after: statusOf(v1alpha1.PipelineQueued, wrappers.Queued("train")),
			want:  deltaSummary{Submit: []string{"ns/job/train#0.0"}, Upcoming: []string{"ns/job/eval#0.0", "ns/job/test#0.0"}},
		},
		"unchanged: nothing to tell but the upcoming phases": {
			before: statusOf(running, wrappers.Running("train", "n1", "n2")),
			after:  statusOf(running, wrappers.Running("train", "n1", "n2")),
			want:   deltaSummary{Upcoming: []string{"ns/job/eval#0.0", "ns/job/test#0.0"}},
		},
		// The engine moved it from its queue to its ledger itself.
		"a grant is neither withdrawn nor submitted": {
			before: statusOf(v1alpha1.PipelineQueued, wrappers.Queued("train")),
			after:  statusOf(running, wrappers.Running("train", "n1", "n2")),
			want:   deltaSummary{Upcoming: []string{"ns/job/eval#0.0", "ns/job/test#0.0"}},
		},
		"a phase ends: its grant is released, the next one submitted": {
			before: statusOf(running, wrappers.Running("train", "n1", "n2")),
			after:  statusOf(v1alpha1.PipelineQueued, wrappers.PhaseIn("train", v1alpha1.PhaseSucceeded), wrappers.Queued("eval")),
			want:   deltaSummary{Submit: []string{"ns/job/eval#0.0"}, Release: []string{"ns/job/train#0.0"}, Upcoming: []string{"ns/job/test#0.0"}},
		},
		// A lost node requeues the very attempt: the engine must forget
		// the grant and queue the gang afresh.
		"a requeued attempt is released and submitted again": {
			before: statusOf(running, wrappers.Running("train", "n1", "n2")),
			after:  statusOf(v1alpha1.PipelineQueued, wrappers.Queued("train")),
			want: deltaSummary{Submit: []string{"ns/job/train#0.0"}, Release: []string{"ns/job/train#0.0"},
				Upcoming: []string{"ns/job/eval#0.0", "ns/job/test#0.0"}},
		},
		"a retry: the failed attempt released, the next one submitted": {
			before: statusOf(running, wrappers.Running("train", "n1", "n2")),
			after:  statusOf(v1alpha1.PipelineQueued, wrappers.PhaseIn("train", v1alpha1.PhaseFailed), wrappers.Attempt(wrappers.Queued("train"), 0, 1)),
			want: deltaSummary{Submit: []string{"ns/job/train#0.1"}, Release: []string{"ns/job/train#0.0"},
				Upcoming: []string{"ns/job/eval#0.0", "ns/job/test#0.0"}},
		},
		"a failed pipeline withdraws what it queued and releases what it held": {
			before: statusOf(running, wrappers.Running("train", "n1"), wrappers.Queued("eval")),
			after:  statusOf(v1alpha1.PipelineFailed, wrappers.PhaseIn("train", v1alpha1.PhaseFailed), wrappers.PhaseIn("eval", v1alpha1.PhaseFailed)),
			want:   deltaSummary{Withdraw: []string{"ns/job/eval#0.0"}, Release: []string{"ns/job/train#0.0"}},
		},
		// Its grant stays until the phase ends; what it queued waits for
		// the new generation to be validated.
		"a pipeline that stops being schedulable withdraws its queue only": {
			before: statusOf(running, wrappers.Running("train", "n1"), wrappers.Queued("eval")),
			after: func() *v1alpha1.PhasedTrainingStatus {
				st := statusOf(running, wrappers.Running("train", "n1"), wrappers.Queued("eval"))
				st.ObservedGeneration = 0
				return st
			}(),
			want: deltaSummary{Withdraw: []string{"ns/job/eval#0.0"}},
		},
		"no status after (the pipeline is gone): everything goes": {
			before: statusOf(running, wrappers.Running("train", "n1"), wrappers.Queued("eval")),
			want:   deltaSummary{Withdraw: []string{"ns/job/eval#0.0"}, Release: []string{"ns/job/train#0.0"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Delta(pt, tc.before, tc.after, nil)
			if d := cmp.Diff(tc.want, summarizeDelta(got), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("delta (-want +got):\n%s", d)
			}
		})
	}
}

// Delta submits exactly the requests the controller's cycle would queue,
// priority class resolved.
func TestDeltaSubmitsTheCyclesRequests(t *testing.T) {
	pt := wrappers.MakePT("job").PriorityClass("high").Phase("train", 2).Phase("eval", 1).Obj()
	classes := Priorities{"high": 1000}
	after := statusOf(v1alpha1.PipelineQueued, wrappers.Queued("train"), wrappers.Queued("eval"))
	got := Delta(pt, nil, after, classes)
	view := pt.DeepCopy()
	view.Status = *after
	var cycle Demand
	cycle.Add(view, classes)
	if d := cmp.Diff(cycle.Queue, got.Submit); d != "" {
		t.Errorf("submitted (-cycle's queue +delta):\n%s", d)
	}
	for _, r := range got.Submit {
		if r.Priority != 1000 {
			t.Errorf("%v submitted with priority %d, want the class's 1000", r.Gang, r.Priority)
		}
	}
	if d := cmp.Diff([]engine.Request(nil), got.Upcoming, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("upcoming (-want +got):\n%s", d)
	}
}
