package driver

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/phasegang/phasegang/engine"
)

// Pod specs to engine input
//
// Every reading of a pod spec the engine needs is here: a worker's
// footprint (WorkerFootprint), its node constraints (ConstraintsOf), the
// host ports it binds (HostPortsOf), what quotas read of it
// (QuotaFactsOf), and a node's allocatable (NodeResources). The engine
// takes the numbers and structs these return; it parses no pod spec.

// WorkerFootprint is the effective request of one worker pod as
// kube-scheduler computes it: the sum of its containers (restartable init
// containers, i.e. sidecars, included), at least the largest init
// container, plus pod overhead; plus one "pods" slot. The user writes the
// worker; the engine accounts for the whole pod. A container that sets a
// limit without a request requests its limit, as the API server defaults
// it when the pod is created (a GPU given only as a limit is a GPU).
func WorkerFootprint(spec *corev1.PodSpec) engine.ResourceList {
	if plainContainers(spec) {
		return sumContainers(spec.Containers)
	}
	return podFootprint(spec)
}

// podFootprint is WorkerFootprint by kube-scheduler's own accounting
// (k8s.io/component-helpers), for any pod.
func podFootprint(spec *corev1.PodSpec) engine.ResourceList {
	reqs := resourcehelper.PodRequests(&corev1.Pod{Spec: *defaultRequests(spec)}, resourcehelper.PodResourcesOptions{})
	out := make(engine.ResourceList, len(reqs)+1)
	for name, q := range reqs {
		if v := q.MilliValue(); v != 0 {
			out[engine.ResourceName(name)] = v
		}
	}
	out[engine.ResourceName(corev1.ResourcePods)] = engine.Milli(1)
	return out
}

// ConstraintsOf extracts the scheduling constraints of a worker pod spec.
func ConstraintsOf(spec *corev1.PodSpec) engine.Constraints {
	return engine.Constraints{NodeSelector: spec.NodeSelector, Affinity: spec.Affinity, Tolerations: spec.Tolerations}
}

// NodeResources converts a Kubernetes resource list to milli-units.
func NodeResources(rl corev1.ResourceList) engine.ResourceList {
	out := make(engine.ResourceList, len(rl))
	for name, q := range rl {
		out[engine.ResourceName(name)] = q.MilliValue()
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
func sumContainers(cs []corev1.Container) engine.ResourceList {
	out := engine.ResourceList{engine.ResourceName(corev1.ResourcePods): engine.Milli(1)}
	for i := range cs {
		r := &cs[i].Resources
		for name, q := range r.Requests {
			out[engine.ResourceName(name)] += q.MilliValue()
		}
		for name, q := range r.Limits {
			if _, ok := r.Requests[name]; !ok {
				out[engine.ResourceName(name)] += q.MilliValue()
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

// HostPortsOf lists the host ports a pod spec binds: those of its
// containers and init containers (sidecars hold theirs for the pod's
// life; counting a plain init container's too is stricter than
// kube-scheduler, never looser).
func HostPortsOf(spec *corev1.PodSpec) []engine.HostPort {
	var out []engine.HostPort
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			for _, p := range cs[i].Ports {
				if p.HostPort > 0 {
					out = append(out, engine.HostPort{Protocol: string(p.Protocol), Port: p.HostPort, HostIP: p.HostIP}.Normalized())
				}
			}
		}
	}
	return out
}

// QuotaFactsOf reads the QuotaFacts of a worker pod spec.
func QuotaFactsOf(spec *corev1.PodSpec) engine.QuotaFacts {
	f := engine.QuotaFacts{PriorityClassName: spec.PriorityClassName}
	f.Limits = podLimits(spec)
	f.Terminating = spec.ActiveDeadlineSeconds != nil && *spec.ActiveDeadlineSeconds >= 0
	f.BestEffort = bestEffort(spec)
	f.CrossNamespaceAffinity = crossNamespaceAffinity(spec.Affinity)
	return f
}

// podLimits is the pod's limits as the API server's quota admission sums
// them, nil for none. A worker that is just containers (plainContainers)
// sums them directly: the driver asks for every request it builds.
func podLimits(spec *corev1.PodSpec) engine.ResourceList {
	if plainContainers(spec) {
		return sumLimits(spec.Containers)
	}
	return podLimitsGeneral(spec)
}

func sumLimits(cs []corev1.Container) engine.ResourceList {
	var out engine.ResourceList
	for i := range cs {
		for name, q := range cs[i].Resources.Limits {
			if v := q.MilliValue(); v != 0 {
				if out == nil {
					out = engine.ResourceList{}
				}
				out[engine.ResourceName(name)] += v
			}
		}
	}
	return out
}

// podLimitsGeneral is podLimits by k8s.io/component-helpers, for any pod.
func podLimitsGeneral(spec *corev1.PodSpec) engine.ResourceList {
	var out engine.ResourceList
	lim := resourcehelper.PodLimits(&corev1.Pod{Spec: *spec}, resourcehelper.PodResourcesOptions{})
	if len(lim) > 0 {
		out = make(engine.ResourceList, len(lim))
		for name, q := range lim {
			if v := q.MilliValue(); v != 0 {
				out[engine.ResourceName(name)] = v
			}
		}
	}
	return out
}

func bestEffort(spec *corev1.PodSpec) bool {
	has := func(rr corev1.ResourceRequirements) bool {
		for _, rl := range []corev1.ResourceList{rr.Requests, rr.Limits} {
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if q, ok := rl[name]; ok && !q.IsZero() {
					return true
				}
			}
		}
		return false
	}
	if spec.Resources != nil && has(*spec.Resources) {
		return false
	}
	for _, cs := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range cs {
			if has(cs[i].Resources) {
				return false
			}
		}
	}
	return true
}

func crossNamespaceAffinity(a *corev1.Affinity) bool {
	if a == nil {
		return false
	}
	cross := func(t *corev1.PodAffinityTerm) bool { return len(t.Namespaces) != 0 || t.NamespaceSelector != nil }
	check := func(req []corev1.PodAffinityTerm, pref []corev1.WeightedPodAffinityTerm) bool {
		for i := range req {
			if cross(&req[i]) {
				return true
			}
		}
		for i := range pref {
			if cross(&pref[i].PodAffinityTerm) {
				return true
			}
		}
		return false
	}
	if p := a.PodAffinity; p != nil && check(p.RequiredDuringSchedulingIgnoredDuringExecution, p.PreferredDuringSchedulingIgnoredDuringExecution) {
		return true
	}
	if p := a.PodAntiAffinity; p != nil && check(p.RequiredDuringSchedulingIgnoredDuringExecution, p.PreferredDuringSchedulingIgnoredDuringExecution) {
		return true
	}
	return false
}
