package engine

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// WorkerFootprint is the effective request of one worker pod as
// kube-scheduler computes it: the sum of its containers (restartable init
// containers, i.e. sidecars, included), at least the largest init
// container, plus pod overhead; plus one "pods" slot. The user writes the
// worker; the engine accounts for the whole pod.
func WorkerFootprint(spec *corev1.PodSpec) ResourceList {
	reqs := resourcehelper.PodRequests(&corev1.Pod{Spec: *spec}, resourcehelper.PodResourcesOptions{})
	out := make(ResourceList, len(reqs)+1)
	for name, q := range reqs {
		if v := q.MilliValue(); v != 0 {
			out[ResourceName(name)] = v
		}
	}
	out[ResourceName(corev1.ResourcePods)] = Milli(1)
	return out
}

// ConstraintsOf extracts the scheduling constraints of a worker pod spec.
func ConstraintsOf(spec *corev1.PodSpec) Constraints {
	return Constraints{NodeSelector: spec.NodeSelector, Affinity: spec.Affinity, Tolerations: spec.Tolerations}
}

// NodeResources converts a Kubernetes resource list to milli-units.
func NodeResources(rl corev1.ResourceList) ResourceList {
	out := make(ResourceList, len(rl))
	for name, q := range rl {
		out[ResourceName(name)] = q.MilliValue()
	}
	return out
}
