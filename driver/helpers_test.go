package driver

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
	"github.com/phasegang/phasegang/phases"
)

// Driver-specific test helpers; the API objects come from
// internal/wrappers.

// now is the tests' clock: an hour after wrappers.MakePT's pipelines were
// created.
var now = wrappers.T0.Add(time.Hour)

// compile compiles a fixture's spec as the controller does (defaults
// first), failing the test on any error.
func compile(t *testing.T, pt *v1alpha1.PhasedTraining) *phases.Pipeline {
	t.Helper()
	pl, errs := Compile(pt)
	if len(errs) > 0 {
		t.Fatalf("fixture does not compile: %v", errs)
	}
	return pl
}

// workerPodOf is the pod BuildWorkerPod makes for worker idx of the phase
// attempt ps, bound to node and in the given pod phase; each msg is the
// termination message of one more container.
func workerPodOf(pt *v1alpha1.PhasedTraining, ps v1alpha1.PhaseStatus, idx int32, node string, phase corev1.PodPhase, msgs ...string) corev1.Pod {
	p := BuildWorkerPod(pt, PhaseSpec(pt, ps.Name), &ps, idx, node, int32(max(len(ps.Assignments), 1)))
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
