package driver

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
	"github.com/phasegang/phasegang/phases"
)

// phaseLines summarizes a status' phases for a diff: "name#it.at State: message".
func phaseLines(st *v1alpha1.PhasedTrainingStatus) []string {
	out := make([]string, len(st.Phases))
	for i := range st.Phases {
		ps := &st.Phases[i]
		out[i] = fmt.Sprintf("%s#%d.%d %s", ps.Name, ps.Iteration, ps.Attempt, ps.State)
		if ps.Message != "" {
			out[i] += ": " + ps.Message
		}
	}
	return out
}

// failedWorkers is the observation of a one-worker gang whose worker failed.
var failedWorkers = Workers{Observation: phases.Observation{Granted: 1, Failed: 1, ChiefFailed: true}, Started: wrappers.T0}

func TestAdvance(t *testing.T) {
	twoIndependent := func() *wrappers.PT {
		return wrappers.MakePT("job").Phase("a", 1).Phase("b", 1).Phase("c", 1).DependsOn("a")
	}
	tests := map[string]struct {
		pt  *v1alpha1.PhasedTraining
		obs Observations
		// want: the phases after the step, the pipeline's state and the
		// step's events.
		wantPhases []string
		wantState  v1alpha1.PipelineState
		wantEvents []Event
	}{
		"a new pipeline queues its first phases, quietly": {
			pt:         twoIndependent().Obj(),
			wantPhases: []string{"a#0.0 Queued", "b#0.0 Queued"},
			wantState:  v1alpha1.PipelineQueued,
		},
		"a phase ends, its dependent is queued": {
			pt: twoIndependent().State(v1alpha1.PipelineRunning).
				Status(wrappers.Running("a", "n1"), wrappers.Running("b", "n2")).Obj(),
			obs:        Observations{{Name: "a"}: {Observation: phases.Observation{Granted: 1, Succeeded: 1, ChiefSucceeded: true}, Started: wrappers.T0}},
			wantPhases: []string{"a#0.0 Succeeded: all 1 workers succeeded", "b#0.0 Running", "c#0.0 Queued"},
			wantState:  v1alpha1.PipelineRunning,
			wantEvents: nil, // a phase that succeeds is told by the status, not an Event
		},
		// A failed pipeline gives its capacity back at once: the sibling
		// still running is stopped in the same step, not by a later one.
		"a failed phase fails the pipeline and stops its running sibling": {
			pt: twoIndependent().State(v1alpha1.PipelineRunning).
				Status(wrappers.Running("a", "n1"), wrappers.Running("b", "n2")).Obj(),
			obs: Observations{{Name: "a"}: failedWorkers, {Name: "b"}: {Observation: phases.Observation{Granted: 1, Running: 1}, Started: wrappers.T0}},
			wantPhases: []string{
				"a#0.0 Failed: 1 of 1 workers failed",
				"b#0.0 Failed: stopped: phase a failed after 1 attempt(s): 1 of 1 workers failed",
			},
			wantState: v1alpha1.PipelineFailed,
			wantEvents: []Event{
				warning("PhaseFailed", "Run", "phase a failed: 1 of 1 workers failed"),
				normal("Failed", "Run", "pipeline failed"),
			},
		},
		"the last phase succeeds: the pipeline's end is told": {
			pt: wrappers.MakePT("job").Phase("a", 1).State(v1alpha1.PipelineRunning).
				Status(wrappers.Running("a", "n1")).Obj(),
			obs:        Observations{{Name: "a"}: {Observation: phases.Observation{Granted: 1, Succeeded: 1, ChiefSucceeded: true}, Started: wrappers.T0}},
			wantPhases: []string{"a#0.0 Succeeded: all 1 workers succeeded"},
			wantState:  v1alpha1.PipelineSucceeded,
			wantEvents: []Event{
				normal("Succeeded", "Run", "pipeline succeeded"),
			},
		},
		"a retry is queued, with the failed attempt in its history": {
			pt: wrappers.MakePT("job").Phase("a", 1).Retries(1).State(v1alpha1.PipelineRunning).
				Status(wrappers.Running("a", "n1")).Obj(),
			obs:        Observations{{Name: "a"}: failedWorkers},
			wantPhases: []string{"a#0.0 Failed: 1 of 1 workers failed", "a#0.1 Queued"},
			wantState:  v1alpha1.PipelineQueued,
			wantEvents: []Event{warning("PhaseFailed", "Run", "phase a failed: 1 of 1 workers failed")},
		},
		"a phase whose when is false is skipped": {
			pt: wrappers.MakePT("job").Phase("a", 1).Phase("b", 1).DependsOn("a").When(`phases.a.state == "Failed"`).
				State(v1alpha1.PipelineRunning).Status(wrappers.Running("a", "n1")).Obj(),
			obs:        Observations{{Name: "a"}: {Observation: phases.Observation{Granted: 1, Succeeded: 1, ChiefSucceeded: true}, Started: wrappers.T0}},
			wantPhases: []string{"a#0.0 Succeeded: all 1 workers succeeded", `b#0.0 Skipped: when was false: phases.a.state == "Failed"`},
			wantState:  v1alpha1.PipelineSucceeded,
			wantEvents: []Event{
				normal("Skipped", "Run", `phase b skipped: when was false: phases.a.state == "Failed"`),
				normal("Succeeded", "Run", "pipeline succeeded"),
			},
		},
		"a gang that does not start in time is requeued": {
			pt: wrappers.MakePT("job").Phase("a", 1).StartTimeout(time.Minute).State(v1alpha1.PipelineRunning).
				Status(func() v1alpha1.PhaseStatus {
					ps := wrappers.Running("a", "n1")
					ps.ReservedTime = wrappers.Time(now.Add(-2 * time.Minute))
					return ps
				}()).Obj(),
			obs: Observations{{Name: "a"}: {Observation: phases.Observation{Granted: 1}}},
			wantPhases: []string{"a#0.0 Queued: start failure 1 of at most 3: not every worker was running 1m0s after the gang was reserved; " +
				"the gang was released and queued again with a 10s backoff"},
			wantState: v1alpha1.PipelineQueued,
			wantEvents: []Event{warning("StartTimeout", "Run", "phase a: start failure 1 of at most 3: not every worker was running 1m0s after the gang was reserved; "+
				"the gang was released and queued again with a 10s backoff")},
		},
		"a gang that lost a worker is released whole and requeued": {
			pt: wrappers.MakePT("job").Phase("a", 2).State(v1alpha1.PipelineRunning).Status(wrappers.Running("a", "n1", "n1")).Obj(),
			obs: Observations{{Name: "a"}: {Observation: phases.Observation{Granted: 2, Running: 1, Lost: 1,
				LostReason: "worker 1: PreemptionByScheduler: preempted"}}},
			wantPhases: []string{"a#0.0 Queued: a worker was lost (worker 1: PreemptionByScheduler: preempted); the gang was released whole and queued again"},
			wantState:  v1alpha1.PipelineQueued,
			wantEvents: []Event{warning("WorkerLost", "Run", "phase a: a worker was lost (worker 1: PreemptionByScheduler: preempted); the gang was released whole and queued again")},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.pt.DeepCopy()
			adv := Advance(wrappers.Compiled(t, Compile, tc.pt), tc.pt, tc.obs, now)
			if d := cmp.Diff(tc.wantPhases, phaseLines(adv.Status)); d != "" {
				t.Errorf("phases (-want +got):\n%s", d)
			}
			if adv.Status.State != tc.wantState {
				t.Errorf("state = %s, want %s", adv.Status.State, tc.wantState)
			}
			if got := v1alpha1.StateFromConditions(adv.Status.Conditions); got != adv.Status.State {
				t.Errorf("state %s disagrees with the conditions' %s", adv.Status.State, got)
			}
			if d := cmp.Diff(tc.wantEvents, adv.Events); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
			if adv.Status.ObservedGeneration != tc.pt.Generation {
				t.Errorf("observedGeneration = %d, want %d", adv.Status.ObservedGeneration, tc.pt.Generation)
			}
			if d := cmp.Diff(before, tc.pt); d != "" {
				t.Errorf("Advance changed its input (-before +after):\n%s", d)
			}
		})
	}
}

