package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
)

// expirePods carries out spec.podTTLSecondsAfterFinished (the driver's
// ExpiredPods): a finished pipeline's pods are deleted once the TTL ran
// out; before, the reconcile is requeued for then.
func (r *Reconciler) expirePods(ctx context.Context, pt *v1alpha1.PhasedTraining, pods []corev1.Pod, now time.Time, res ctrl.Result) (ctrl.Result, error) {
	dels, wake := driver.ExpiredPods(pt, pods, now)
	if !wake.IsZero() {
		if d := wake.Sub(now) + time.Second; res.RequeueAfter == 0 || d < res.RequeueAfter {
			res.RequeueAfter = d
		}
		return res, nil
	}
	if errs := r.deletePods(ctx, dels); len(errs) > 0 {
		return res, fmt.Errorf("deleting expired pods: %w (and %d more)", errs[0], len(errs)-1)
	}
	if len(dels) > 0 {
		recordEvents(r.Recorder, pt, []driver.Event{{Type: corev1.EventTypeNormal, Reason: "PodsExpired", Action: "Delete",
			Message: fmt.Sprintf("deleted %d finished pods: spec.podTTLSecondsAfterFinished (%ds) ran out", len(dels), *pt.Spec.PodTTLSecondsAfterFinished)}})
	}
	return res, nil
}
