package engine

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// WorkerFootprint is the effective request of one worker pod as
// kube-scheduler computes it: the sum of its containers (restartable init
// containers, i.e. sidecars, included), at least the largest init
// container, plus pod overhead; plus one "pods" slot. The user writes the
// worker; the engine accounts for the whole pod. A container that sets a
// limit without a request requests its limit, as the API server defaults
// it when the pod is created (a GPU given only as a limit is a GPU).
func WorkerFootprint(spec *corev1.PodSpec) ResourceList {
	if plainContainers(spec) {
		return sumContainers(spec.Containers)
	}
	return podFootprint(spec)
}

// podFootprint is WorkerFootprint by kube-scheduler's own accounting
// (k8s.io/component-helpers), for any pod.
func podFootprint(spec *corev1.PodSpec) ResourceList {
	reqs := resourcehelper.PodRequests(&corev1.Pod{Spec: *defaultRequests(spec)}, resourcehelper.PodResourcesOptions{})
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

// plainContainers reports whether the pod's request is just the sum of its
// containers' (no init containers, overhead or pod-level resources): the
// common worker, for which PodRequests' general walk costs more than the
// rest of computing a request (the simulator computes one per status
// change).
func plainContainers(spec *corev1.PodSpec) bool {
	return len(spec.InitContainers) == 0 && len(spec.Overhead) == 0 && spec.Resources == nil
}

// sumContainers is WorkerFootprint for plainContainers: each container's
// requests, a limit standing in for a missing request.
func sumContainers(cs []corev1.Container) ResourceList {
	out := ResourceList{ResourceName(corev1.ResourcePods): Milli(1)}
	for i := range cs {
		r := &cs[i].Resources
		for name, q := range r.Requests {
			out[ResourceName(name)] += q.MilliValue()
		}
		for name, q := range r.Limits {
			if _, ok := r.Requests[name]; !ok {
				out[ResourceName(name)] += q.MilliValue()
			}
		}
	}
	for name, v := range out {
		if v == 0 {
			delete(out, name)
		}
	}
	return out
}

// defaultRequests returns spec with every container's missing request set
// to its limit (the API server's pod defaulting). It copies the spec only
// when something is missing.
func defaultRequests(spec *corev1.PodSpec) *corev1.PodSpec {
	if !missingRequests(spec.InitContainers) && !missingRequests(spec.Containers) {
		return spec
	}
	cp := spec.DeepCopy()
	for _, cs := range [][]corev1.Container{cp.InitContainers, cp.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			for name, lim := range r.Limits {
				if _, ok := r.Requests[name]; !ok {
					if r.Requests == nil {
						r.Requests = corev1.ResourceList{}
					}
					r.Requests[name] = lim
				}
			}
		}
	}
	return cp
}

func missingRequests(cs []corev1.Container) bool {
	for i := range cs {
		for name := range cs[i].Resources.Limits {
			if _, ok := cs[i].Resources.Requests[name]; !ok {
				return true
			}
		}
	}
	return false
}
