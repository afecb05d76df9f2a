package controllers

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// Worker counts alone wait up to progressBatch to be written; any change
// of state is written at once and ends the wait.
func TestHoldProgress(t *testing.T) {
	r := &Reconciler{}
	key := types.NamespacedName{Namespace: "ns", Name: "p"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stored := &v1alpha1.PhasedTrainingStatus{Phases: []v1alpha1.PhaseStatus{{Name: "train", State: v1alpha1.PhaseRunning,
		Workers: v1alpha1.WorkerCounts{Min: 8, Granted: 8}}}}
	counted := stored.DeepCopy()
	counted.Phases[0].Workers.Running = 6
	// What Reconcile passes: a change, and one in worker counts only.
	hold := func(next *v1alpha1.PhasedTrainingStatus, at time.Time) time.Duration {
		return r.holdProgress(key, !equality.Semantic.DeepEqual(stored, next) && progressOnly(stored, next), at)
	}

	if got := hold(stored, t0); got != 0 {
		t.Fatalf("nothing to write: held %v", got)
	}
	if got := hold(counted, t0); got != progressBatch {
		t.Fatalf("first counts-only change: held %v, want %v", got, progressBatch)
	}
	counted.Phases[0].Workers.Running = 7
	if got := hold(counted, t0.Add(time.Second)); got != progressBatch-time.Second {
		t.Fatalf("later counts-only change: held %v, want the rest of the first one's %v", got, progressBatch-time.Second)
	}
	if got := hold(counted, t0.Add(progressBatch)); got != 0 {
		t.Fatalf("after progressBatch: held %v, want a write", got)
	}

	// A gang's start time is progress too: it is read from the pods, so a
	// held one is found again.
	started := counted.DeepCopy()
	started.Phases[0].Workers.Running = 8
	started.Phases[0].StartTime = &metav1.Time{Time: t0}
	if got := hold(counted, t0.Add(3*time.Second)); got == 0 {
		t.Fatal("a new counts-only change was not held")
	}
	if got := hold(started, t0.Add(4*time.Second)); got != progressBatch-time.Second {
		t.Fatalf("a phase that started (startTime set): held %v, want the rest of the batch, %v", got, progressBatch-time.Second)
	}
	// Any change of state is written at once and ends the hold.
	ended := started.DeepCopy()
	ended.Phases[0].State = v1alpha1.PhaseSucceeded
	if got := hold(ended, t0.Add(4*time.Second)); got != 0 {
		t.Fatalf("a phase that ended: held %v, want a write at once", got)
	}
	if _, ok := r.heldSince[key]; ok {
		t.Fatal("a write did not end the hold")
	}
	// A start time already stored is not changed quietly.
	stored = started.DeepCopy()
	moved := started.DeepCopy()
	moved.Phases[0].StartTime = &metav1.Time{Time: t0.Add(time.Minute)}
	if got := hold(moved, t0.Add(5*time.Second)); got != 0 {
		t.Fatalf("a stored start time changed: held %v, want a write at once", got)
	}
}

// A starting gang's running count is progress, in its phase and in the
// Starting condition's message alike; the gang becoming Running is not.
func TestStartingCountIsProgress(t *testing.T) {
	starting := func(running int32, msg string) *v1alpha1.PhasedTrainingStatus {
		return &v1alpha1.PhasedTrainingStatus{
			State: v1alpha1.PipelineStarting,
			Phases: []v1alpha1.PhaseStatus{{Name: "train", State: v1alpha1.PhaseRunning,
				Workers: v1alpha1.WorkerCounts{Min: 2, Granted: 2, Running: running}}},
			Conditions: []metav1.Condition{{Type: string(v1alpha1.ConditionStarting), Status: metav1.ConditionTrue,
				Reason: v1alpha1.ReasonGangStarting, Message: msg}},
		}
	}
	none := starting(0, "starting: train: 0 of 2 workers running (it runs at 2)")
	one := starting(1, "starting: train: 1 of 2 workers running (it runs at 2)")
	if !progressOnly(none, one) {
		t.Error("one more worker running, in the counts and Starting's message, is not progress only")
	}
	running := one.DeepCopy()
	running.State = v1alpha1.PipelineRunning
	running.Conditions[0].Status, running.Conditions[0].Reason, running.Conditions[0].Message = metav1.ConditionFalse, v1alpha1.ReasonPhaseRunning, v1alpha1.ReasonPhaseRunning
	if progressOnly(one, running) {
		t.Error("the gang becoming Running was taken for progress")
	}
}

// The reconciler's pod creates refused by quota admission (a repeated
// create of an existing pod is no refusal) are tested against a real
// kube-apiserver: TestRefusedCreateOfAnExistingPodIsNoRefusal in
// test/e2e/inprocess_test.go.
