package driver

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// syncSummary is what a test asserts of a WorkerSync: the pods to create
// ("pod@node index/worldSize"), those to delete ("pod", "pod now" when
// without grace), and whether the Service is needed.
type syncSummary struct {
	Create  []string
	Delete  []string
	Service bool
}

func summarizeSync(t *testing.T, pt *v1alpha1.PhasedTraining, ws WorkerSync) syncSummary {
	t.Helper()
	var s syncSummary
	for _, w := range ws.Create {
		if w.Phase == nil || w.Phase.Name != w.Status.Name {
			t.Errorf("worker %s: phase %v for status %s", w.Pod, w.Phase, w.Status.Name)
		}
		if want := PodName(pt, w.Status.Name, w.Status.Iteration, w.Status.Attempt, w.Index); w.Pod != want {
			t.Errorf("worker %d of %s: pod %q, want %q", w.Index, w.Status.Name, w.Pod, want)
		}
		s.Create = append(s.Create, fmt.Sprintf("%s@%s %d/%d", w.Pod, w.Node, w.Index, w.WorldSize))
	}
	for _, d := range ws.Delete {
		if d.Now {
			s.Delete = append(s.Delete, d.Pod.Name+" now")
		} else {
			s.Delete = append(s.Delete, d.Pod.Name)
		}
	}
	s.Service = ws.Service
	return s
}

// nodes answers nodeExists from a set of live nodes and counts the
// questions.
type nodes struct {
	live  map[string]bool
	asked map[string]int
}

func liveNodes(names ...string) *nodes {
	n := &nodes{live: map[string]bool{}, asked: map[string]int{}}
	for _, name := range names {
		n.live[name] = true
	}
	return n
}

func (n *nodes) exists(name string) bool {
	n.asked[name]++
	return n.live[name]
}

