package wrappers

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodOpt edits a pod made by MakePod.
type PodOpt func(*corev1.Pod)

// MakePod is a pod bound to node (empty: unbound) in the given phase,
// requesting cpu (empty: nothing).
func MakePod(ns, name, node string, phase corev1.PodPhase, cpu string, opts ...PodOpt) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c"}}},
		Status:     corev1.PodStatus{Phase: phase},
	}
	if cpu != "" {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	for _, o := range opts {
		o(&p)
	}
	return p
}

// MakeNode is a node with cpu allocatable and room for 110 pods.
func MakeNode(name, cpu string) corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse("110"),
		}},
	}
}

// GPUNode is a node with gpus nvidia.com/gpu, 64 CPUs and room for 110 pods.
func GPUNode(name string, gpus int64) corev1.Node {
	n := MakeNode(name, "64")
	n.Status.Allocatable = NodeResources("64", gpus)
	return n
}

// NodeResources is the allocatable of a node with cpu CPUs, gpus
// nvidia.com/gpu and room for 110 pods (a simulator's node pool, a GPUNode).
func NodeResources(cpu string, gpus int64) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse("110"),
		"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI),
	}
}

// Edit returns a copy of p with opts applied, e.g. a pod that
// driver.BuildWorkerPod made, bound and ended:
//
//	wrappers.Edit(pod, wrappers.Bound("n1", corev1.PodSucceeded), wrappers.Terminated(`{"loss": 0.2}`))
func Edit(p *corev1.Pod, opts ...PodOpt) corev1.Pod {
	out := *p.DeepCopy()
	for _, o := range opts {
		o(&out)
	}
	return out
}

// Bound puts a pod on node (empty: unbound) in the given phase.
func Bound(node string, phase corev1.PodPhase) PodOpt {
	return func(p *corev1.Pod) { p.Spec.NodeName, p.Status.Phase = node, phase }
}

// Terminated adds one terminated container status per message, named c0,
// c1, …, each with that termination message.
func Terminated(msgs ...string) PodOpt {
	return func(p *corev1.Pod) {
		for i, m := range msgs {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
				Name:  "c" + strconv.Itoa(i),
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: m}},
			})
		}
	}
}
