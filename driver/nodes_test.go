package driver

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

func TestNodes(t *testing.T) {
	taint := corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}
	n1 := wrappers.MakeNode("n1", "4")
	n1.Labels = map[string]string{"zone": "a"}
	n1.Spec.Taints = []corev1.Taint{taint}
	n1.Spec.Unschedulable = true
	n1.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("8")
	gone := wrappers.MakeNode("gone", "4")
	gone.DeletionTimestamp = wrappers.Time(now)
	gone.Finalizers = []string{"x"}
	want := []engine.Node{{
		Name: "n1", Labels: map[string]string{"zone": "a"}, Taints: []corev1.Taint{taint}, Unschedulable: true,
		Allocatable: engine.ResourceList{"cpu": 4000, "pods": 110000, "nvidia.com/gpu": 8000},
	}}
	if d := cmp.Diff(want, Nodes([]corev1.Node{n1, gone}, nil, nil)); d != "" {
		t.Errorf("nodes (-want +got):\n%s", d)
	}
}
