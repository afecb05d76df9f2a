package driver

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

func TestExpiredPods(t *testing.T) {
	ended := now.Add(-time.Minute)
	finished := func(state v1alpha1.PipelineState, cond v1alpha1.ConditionType, ttl *int32) *v1alpha1.PhasedTraining {
		pt := wrappers.MakePT("job").Phase("train", 2).State(state).Obj()
		pt.Spec.PodTTLSecondsAfterFinished = ttl
		meta.SetStatusCondition(&pt.Status.Conditions, metav1.Condition{Type: string(cond), Status: metav1.ConditionTrue,
			Reason: "x", LastTransitionTime: metav1.NewTime(ended)})
		return pt
	}
	pods := func() []corev1.Pod {
		deleting := metav1.NewTime(now)
		return []corev1.Pod{
			{ObjectMeta: metav1.ObjectMeta{Name: "job-train-0"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "job-train-1"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "job-train-2", DeletionTimestamp: &deleting}},
		}
	}
	for name, tc := range map[string]struct {
		pt      *v1alpha1.PhasedTraining
		pods    []corev1.Pod
		deleted int
		wake    time.Time
	}{
		"no TTL: kept":                      {finished(v1alpha1.PipelineSucceeded, v1alpha1.ConditionSucceeded, nil), pods(), 0, time.Time{}},
		"running: kept":                     {finished(v1alpha1.PipelineRunning, v1alpha1.ConditionRunning, new(int32(0))), pods(), 0, time.Time{}},
		"succeeded, TTL not run out: wake":  {finished(v1alpha1.PipelineSucceeded, v1alpha1.ConditionSucceeded, new(int32(300))), pods(), 0, ended.Add(300 * time.Second)},
		"succeeded, TTL run out":            {finished(v1alpha1.PipelineSucceeded, v1alpha1.ConditionSucceeded, new(int32(60))), pods(), 2, time.Time{}},
		"failed, TTL 0":                     {finished(v1alpha1.PipelineFailed, v1alpha1.ConditionFailed, new(int32(0))), pods(), 2, time.Time{}},
		"no pods left: nothing to wait for": {finished(v1alpha1.PipelineSucceeded, v1alpha1.ConditionSucceeded, new(int32(300))), pods()[2:], 0, time.Time{}},
	} {
		dels, wake := ExpiredPods(tc.pt, tc.pods, now)
		if len(dels) != tc.deleted || !wake.Equal(tc.wake) {
			t.Errorf("%s: %d deletions, wake %v; want %d, %v", name, len(dels), wake, tc.deleted, tc.wake)
		}
		for _, d := range dels {
			if d.Pod.DeletionTimestamp != nil || d.Now {
				t.Errorf("%s: deletes %s (already deleting, or without grace)", name, d.Pod.Name)
			}
		}
	}
}
