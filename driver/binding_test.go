package driver

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// MarkBinding reads from the pods which granted workers are not bound
// where granted, and which of those kube-scheduler refused for a reason
// moving may cure, with how often each was moved for a refusal already.
func TestMarkBinding(t *testing.T) {
	ps := wrappers.Running("train", "n1", "n1", "n1", "n1", "n1", "n2")
	ps.History = []v1alpha1.PhaseEvent{{Type: v1alpha1.PhaseEventMoved, Message: engine.RefusedMovePrefix(5) + "n1 (Unschedulable: no); moved worker 5 to n2"}}
	pt := wrappers.MakePT("job").Phase("train", 6).Status(ps).Obj()
	unschedulable := func(p *corev1.Pod, msg string) *corev1.Pod {
		p.Spec.NodeName = ""
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg}}
		return p
	}
	pod := func(idx int32, node string) *corev1.Pod {
		p := workerPodOf(pt, ps, idx, node, corev1.PodPending)
		return &p
	}
	terminating := pod(3, "n1")
	terminating.DeletionTimestamp = &metav1.Time{Time: now}
	elsewhere := unschedulable(pod(4, "n3"), "0/3 nodes are available: 1 Insufficient cpu.") // pinned to n3: an old pod
	pods := []corev1.Pod{
		*pod(0, "n1"), // bound where granted
		*unschedulable(pod(1, "n1"), "0/3 nodes are available: 1 Insufficient cpu."),
		*unschedulable(pod(2, "n1"), `0/3 nodes are available: persistentvolumeclaim "ckpt" not found.`),
		*terminating,
		*elsewhere,
		*unschedulable(pod(5, "n2"), "0/3 nodes are available: 1 node(s) didn't match pod anti-affinity rules."),
	}
	d := demandOf(pt)
	MarkBinding(d, pods)
	g := d.Ledger[0]
	if diff := cmp.Diff([]int32{1, 2, 3, 4, 5}, g.Unbound); diff != "" {
		t.Errorf("unbound (-want +got):\n%s", diff)
	}
	want := []engine.RefusedWorker{
		{Index: 1, Message: "Unschedulable: 0/3 nodes are available: 1 Insufficient cpu."},
		{Index: 5, Message: "Unschedulable: 0/3 nodes are available: 1 node(s) didn't match pod anti-affinity rules.", Moved: 1},
	}
	if diff := cmp.Diff(want, g.Refused); diff != "" {
		t.Errorf("refused (-want +got):\n%s", diff)
	}
}
