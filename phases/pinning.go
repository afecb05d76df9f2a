package phases

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
//   - required pod anti-affinity, unless it keeps the gang's own workers
//     one per node (SpreadsOwnWorkers), which the engine honours: any
//     other form (another topology key, other namespaces, a selector that
//     does not select the workers) would have the engine reserve
//     placements kube-scheduler refuses.
func validatePinning(sp *field.Path, podLabels map[string]string, spec *corev1.PodSpec) field.ErrorList {
	var errs field.ErrorList
	if spec.NodeName != "" {
		errs = append(errs, field.Forbidden(sp.Child("nodeName"),
			"phasegang pins workers to their granted nodes; a template must not bind its pods itself: remove nodeName and use nodeSelector or node affinity to choose nodes"))
	}
	if spec.SchedulerName != "" && spec.SchedulerName != DefaultSchedulerName {
		errs = append(errs, field.NotSupported(sp.Child("schedulerName"), spec.SchedulerName, []string{DefaultSchedulerName}))
	}
	if a := spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		tp := sp.Child("affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
		for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if why := ownSpreadTerm(&a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i], podLabels); why != "" {
				errs = append(errs, field.Forbidden(tp.Index(i),
					"phasegang honours required pod anti-affinity only to keep a gang's own workers one per node (topologyKey kubernetes.io/hostname, a labelSelector that selects the template's labels, no namespaces): "+why))
			}
		}
	}
	return errs
}

// SpreadsOwnWorkers reports whether a worker pod template (its spec and
// labels) has required pod anti-affinity, every term of which keeps the
// pods it selects, the gang's own workers among them, one per node: the
// engine then places the gang one worker per node. kube-scheduler applies
// such a term against any pod it selects; the gang's own workers are the
// ones the engine keeps apart, others are met when kube-scheduler refuses
// a worker (it is moved if another node fits).
func SpreadsOwnWorkers(spec *corev1.PodSpec, podLabels map[string]string) bool {
	a := spec.Affinity
	if a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		return false
	}
	for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if ownSpreadTerm(&a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i], podLabels) != "" {
			return false
		}
	}
	return true
}

// ownSpreadTerm says why an anti-affinity term is not "one of these
// workers per node", or "" if it is.
func ownSpreadTerm(t *corev1.PodAffinityTerm, podLabels map[string]string) string {
	switch {
	case t.TopologyKey != corev1.LabelHostname:
		return fmt.Sprintf("topologyKey %q is not %s", t.TopologyKey, corev1.LabelHostname)
	case len(t.Namespaces) > 0 || t.NamespaceSelector != nil:
		return "namespaces and namespaceSelector are not supported"
	case len(t.MatchLabelKeys) > 0 || len(t.MismatchLabelKeys) > 0:
		return "matchLabelKeys and mismatchLabelKeys are not supported"
	case t.LabelSelector == nil:
		return "labelSelector is required"
	}
	sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
	if err != nil {
		return "labelSelector: " + err.Error()
	}
	if !sel.Matches(labels.Set(podLabels)) {
		have := labels.Set(podLabels).String()
		if have == "" {
			have = "(none)"
		}
		return fmt.Sprintf("labelSelector %s does not select the template's labels %s", sel, have)
	}
	return ""
}
