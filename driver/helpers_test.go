package driver

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// Driver-specific test helpers; the API objects come from
// internal/wrappers, and a fixture's pipeline from
// wrappers.Compiled(t, Compile, pt).

// now is the tests' clock: an hour after wrappers.MakePT's pipelines were
// created.
var now = wrappers.T0.Add(time.Hour)

// workerPodOf is the pod BuildWorkerPod makes for worker idx of the phase
// attempt ps, bound to node and in the given pod phase; each msg is the
// termination message of one more container.
func workerPodOf(pt *v1alpha1.PhasedTraining, ps v1alpha1.PhaseStatus, idx int32, node string, phase corev1.PodPhase, msgs ...string) corev1.Pod {
	p := BuildWorkerPod(pt, PhaseSpec(pt, ps.Name), &ps, idx, node, int32(max(len(ps.Assignments), 1)))
	return wrappers.Edit(p, wrappers.Bound(node, phase), wrappers.Terminated(msgs...))
}