func TestSyncWorkers(t *testing.T) {
	spec := func() *wrappers.PT {
		return wrappers.MakePT("job").Phase("train", 1).Desired(4).Phase("eval", 1)
	}
	r2 := wrappers.Running("train", "n1", "n2")
	tests := map[string]struct {
		status []v1alpha1.PhaseStatus
		pods   func(pt *v1alpha1.PhasedTraining) []corev1.Pod
		live   []string
		want   syncSummary
	}{
		"a reserved worker without a pod is created": {
			status: []v1alpha1.PhaseStatus{r2},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{workerPodOf(pt, r2, 0, "n1", corev1.PodRunning)}
			},
			live: []string{"n1", "n2"},
			want: syncSummary{Create: []string{"job-train-1@n2 1/2"}, Service: true},
		},
		"every worker of a new grant, in name order": {
			status: []v1alpha1.PhaseStatus{wrappers.Attempt(wrappers.Running("train", "n2", "n1", "n2"), 1, 2)},
			want: syncSummary{Create: []string{
				"job-train-i1-a2-0@n2 0/3", "job-train-i1-a2-1@n1 1/3", "job-train-i1-a2-2@n2 2/3",
			}, Service: true},
		},
		"a pod kube-scheduler has not bound yet is the worker's": {
			status: []v1alpha1.PhaseStatus{r2},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{workerPodOf(pt, r2, 0, "", corev1.PodPending), workerPodOf(pt, r2, 1, "n2", corev1.PodRunning)}
			},
			live: []string{"n1", "n2"},
			want: syncSummary{Service: true},
		},
		// A moved worker's Pending pod is still pinned to its old node:
		// it goes, and the pod pinned to the new node is created.
		"a moved worker's pod pinned to its old node is replaced": {
			status: []v1alpha1.PhaseStatus{wrappers.Running("train", "n1", "n3")},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				old := workerPodOf(pt, r2, 1, "n2", corev1.PodPending)
				old.Spec.NodeName = "" // pinned to n2, not bound
				return []corev1.Pod{workerPodOf(pt, r2, 0, "n1", corev1.PodRunning), old}
			},
			live: []string{"n1", "n2", "n3"},
			want: syncSummary{Create: []string{"job-train-1@n3 1/2"}, Delete: []string{"job-train-1"}, Service: true},
		},
		// A requeued gang reuses its pod names: the old gang's pod on
		// another node goes, and the new one is created once it is gone.
		"a requeued gang's pod on another node is deleted": {
			status: []v1alpha1.PhaseStatus{wrappers.Running("train", "n3")},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{workerPodOf(pt, r2, 0, "n1", corev1.PodRunning)}
			},
			live: []string{"n1", "n3"},
			want: syncSummary{Create: []string{"job-train-0@n3 0/1"}, Delete: []string{"job-train-0"}, Service: true},
		},
		// No kubelet will confirm the end of a pod whose node is gone: it
		// is deleted without grace, so the fresh gang can reuse its name.
		"a terminating pod whose node is gone is deleted now": {
			status: []v1alpha1.PhaseStatus{wrappers.Queued("train")},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{
					terminatingPod(workerPodOf(pt, r2, 0, "gone", corev1.PodRunning)),
					terminatingPod(workerPodOf(pt, r2, 1, "gone", corev1.PodRunning)),
				}
			},
			live: []string{"n1"},
			want: syncSummary{Delete: []string{"job-train-0 now", "job-train-1 now"}},
		},
		"a terminating pod on a live node is left to end": {
			status: []v1alpha1.PhaseStatus{wrappers.Queued("train")},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{terminatingPod(workerPodOf(pt, r2, 0, "n1", corev1.PodRunning))}
			},
			live: []string{"n1"},
		},
		"a running pod whose node is gone is deleted now": {
			status: []v1alpha1.PhaseStatus{wrappers.Queued("train")},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{workerPodOf(pt, r2, 0, "gone", corev1.PodRunning)}
			},
			want: syncSummary{Delete: []string{"job-train-0 now"}},
		},
		// Kept for their logs; the owner reference deletes them with the
		// pipeline.
		"a finished pod of an ended phase is kept": {
			status: []v1alpha1.PhaseStatus{
				{Name: "train", State: v1alpha1.PhaseSucceeded, Assignments: []string{"n1", "n2"}},
				wrappers.Running("eval", "n1"),
			},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{
					workerPodOf(pt, r2, 0, "n1", corev1.PodSucceeded),
					workerPodOf(pt, r2, 1, "n2", corev1.PodFailed),
					workerPodOf(pt, wrappers.Running("eval", "n1"), 0, "n1", corev1.PodRunning),
				}
			},
			live: []string{"n1", "n2"},
			want: syncSummary{Service: true},
		},
		"a finished pod of an older, failed attempt is kept": {
			status: []v1alpha1.PhaseStatus{
				{Name: "train", State: v1alpha1.PhaseFailed, Assignments: []string{"n1"}},
				wrappers.Attempt(wrappers.Running("train", "n2"), 0, 1),
			},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{
					workerPodOf(pt, wrappers.Running("train", "n1"), 0, "n1", corev1.PodFailed),
					workerPodOf(pt, wrappers.Attempt(wrappers.Running("train", "n2"), 0, 1), 0, "n2", corev1.PodRunning),
				}
			},
			live: []string{"n1", "n2"},
			want: syncSummary{Service: true},
		},
		// A stopped phase gives its capacity back: its workers still
		// running go.
		"a running pod of an ended phase is deleted": {
			status: []v1alpha1.PhaseStatus{{Name: "train", State: v1alpha1.PhaseFailed, Message: "stopped: eval failed", Assignments: []string{"n1", "n2"}}},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{workerPodOf(pt, r2, 0, "n1", corev1.PodRunning), workerPodOf(pt, r2, 1, "n2", corev1.PodSucceeded)}
			},
			live: []string{"n1", "n2"},
			want: syncSummary{Delete: []string{"job-train-0"}},
		},
		"a finished pod of an attempt queued again is deleted": {
			status: []v1alpha1.PhaseStatus{wrappers.Queued("train")},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{workerPodOf(pt, r2, 0, "n1", corev1.PodFailed)}
			},
			live: []string{"n1"},
			want: syncSummary{Delete: []string{"job-train-0"}},
		},
		"the surplus a shrink gave back is deleted": {
			status: []v1alpha1.PhaseStatus{wrappers.Running("train", "n1")},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{workerPodOf(pt, r2, 0, "n1", corev1.PodRunning), workerPodOf(pt, r2, 1, "n2", corev1.PodRunning)}
			},
			live: []string{"n1", "n2"},
			want: syncSummary{Delete: []string{"job-train-1"}, Service: true},
		},
		"a running phase the spec lost has no workers": {
			status: []v1alpha1.PhaseStatus{wrappers.Running("gone", "n1")},
		},
		"nothing running: no pods, no Service": {
			status: []v1alpha1.PhaseStatus{wrappers.Queued("train"), wrappers.Running("eval")},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pt := spec().Status(tc.status...).Obj()
			var pods []corev1.Pod
			if tc.pods != nil {
				pods = tc.pods(pt)
			}
			n := liveNodes(tc.live...)
			got := SyncWorkers(pt, pods, n.exists)
			if d := cmp.Diff(tc.want, summarizeSync(t, pt, got), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("sync (-want +got):\n%s", d)
			}
			for node, k := range n.asked {
				if node == "" || k > 1 {
					t.Errorf("nodeExists(%q) asked %d times; want at most once, and never for an unbound pod", node, k)
				}
			}
		})
	}
}

// SyncWorkers without a way to ask about nodes treats every node as there.
func TestSyncWorkersWithoutNodeExists(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("train", 1).Status(wrappers.Queued("train")).Obj()
	pod := terminatingPod(workerPodOf(pt, wrappers.Running("train", "n1"), 0, "n1", corev1.PodRunning))
	if got := SyncWorkers(pt, []corev1.Pod{pod}, nil); len(got.Delete) != 0 {
		t.Errorf("deleted %+v: a terminating pod is left to end", got.Delete)
	}
}

// terminatingPod is p being deleted.
func terminatingPod(p corev1.Pod) corev1.Pod {
	p.DeletionTimestamp = wrappers.Time(now)
	return p
}
