package driver

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
)

// MarkBinding tells the engine, for every grant of the demand's ledger,
// which workers' pods are not bound to their granted node yet
// (Grant.Unbound: not created, Pending, or an old pod bound elsewhere) and
// which of those kube-scheduler refused there (Grant.Refused). Only these
// can be moved when a pod phasegang does not manage takes their node's
// capacity: a bound worker holds its capacity for real. pods may hold
// any pods; only the grants' own are read.
func MarkBinding(d *Demand, pods []corev1.Pod) {
	type podID struct{ ns, name string }
	byName := make(map[podID]*corev1.Pod, len(pods))
	for i := range pods {
		byName[podID{pods[i].Namespace, pods[i].Name}] = &pods[i]
	}
	for i := range d.Ledger {
		g := &d.Ledger[i]
		ref, ok := d.Gangs[g.Gang]
		if !ok {
			continue
		}
		ps := ref.Status()
		g.Unbound, g.Refused = nil, nil
		for w, node := range g.Workers {
			p := byName[podID{ref.Pipeline.Namespace, PodName(ref.Pipeline, ps.Name, ps.Iteration, ps.Attempt, int32(w))}]
			if p != nil && p.DeletionTimestamp == nil && p.Spec.NodeName == node {
				continue // bound where granted
			}
			g.Unbound = append(g.Unbound, int32(w))
			if msg, refused := refusal(p, node); refused {
				g.Refused = append(g.Refused, engine.RefusedWorker{Index: int32(w), Message: msg, Moved: refusedMoves(ps, int32(w))})
			}
		}
	}
}

// refusal reads kube-scheduler's refusal of a worker's pod pinned to node:
// PodScheduled False with reason Unschedulable. A refusal about volumes (a
// missing claim, a volume bound to another zone) is not one: moving the
// worker would not cure it, and the Starting status already quotes it.
func refusal(p *corev1.Pod, node string) (string, bool) {
	if p == nil || p.DeletionTimestamp != nil || p.Spec.NodeName != "" || PinnedNode(p) != node {
		return "", false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			if volumeReason(c.Message) {
				return "", false
			}
			return strings.TrimSpace(c.Reason + ": " + c.Message), true
		}
	}
	return "", false
}

// volumeReason reports whether kube-scheduler's message is about volumes
// ("persistentvolumeclaim \"ckpt\" not found", "node(s) had volume node
// affinity conflict", "pod has unbound immediate PersistentVolumeClaims").
func volumeReason(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "volume")
}

// refusedMoves counts the moves of worker w for a refusal in the phase's
// history: the engine moves a refused worker once, then leaves it.
func refusedMoves(ps *v1alpha1.PhaseStatus, w int32) int32 {
	prefix := engine.RefusedMovePrefix(w)
	var n int32
	for _, e := range ps.History {
		if e.Type == v1alpha1.PhaseEventMoved && strings.HasPrefix(e.Message, prefix) {
			n++
		}
	}
	return n
}