// The step's history goes with the status: a retry says why the attempt
// before failed, a start timeout says what it waited for.
func TestAdvanceRecordsHistory(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("a", 1).Retries(1).Status(wrappers.Running("a", "n1")).Obj()
	adv := Advance(wrappers.Compiled(t, Compile, pt), pt, Observations{{Name: "a"}: failedWorkers}, now)
	retry := adv.Status.Phases[1].History
	want := []v1alpha1.PhaseEvent{{Time: metav1.NewTime(now), Type: v1alpha1.PhaseEventRetry, Message: "attempt 0 failed: 1 of 1 workers failed"}}
	if d := cmp.Diff(want, retry); d != "" {
		t.Errorf("retry history (-want +got):\n%s", d)
	}
}

// A spec fixed after it was Invalid compiles again: the condition is
// lifted and the pipeline runs.
func TestAdvanceLiftsInvalid(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("a", 1).Generation(2, 1).Obj()
	invalid, ev := Invalid(pt, nil)
	if ev.Type != corev1.EventTypeWarning || invalid.State != v1alpha1.PipelineInvalid {
		t.Fatalf("setup: Invalid = %s, event %+v", invalid.State, ev)
	}
	pt.Status = *invalid
	pt.Generation = 3
	adv := Advance(wrappers.Compiled(t, Compile, pt), pt, nil, now)
	if adv.Status.State != v1alpha1.PipelineQueued || adv.Status.ObservedGeneration != 3 {
		t.Errorf("after the fix: state %s, observedGeneration %d; want Queued, 3", adv.Status.State, adv.Status.ObservedGeneration)
	}
}

