package driver

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// PodsExpire is when a finished pipeline's worker pods are to be deleted:
// spec.podTTLSecondsAfterFinished after it finished (the Succeeded or
// Failed condition's transition). ok is false when they are kept: no TTL,
// or the pipeline has not finished.
func PodsExpire(pt *v1alpha1.PhasedTraining) (at time.Time, ok bool) {
	ttl := pt.Spec.PodTTLSecondsAfterFinished
	if ttl == nil {
		return time.Time{}, false
	}
	var end v1alpha1.ConditionType
	switch pt.Status.State {
	case v1alpha1.PipelineSucceeded:
		end = v1alpha1.ConditionSucceeded
	case v1alpha1.PipelineFailed:
		end = v1alpha1.ConditionFailed
	default:
		return time.Time{}, false
	}
	c := meta.FindStatusCondition(pt.Status.Conditions, string(end))
	if c == nil || c.Status != "True" {
		return time.Time{}, false
	}
	return c.LastTransitionTime.Add(time.Duration(*ttl) * time.Second), true
}

// ExpiredPods returns the deletions of pt's pods due at now (none of a
// pod already being deleted) and, when the TTL has not run out yet, when
// it will (zero: nothing to wait for).
func ExpiredPods(pt *v1alpha1.PhasedTraining, pods []corev1.Pod, now time.Time) (dels []PodDeletion, wake time.Time) {
	at, ok := PodsExpire(pt)
	if !ok {
		return nil, time.Time{}
	}
	for i := range pods {
		if pods[i].DeletionTimestamp == nil {
			dels = append(dels, PodDeletion{Pod: &pods[i]})
		}
	}
	if len(dels) > 0 && now.Before(at) {
		return nil, at
	}
	return dels, time.Time{}
}
