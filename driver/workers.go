package driver

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/phases"
)

// Worker is one reserved worker whose pod must exist.
type Worker struct {
	Status *v1alpha1.PhaseStatus
	Phase  *v1alpha1.Phase
	Index  int32
	Node   string
	// WorldSize is the gang's size now.
	WorldSize int32
	// Pod is its pod's name.
	Pod string
}

// PodDeletion is a pod that must go.
type PodDeletion struct {
	Pod *corev1.Pod
	// Now asks for deletion without grace: the pod's node is gone, so no
	// kubelet will ever confirm its end, and the fresh gang reuses its name.
	Now bool
}

// WorkerSync is what makes a pipeline's pods match its stored status.
type WorkerSync struct {
	// Create lists the reserved workers without a pod, by pod name.
	Create []Worker
	// Delete lists pods no grant covers: the workers of a stopped phase,
	// surplus given back, a requeued gang's old pods.
	Delete []PodDeletion
	// Service says some phase runs: the pipeline's Service must exist
	// (its workers resolve their peers once they run).
	Service bool
	// Peers are the live pods of wanted workers whose gangs have peers,
	// by pod name: what PublishPeers chooses the EndpointSlice from.
	Peers []Peer
}

// SyncWorkers compares a pipeline's stored status with its pods and says
// which pods to create and which to delete. Finished pods of ended phases
// are kept for their logs. nodeExists answers whether a node is still
// there (asked at most once per node).
func SyncWorkers(pt *v1alpha1.PhasedTraining, pods []corev1.Pod, nodeExists func(string) bool) WorkerSync {
	var sync WorkerSync
	wanted, latest := wantedWorkers(pt)
	sync.Service = len(wanted) > 0
	sync.Peers = peerPods(pods, wanted)
	gone := memoGone(nodeExists)
	have := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		if w, ok := wanted[p.Name]; ok && onNode(p, w.Node) {
			have[p.Name] = true
			continue
		}
		if d, ok := deletion(p, latest, gone); ok {
			sync.Delete = append(sync.Delete, d)
		}
	}
	for _, name := range sortedKeys(wanted) {
		if !have[name] {
			sync.Create = append(sync.Create, wanted[name])
		}
	}
	return sync
}

// onNode reports whether a worker's pod is where its grant puts it: bound
// there, or pinned there and not bound yet. A pod pinned to another node
// (its worker was moved) is replaced.
func onNode(p *corev1.Pod, node string) bool {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName == node
	}
	pin := PinnedNode(p)
	return pin == "" || pin == node
}

// wantedWorkers lists the pods the running phase attempts' grants call
// for, by pod name, and the latest status of every attempt.
func wantedWorkers(pt *v1alpha1.PhasedTraining) (map[string]Worker, map[phases.Instance]*v1alpha1.PhaseStatus) {
	wanted := map[string]Worker{}
	latest := map[phases.Instance]*v1alpha1.PhaseStatus{}
	for i := range pt.Status.Phases {
		ps := &pt.Status.Phases[i]
		latest[phases.Instance{Name: ps.Name, Iteration: ps.Iteration, Attempt: ps.Attempt}] = ps
		if !ps.State.Reserved() || len(ps.Assignments) == 0 {
			continue
		}
		phase := PhaseSpec(pt, ps.Name)
		if phase == nil {
			continue
		}
		for idx, node := range ps.Assignments {
			name := PodName(pt, ps.Name, ps.Iteration, ps.Attempt, int32(idx))
			wanted[name] = Worker{Status: ps, Phase: phase, Index: int32(idx), Node: node, WorldSize: int32(len(ps.Assignments)), Pod: name}
		}
	}
	return wanted, latest
}

// deletion decides about a pod no grant covers.
func deletion(p *corev1.Pod, latest map[phases.Instance]*v1alpha1.PhaseStatus, gone func(string) bool) (PodDeletion, bool) {
	nodeGone := gone(p.Spec.NodeName)
	if p.DeletionTimestamp != nil && !nodeGone {
		return PodDeletion{}, false // going already
	}
	in, _, _ := PodInstance(p)
	terminal := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	if ps := latest[in]; terminal && ps != nil && ps.State.Ended() {
		return PodDeletion{}, false // a finished worker of an ended phase: kept for its logs
	}
	return PodDeletion{Pod: p, Now: nodeGone}, true
}

// memoGone asks nodeExists once per node name; "" (unbound) is never gone.
func memoGone(nodeExists func(string) bool) func(string) bool {
	seen := map[string]bool{}
	return func(node string) bool {
		if node == "" || nodeExists == nil {
			return false
		}
		g, ok := seen[node]
		if !ok {
			g = !nodeExists(node)
			seen[node] = g
		}
		return g
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
