package wrappers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Template builds a phase's worker pod template:
//
//	wrappers.MakeTemplate("trainer:e2e").GPUs(1).NodeSelector("pool", "pool-a").Obj()
type Template struct{ t corev1.PodTemplateSpec }

// MakeTemplate starts a template of one container, "worker", running
// image and requesting one CPU.
func MakeTemplate(image string) *Template {
	return &Template{t: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "worker", Image: image,
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		}},
	}}}
}

func (b *Template) container() *corev1.Container {
	cs := b.t.Spec.Containers
	return &cs[len(cs)-1]
}

// GPUs makes the worker request and limit n nvidia.com/gpu.
func (b *Template) GPUs(n int64) *Template {
	setResource(b.container(), "nvidia.com/gpu", *resource.NewQuantity(n, resource.DecimalSI))
	return b
}

// Command sets the worker's command.
func (b *Template) Command(cmd ...string) *Template { b.container().Command = cmd; return b }

// NodeSelector adds key=value to the pod's node selector.
func (b *Template) NodeSelector(key, value string) *Template {
	if b.t.Spec.NodeSelector == nil {
		b.t.Spec.NodeSelector = map[string]string{}
	}
	b.t.Spec.NodeSelector[key] = value
	return b
}

// Tolerate adds a toleration of any taint with key.
func (b *Template) Tolerate(key string) *Template {
	b.t.Spec.Tolerations = append(b.t.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	return b
}

// Annotation sets the pod's annotation key.
func (b *Template) Annotation(key, value string) *Template {
	if b.t.Annotations == nil {
		b.t.Annotations = map[string]string{}
	}
	b.t.Annotations[key] = value
	return b
}

// Obj returns the template.
func (b *Template) Obj() corev1.PodTemplateSpec { return *b.t.DeepCopy() }
