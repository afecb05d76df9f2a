package wrappers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// T0 is the creation time MakePT gives a pipeline, and a convenient
// origin for tests' clocks.
var T0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// Time returns a *metav1.Time, as status fields want it.
func Time(t time.Time) *metav1.Time { x := metav1.NewTime(t); return &x }

// PT builds a PhasedTraining.
type PT struct{ pt *v1alpha1.PhasedTraining }

// MakePT starts a pipeline in namespace "ns", created at T0, generation 1
// and observed (its status is current).
func MakePT(name string) *PT {
	return &PT{pt: &v1alpha1.PhasedTraining{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
			Generation: 1, CreationTimestamp: metav1.NewTime(T0),
		},
		Status: v1alpha1.PhasedTrainingStatus{ObservedGeneration: 1},
	}}
}

// NewPT starts a pipeline as a user applies it: namespace and name, nothing
// else (the API server sets uid, generation and creation time; the
// controller the status). The end-to-end tests create these.
func NewPT(ns, name string) *PT {
	return &PT{pt: &v1alpha1.PhasedTraining{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
}

// FromSpec wraps an existing object (copied).
func FromSpec(pt *v1alpha1.PhasedTraining) *PT { return &PT{pt: pt.DeepCopy()} }

func (b *PT) last() *v1alpha1.Phase { return &b.pt.Spec.Phases[len(b.pt.Spec.Phases)-1] }

func (b *PT) lastContainer() *corev1.Container {
	cs := b.last().Template.Spec.Containers
	return &cs[len(cs)-1]
}

// Phase adds a phase with a gang of min workers and the template
// MakeTemplate("trainer:1") builds: one container that requests one CPU.
func (b *PT) Phase(name string, min int32) *PT {
	b.pt.Spec.Phases = append(b.pt.Spec.Phases, v1alpha1.Phase{
		Name:     name,
		Gang:     v1alpha1.Gang{Min: min},
		Template: MakeTemplate("trainer:1").Obj(),
	})
	return b
}

// PodTemplate replaces the last phase's pod template.
func (b *PT) PodTemplate(t corev1.PodTemplateSpec) *PT { b.last().Template = t; return b }

// With edits the last phase, for what no other method sets.
func (b *PT) With(edit func(*v1alpha1.Phase)) *PT { edit(b.last()); return b }

// Desired sets the last phase's desired gang size.
func (b *PT) Desired(n int32) *PT { b.last().Gang.Desired = &n; return b }

// GPUs makes the last phase's worker request and limit n nvidia.com/gpu.
func (b *PT) GPUs(n int64) *PT {
	return b.Resource("nvidia.com/gpu", *resource.NewQuantity(n, resource.DecimalSI))
}

// Resource sets a request (and, for extended resources, the equal limit
// the API server demands) on the last phase's worker container.
func (b *PT) Resource(name corev1.ResourceName, q resource.Quantity) *PT {
	setResource(b.lastContainer(), name, q)
	return b
}

func setResource(c *corev1.Container, name corev1.ResourceName, q resource.Quantity) {
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	c.Resources.Requests[name] = q
	if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourceEphemeralStorage {
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Limits[name] = q
	}
}

// Resources replaces the requests and limits of the last phase's worker
// container (nil: none), for specs whose resources are the point of the
// test.
func (b *PT) Resources(requests, limits corev1.ResourceList) *PT {
	b.lastContainer().Resources = corev1.ResourceRequirements{Requests: requests, Limits: limits}
	return b
}

// PodSpec edits the last phase's worker pod spec.
func (b *PT) PodSpec(edit func(*corev1.PodSpec)) *PT { edit(&b.last().Template.Spec); return b }

// NoRequests drops the last phase's container requests.
func (b *PT) NoRequests() *PT { b.lastContainer().Resources = corev1.ResourceRequirements{}; return b }

// NoContainers drops the last phase's containers (an invalid spec).
func (b *PT) NoContainers() *PT { b.last().Template.Spec.Containers = nil; return b }

// Topology sets the last phase's topology.
func (b *PT) Topology(t v1alpha1.PhaseTopology) *PT { b.last().Topology = &t; return b }

// DependsOn adds dependencies to the last phase.
func (b *PT) DependsOn(names ...string) *PT {
	b.last().DependsOn = append(b.last().DependsOn, names...)
	return b
}

// When sets the last phase's condition.
func (b *PT) When(e string) *PT { b.last().When = e; return b }

// SuccessPolicy sets the last phase's success policy.
func (b *PT) SuccessPolicy(e string) *PT { b.last().SuccessPolicy = e; return b }

// Outputs declares outputs of the last phase.
func (b *PT) Outputs(k ...string) *PT {
	b.last().Outputs = append(b.last().Outputs, k...)
	return b
}

// Retries sets the last phase's maxRetries.
func (b *PT) Retries(n int32) *PT { b.last().MaxRetries = n; return b }

// Timeout sets the last phase's timeout.
func (b *PT) Timeout(d time.Duration) *PT { b.last().Timeout = &metav1.Duration{Duration: d}; return b }

// StartTimeout sets the last phase's startTimeout.
func (b *PT) StartTimeout(d time.Duration) *PT {
	b.last().StartTimeout = &metav1.Duration{Duration: d}
	return b
}

// StartBackoffLimit sets the last phase's startBackoffLimit.
func (b *PT) StartBackoffLimit(n int32) *PT { b.last().StartBackoffLimit = &n; return b }

// Template edits the last phase's pod template.
func (b *PT) Template(f func(*corev1.PodTemplateSpec)) *PT { f(&b.last().Template); return b }

// Iterate sets the loop: chain repeats until until holds or max iterations.
func (b *PT) Iterate(max int32, until string, chain ...string) *PT {
	b.pt.Spec.Iterate = &v1alpha1.Iterate{Phases: chain, Until: until, MaxIterations: max}
	return b
}

// Priority sets spec.priority.
func (b *PT) Priority(p int32) *PT { b.pt.Spec.Priority = &p; return b }

// PriorityClass sets spec.priorityClassName.
func (b *PT) PriorityClass(c string) *PT { b.pt.Spec.PriorityClassName = c; return b }

// Queue sets spec.queueName.
func (b *PT) Queue(name string) *PT { b.pt.Spec.QueueName = name; return b }

// Namespace moves the pipeline.
func (b *PT) Namespace(ns string) *PT { b.pt.Namespace = ns; return b }

// Annotation sets metadata.annotations[key].
func (b *PT) Annotation(key, value string) *PT {
	if b.pt.Annotations == nil {
		b.pt.Annotations = map[string]string{}
	}
	b.pt.Annotations[key] = value
	return b
}

// PodTTL sets spec.podTTLSecondsAfterFinished.
func (b *PT) PodTTL(seconds int32) *PT { b.pt.Spec.PodTTLSecondsAfterFinished = &seconds; return b }

// Created sets the creation time.
func (b *PT) Created(t time.Time) *PT { b.pt.CreationTimestamp = metav1.NewTime(t); return b }

// Generation sets the spec generation and the status' observed one.
func (b *PT) Generation(g, observed int64) *PT {
	b.pt.Generation, b.pt.Status.ObservedGeneration = g, observed
	return b
}

// Deleting marks the pipeline as being deleted at t.
func (b *PT) Deleting(t time.Time) *PT {
	b.pt.DeletionTimestamp = Time(t)
	b.pt.Finalizers = []string{"x"}
	return b
}

// Status appends phase statuses.
func (b *PT) Status(ps ...v1alpha1.PhaseStatus) *PT {
	b.pt.Status.Phases = append(b.pt.Status.Phases, ps...)
	return b
}

// State sets the pipeline's state.
func (b *PT) State(s v1alpha1.PipelineState) *PT { b.pt.Status.State = s; return b }

// Obj returns the built object.
func (b *PT) Obj() *v1alpha1.PhasedTraining { return b.pt }
