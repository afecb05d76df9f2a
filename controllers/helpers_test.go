package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
)

// Shared test fixtures: pure builders, no client.

var (
	t0  = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	now = t0.Add(time.Hour)
)

func mt(t time.Time) *metav1.Time { x := metav1.NewTime(t); return &x }

// ptBuilder: makePT("job").phase("train", 2).status(running("train", "n1")).obj()
type ptBuilder struct{ pt *v1alpha1.PhasedTraining }

func makePT(name string) *ptBuilder {
	return &ptBuilder{pt: &v1alpha1.PhasedTraining{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
			Generation: 1, CreationTimestamp: metav1.NewTime(t0),
		},
		Status: v1alpha1.PhasedTrainingStatus{ObservedGeneration: 1},
	}}
}

func (b *ptBuilder) last() *v1alpha1.Phase { return &b.pt.Spec.Phases[len(b.pt.Spec.Phases)-1] }

// phase adds a phase whose worker requests one CPU.
func (b *ptBuilder) phase(name string, min int32) *ptBuilder {
	b.pt.Spec.Phases = append(b.pt.Spec.Phases, v1alpha1.Phase{
		Name: name,
		Gang: v1alpha1.Gang{Min: min},
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "worker", Image: "trainer:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			}},
		}},
	})
	return b
}

func (b *ptBuilder) desired(n int32) *ptBuilder { b.last().Gang.Desired = &n; return b }
func (b *ptBuilder) outputs(k ...string) *ptBuilder {
	b.last().Outputs = append(b.last().Outputs, k...)
	return b
}
func (b *ptBuilder) policy(p string) *ptBuilder { b.last().SuccessPolicy = p; return b }
func (b *ptBuilder) tmpl(f func(*corev1.PodTemplateSpec)) *ptBuilder {
	f(&b.last().Template)
	return b
}
func (b *ptBuilder) status(ps ...v1alpha1.PhaseStatus) *ptBuilder {
	b.pt.Status.Phases = append(b.pt.Status.Phases, ps...)
	return b
}
func (b *ptBuilder) state(s v1alpha1.PipelineState) *ptBuilder { b.pt.Status.State = s; return b }
func (b *ptBuilder) ns(ns string) *ptBuilder                   { b.pt.Namespace = ns; return b }
func (b *ptBuilder) generation(g, observed int64) *ptBuilder {
	b.pt.Generation, b.pt.Status.ObservedGeneration = g, observed
	return b
}
func (b *ptBuilder) deleting() *ptBuilder {
	b.pt.DeletionTimestamp = mt(now)
	b.pt.Finalizers = []string{"x"}
	return b
}
func (b *ptBuilder) priority(p int32) *ptBuilder       { b.pt.Spec.Priority = &p; return b }
func (b *ptBuilder) priorityClass(c string) *ptBuilder { b.pt.Spec.PriorityClassName = c; return b }
func (b *ptBuilder) created(t time.Time) *ptBuilder {
	b.pt.CreationTimestamp = metav1.NewTime(t)
	return b
}
func (b *ptBuilder) obj() *v1alpha1.PhasedTraining { return b.pt }

// Phase statuses.

func running(name string, nodes ...string) v1alpha1.PhaseStatus {
	return v1alpha1.PhaseStatus{Name: name, State: v1alpha1.PhaseRunning, Assignments: nodes}
}

func queued(name string) v1alpha1.PhaseStatus {
	return v1alpha1.PhaseStatus{Name: name, State: v1alpha1.PhaseQueued}
}

func withAttempt(ps v1alpha1.PhaseStatus, iteration, attempt int32) v1alpha1.PhaseStatus {
	ps.Iteration, ps.Attempt = iteration, attempt
	return ps
}

// Pods.

type podOpt func(*corev1.Pod)

func makePod(ns, name, node string, phase corev1.PodPhase, cpu string, opts ...podOpt) corev1.Pod {
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

// workerPodOf is the pod buildWorkerPod makes for worker idx of the phase
// attempt ps, bound to node and in the given pod phase.
func workerPodOf(pt *v1alpha1.PhasedTraining, ps v1alpha1.PhaseStatus, idx int32, node string, phase corev1.PodPhase, msgs ...string) corev1.Pod {
	p := buildWorkerPod(pt, driver.SpecPhase(pt, ps.Name), &ps, idx, node, int32(max(len(ps.Assignments), 1)))
	p.Spec.NodeName = node
	p.Status.Phase = phase
	for i, m := range msgs {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name:  "c" + string(rune('0'+i)),
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: m}},
		})
	}
	return *p
}

func makeNode(name, cpu string) corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse("110"),
		}},
	}
}
