package phases

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultSchedulerName is kube-scheduler's name, the one scheduler that
// binds pinned workers where phasegang reserved them.
const DefaultSchedulerName = corev1.DefaultSchedulerName

// validatePinning rejects template fields that conflict with how phasegang
// places workers (class template-pinning): it reserves a node for every
// worker and pins the pod there with a required node affinity, so that
// kube-scheduler binds it where the engine reserved. A field that makes
// kube-scheduler refuse a reserved placement would leave the gang half
// bound, so what the engine does not model is refused here, with the
// field's path, rather than accepted and left Pending.
//
//   - spec.nodeName binds the pod without any scheduler, to a node the
//     grant may not name: the pod would never match its grant.
//   - spec.schedulerName other than kube-scheduler's: another scheduler
//     may ignore the pin or never bind the pod at all.
//   - required pod anti-affinity: the engine does not model it yet, and
//     would reserve placements kube-scheduler refuses (spread workers
//     with whole-node resource requests instead).
func validatePinning(sp *field.Path, spec *corev1.PodSpec) field.ErrorList {
	var errs field.ErrorList
	if spec.NodeName != "" {
		errs = append(errs, field.Forbidden(sp.Child("nodeName"),
			"phasegang pins workers to their granted nodes; a template must not bind its pods itself: remove nodeName and use nodeSelector or node affinity to choose nodes"))
	}
	if spec.SchedulerName != "" && spec.SchedulerName != DefaultSchedulerName {
		errs = append(errs, field.NotSupported(sp.Child("schedulerName"), spec.SchedulerName, []string{DefaultSchedulerName}))
	}
	if a := spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
		errs = append(errs, field.Forbidden(sp.Child("affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"),
			"the engine does not model required pod anti-affinity yet and would reserve placements kube-scheduler refuses: use preferredDuringSchedulingIgnoredDuringExecution, or whole-node resource requests to get one worker per node"))
	}
	return errs
}