// A Starting pipeline whose new spec is Invalid is Invalid only.
func TestInvalidTurnsStartingOff(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("a", 1).Status(wrappers.Starting("a", "n1")).Obj()
	pt.Status = *Advance(wrappers.Compiled(t, Compile, pt), pt, nil, now).Status
	if pt.Status.State != v1alpha1.PipelineStarting {
		t.Fatalf("setup: state %s, want Starting", pt.Status.State)
	}
	invalid, _ := Invalid(pt, nil)
	if on := trueConds(invalid.Conditions); len(on) != 1 || on[0] != string(v1alpha1.ConditionInvalid) {
		t.Errorf("True conditions %v, want only Invalid", on)
	}
}

func TestStopRemaining(t *testing.T) {
	end0 := wrappers.Time(wrappers.T0)
	in := []v1alpha1.PhaseStatus{
		{Name: "a", State: v1alpha1.PhaseRunning, Assignments: []string{"n1"}, WaitingFor: "x"},
		{Name: "b", State: v1alpha1.PhaseQueued, WaitingFor: "needs 2"},
		{Name: "c", State: v1alpha1.PhasePending},
		{Name: "d", State: v1alpha1.PhaseSucceeded, Message: "ok", EndTime: end0},
		{Name: "e", State: v1alpha1.PhaseFailed, Message: "boom", EndTime: end0},
		{Name: "f", State: v1alpha1.PhaseSkipped, Message: "when false", EndTime: end0},
	}
	st := &v1alpha1.PhasedTrainingStatus{Phases: in}
	stopRemaining(st, now, "stopped: e failed")
	stopped := func(ps v1alpha1.PhaseStatus) v1alpha1.PhaseStatus {
		ps.State, ps.Message, ps.EndTime, ps.WaitingFor = v1alpha1.PhaseFailed, "stopped: e failed", wrappers.Time(now), ""
		return ps
	}
	want := []v1alpha1.PhaseStatus{stopped(in[0]), stopped(in[1]), stopped(in[2]), in[3], in[4], in[5]}
	if d := cmp.Diff(want, st.Phases); d != "" {
		t.Errorf("phases (-want +got):\n%s", d)
	}
	// A stopped Running phase leaves the ledger and the observations; a
	// stopped Pending one is no longer upcoming.
	b := wrappers.MakePT("job")
	for _, ps := range st.Phases {
		b.Phase(ps.Name, 1)
	}
	pt := b.Status(st.Phases...).Obj()
	var d Demand
	d.Add(pt, nil)
	if len(d.Ledger)+len(d.Queue)+len(d.Upcoming) != 0 {
		t.Errorf("stopped phases still scheduled: %+v", d)
	}
	if obs := Observe(wrappers.Compiled(t, Compile, pt), &pt.Status, nil, now); len(obs) != 0 {
		t.Errorf("stopped phases still observed: %+v", obs)
	}
}

