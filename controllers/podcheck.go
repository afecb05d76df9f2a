package controllers

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
)

// dryRunNode is the node a checked pod is pinned to: any valid name does,
// a dry-run create never reaches the scheduler.
const dryRunNode = "phasegang-pod-check"

// checkedSpec is the outcome of the pod check of one spec generation.
type checkedSpec struct {
	generation int64
	errs       field.ErrorList
}

// checkPods asks the API server to validate one worker pod of every
// phase of pt (a server-side dry-run create: the pod API's validation,
// admission webhooks and policies, pod security admission) once per spec
// generation, before the pipeline's first status is stored, so no gang of
// a spec the API server rejects reaches the engine. It returns the
// rejections that will not go away, each at its phase's template; a
// transient failure (the API server unreachable, a quota exceeded for
// now) is returned as err, and the check is retried on the next
// reconcile.
func (r *Reconciler) checkPods(ctx context.Context, pt *v1alpha1.PhasedTraining) (field.ErrorList, error) {
	r.mu.Lock()
	c, ok := r.checked[pt.UID]
	r.mu.Unlock()
	if ok && c.generation == pt.Generation {
		return c.errs, nil
	}
	var errs field.ErrorList
	for i := range pt.Spec.Phases {
		phase := &pt.Spec.Phases[i]
		if err := r.dryRunPod(ctx, pt, phase); err != nil {
			if !PermanentRejection(err) {
				return nil, err
			}
			errs = append(errs, field.Invalid(field.NewPath("spec", "phases").Index(i).Child("template"),
				"(pod template)", "the API server rejects this phase's worker pod: "+err.Error()))
		}
	}
	r.mu.Lock()
	if r.checked == nil {
		r.checked = map[types.UID]checkedSpec{}
	}
	r.checked[pt.UID] = checkedSpec{generation: pt.Generation, errs: errs}
	r.mu.Unlock()
	return errs, nil
}

// dryRunPod creates worker 0 of phase's first attempt with dryRun=All.
func (r *Reconciler) dryRunPod(ctx context.Context, pt *v1alpha1.PhasedTraining, phase *v1alpha1.Phase) error {
	ps := &v1alpha1.PhaseStatus{Name: phase.Name}
	pod := driver.BuildWorkerPod(pt, phase, ps, 0, dryRunNode, driver.MaxWorkers(phase.Gang))
	// A generated name: a running attempt's pod may hold the real one.
	pod.GenerateName, pod.Name = pod.Name+"-check-", ""
	return r.Client.Create(ctx, pod, client.DryRunAll, client.FieldOwner(driver.FieldManager))
}

// PermanentRejection reports whether the API server's answer to a pod
// create rejects the pod itself (invalid, forbidden by admission or pod
// security, a quota that requires limits the template does not set:
// "failed quota: …: must specify limits.memory"), rather than saying "not
// now": an exceeded quota frees up, a timeout or an unavailable server
// passes.
func PermanentRejection(err error) bool {
	if isQuotaRejection(err) {
		return false
	}
	return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err)
}

func isQuotaRejection(err error) bool {
	if !apierrors.IsForbidden(err) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "exceeded quota")
}

// podCheck is the reconciler's hook: a status stored for this generation
// (ObservedGeneration) means the check passed before it was stored, so a
// restarted controller does not redo it.
func (r *Reconciler) podCheck(ctx context.Context, pt *v1alpha1.PhasedTraining) (field.ErrorList, error) {
	invalid := pt.Status.State == v1alpha1.PipelineInvalid
	if pt.Status.ObservedGeneration == pt.Generation && pt.Generation > 0 && !invalid {
		return nil, nil
	}
	return r.checkPods(ctx, pt)
}
