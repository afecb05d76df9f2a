package controllers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// Controller-specific test helpers; the API objects come from
// internal/wrappers.

// now is the tests' clock: an hour after wrappers.MakePT's pipelines were
// created.
var now = wrappers.T0.Add(time.Hour)

// reconcileStatus is the status the reconciler would write for pt with
// these pods: the driver's step, as Reconcile takes it.
func reconcileStatus(t *testing.T, pt *v1alpha1.PhasedTraining, pods []corev1.Pod, now time.Time) *v1alpha1.PhasedTrainingStatus {
	t.Helper()
	pl := wrappers.Compiled(t, driver.Compile, pt)
	return driver.Advance(pl, pt, driver.Observe(pl, &pt.Status, pods, now), now).Status
}