func TestRecordHistory(t *testing.T) {
	st := &v1alpha1.PhasedTrainingStatus{Phases: []v1alpha1.PhaseStatus{
		{Name: "train", State: v1alpha1.PhaseFailed, Message: "worker 0 failed"},
		{Name: "train", Attempt: 1, State: v1alpha1.PhaseQueued},
		{Name: "test", State: v1alpha1.PhaseQueued},
	}}
	recordHistory(st, phases.Step{
		Queue:   []phases.Instance{{Name: "train", Attempt: 1}},
		Requeue: []phases.Requeue{{Instance: phases.Instance{Name: "test"}, Cause: v1alpha1.PhaseEventStartTimeout, Message: "not started within 5m"}},
	}, now)
	if h := st.Phases[1].History; len(h) != 1 || h[0].Type != v1alpha1.PhaseEventRetry || h[0].Message != "attempt 0 failed: worker 0 failed" || !h[0].Time.Time.Equal(now) {
		t.Errorf("retry history = %+v", h)
	}
	if h := st.Phases[2].History; len(h) != 1 || h[0].Type != v1alpha1.PhaseEventStartTimeout || h[0].Message != "not started within 5m" {
		t.Errorf("start timeout history = %+v", h)
	}
	if len(st.Phases[0].History) != 0 {
		t.Errorf("failed attempt got history %+v", st.Phases[0].History)
	}
}

// A released gang's wait starts again when it is requeued: the Reserved
// event's "after ... queued" and the wait metric count queueing, not the
// time the gang held its nodes. The start failure is counted.
func TestRequeueRestartsTheQueueWait(t *testing.T) {
	ps := wrappers.Running("a", "n1")
	ps.QueuedTime = wrappers.Time(now.Add(-time.Hour))
	ps.ReservedTime = wrappers.Time(now.Add(-2 * time.Minute))
	pt := wrappers.MakePT("job").Phase("a", 1).StartTimeout(time.Minute).State(v1alpha1.PipelineRunning).Status(ps).Obj()
	adv := Advance(wrappers.Compiled(t, Compile, pt), pt, Observations{{Name: "a"}: {Observation: phases.Observation{Granted: 1}}}, now)
	got := adv.Status.Phases[0]
	if got.QueuedTime == nil || !got.QueuedTime.Time.Equal(now) {
		t.Errorf("queuedTime = %v, want the requeue's time %v", got.QueuedTime, now)
	}
	if got.StartFailures != 1 || got.NotBefore == nil || !got.NotBefore.Time.Equal(now.Add(10*time.Second)) {
		t.Errorf("startFailures = %d, notBefore = %v; want 1 and a 10s backoff", got.StartFailures, got.NotBefore)
	}
}
