package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const gpu ResourceName = "nvidia.com/gpu"

// gpuNode is a node with n GPUs and nothing else.
func gpuNode(name string, n int64) Node {
	return Node{Name: name, Allocatable: ResourceList{gpu: Milli(n), "cpu": Milli(64)}}
}

// req is a request for a gang of one-GPU workers of pipeline p, created at
// t0+age minutes.
func req(p string, min, desired int32, age int) Request {
	created := t0.Add(time.Duration(age) * time.Minute)
	return Request{
		Gang: GangKey{Pipeline: "ns/" + p, Phase: "train"}, Created: created, Queued: created,
		Min: min, Desired: desired, Footprint: ResourceList{gpu: Milli(1)},
	}
}

func nodesOf(r Reservation) map[string]int {
	out := map[string]int{}
	for _, w := range r.Workers {
		out[w.Node]++
	}
	return out
}

func TestPlacementHeuristic(t *testing.T) {
	// Free GPUs: a=8 (empty), b=8 (empty), c=3 (5 used), d=5 (3 used).
	nodes := []Node{gpuNode("a", 8), gpuNode("b", 8), gpuNode("c", 8), gpuNode("d", 8)}
	nodes[2].Used = ResourceList{gpu: Milli(5)}
	nodes[3].Used = ResourceList{gpu: Milli(3)}
	cases := map[string]struct {
		size int32
		want map[string]int
	}{
		"small gang fills the tightest hole":            {size: 2, want: map[string]int{"c": 2}},
		"a gang that fits a partial node spares whole":  {size: 5, want: map[string]int{"d": 5}},
		"a gang of one node's size takes a whole node":  {size: 8, want: map[string]int{"a": 8}},
		"larger gang: biggest first, best fit for rest": {size: 12, want: map[string]int{"a": 8, "d": 4}},
		"everything": {size: 24, want: map[string]int{"a": 8, "b": 8, "c": 3, "d": 5}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			plan := Schedule(DefaultConfig(), Snapshot{Now: t0, Nodes: nodes, Queue: []Request{req("p", tc.size, tc.size, 0)}})
			if len(plan.Reserves) != 1 {
				t.Fatalf("want one reserve, got plan %+v", plan)
			}
			if diff := cmp.Diff(tc.want, nodesOf(plan.Reserves[0])); diff != "" {
				t.Errorf("placement (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAllOrNothingWaitExplains(t *testing.T) {
	nodes := []Node{gpuNode("a", 4), gpuNode("b", 4)}
	nodes[1].Used = ResourceList{gpu: Milli(1)}
	plan := Schedule(DefaultConfig(), Snapshot{Now: t0, Nodes: nodes, Queue: []Request{req("big", 8, 8, 0), req("late", 8, 8, 5)}})
	if len(plan.Reserves) != 0 {
		t.Fatalf("a partial gang was reserved: %+v", plan.Reserves)
	}
	if len(plan.Waiting) != 2 {
		t.Fatalf("want 2 waits, got %+v", plan.Waiting)
	}
	w := plan.Waiting[1]
	want := "needs 8 × {nvidia.com/gpu: 1} at once on 2 matching nodes; 7 fit now across 2 nodes, largest block 4; 1 gang ahead (younger gangs that fit may start first until the head waits past the starvation bound)"
	if got := w.Message(); got != want {
		t.Errorf("message:\n got %q\nwant %q", got, want)
	}
}

func TestElasticStartsAtWhatFitsAndGrows(t *testing.T) {
	s := NewState(DefaultConfig(), []Node{gpuNode("a", 8)}, nil)
	s.Submit(req("other", 5, 5, 0))
	s.Submit(req("elastic", 2, 8, 1))
	plan := s.Cycle(t0)
	if len(plan.Reserves) != 2 || len(plan.Reserves[1].Workers) != 3 {
		t.Fatalf("want the elastic gang to start with the 3 free GPUs, got %+v", plan.Reserves)
	}
	// The other gang ends: the elastic gang grows to desired.
	s.Release(GangKey{Pipeline: "ns/other", Phase: "train"})
	plan = s.Cycle(t0.Add(time.Minute))
	if len(plan.Grows) != 1 || len(plan.Grows[0].Workers) != 5 || plan.Grows[0].Workers[0].Index != 3 {
		t.Fatalf("want a grow of workers 3..7, got %+v", plan.Grows)
	}
	g, _ := s.Grant(GangKey{Pipeline: "ns/elastic", Phase: "train"})
	if len(g.Workers) != 8 {
		t.Fatalf("granted %d, want 8", len(g.Workers))
	}
}

func TestSurplusReclaimedForOlderGang(t *testing.T) {
	s := NewState(DefaultConfig(), []Node{gpuNode("a", 8)}, nil)
	s.Submit(req("young", 2, 8, 10))
	if plan := s.Cycle(t0); len(plan.Reserves[0].Workers) != 8 {
		t.Fatalf("young should take all 8: %+v", plan)
	}
	// An older pipeline's next phase arrives needing 5: young gives back
	// exactly 5 of its 6 surplus workers, highest indices first.
	s.Submit(req("old", 5, 5, 0))
	plan := s.Cycle(t0.Add(time.Minute))
	if len(plan.Shrinks) != 1 {
		t.Fatalf("want one shrink, got %+v", plan)
	}
	var idx []int32
	for _, w := range plan.Shrinks[0].Workers {
		idx = append(idx, w.Index)
	}
	if diff := cmp.Diff([]int32{7, 6, 5, 4, 3}, idx); diff != "" {
		t.Errorf("shrunk workers (-want +got):\n%s", diff)
	}
	if len(plan.Reserves) != 1 || plan.Reserves[0].Gang.Pipeline != "ns/old" {
		t.Fatalf("old gang not reserved: %+v", plan.Reserves)
	}
	// Surplus below min is never taken: a second old gang must wait.
	s.Submit(req("older", 3, 3, -1))
	plan = s.Cycle(t0.Add(2 * time.Minute))
	if len(plan.Shrinks) != 0 || len(plan.Reserves) != 0 {
		t.Fatalf("took workers below min: %+v", plan)
	}
}

func TestYoungerElasticNeverTakesFromOlder(t *testing.T) {
	s := NewState(DefaultConfig(), []Node{gpuNode("a", 8)}, nil)
	s.Submit(req("old", 4, 8, 0))
	s.Cycle(t0)
	s.Submit(req("young", 2, 4, 5))
	plan := s.Cycle(t0.Add(time.Minute))
	if len(plan.Shrinks) != 0 {
		t.Fatalf("an older gang's surplus was taken for a younger one: %+v", plan.Shrinks)
	}
}

// A starving gang may take an older gang's surplus, but no more workers of
// it than it finds free (so at least half of what it starts with was
// idle), and never from a gang of higher priority.
func TestStarvingGangTakesOlderSurplusUpToFree(t *testing.T) {
	cases := map[string]struct {
		oldDesired, oldPriority int32
		wantShrink              int
	}{
		"1 free, 1 taken":                {oldDesired: 6, wantShrink: 1},
		"nothing free: nothing taken":    {oldDesired: 7, wantShrink: 0},
		"higher priority: nothing taken": {oldDesired: 6, oldPriority: 10, wantShrink: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewState(DefaultConfig(), []Node{gpuNode("a", 8)}, nil)
			old := req("old", 2, tc.oldDesired, 0)
			old.Priority = tc.oldPriority
			s.Submit(old)
			s.Submit(req("other", 1, 1, 1))
			s.Cycle(t0.Add(time.Minute))
			s.Submit(req("young", 2, 2, 5))
			if plan := s.Cycle(t0.Add(6 * time.Minute)); len(plan.Shrinks) != 0 || len(plan.Reserves) != 0 {
				t.Fatalf("within its starvation bound the young gang took something: %+v", plan)
			}
			plan := s.Cycle(t0.Add(16 * time.Minute)) // 11 minutes queued: starving
			var shrunk int
			for _, sh := range plan.Shrinks {
				if sh.Gang.Pipeline != "ns/old" || sh.For.Pipeline != "ns/young" {
					t.Fatalf("unexpected shrink %+v", sh)
				}
				shrunk += len(sh.Workers)
			}
			if shrunk != tc.wantShrink {
				t.Fatalf("shrunk %d of the old gang, want %d: %+v", shrunk, tc.wantShrink, plan)
			}
			reserved := len(plan.Reserves) == 1 && plan.Reserves[0].Gang.Pipeline == "ns/young"
			if reserved != (tc.wantShrink > 0) {
				t.Fatalf("young gang reserved: %v, want %v: %+v", reserved, tc.wantShrink > 0, plan)
			}
		})
	}
}

func TestQueueOrder(t *testing.T) {
	// One 4-GPU node, four gangs of 4: only the first in order runs.
	hi := req("zzz-high-priority", 4, 4, 50)
	hi.Priority = 10
	validate := req("old-pipeline", 4, 4, 0)
	validate.Gang.Phase = "validate"
	validate.Queued = t0.Add(100 * time.Minute) // queued late, but the pipeline is old
	cases := map[string]struct {
		queue []Request
		want  string
	}{
		"priority first":                {queue: []Request{req("a", 4, 4, 0), hi}, want: "ns/zzz-high-priority"},
		"a later phase keeps its age":   {queue: []Request{req("newer", 4, 4, 10), validate}, want: "ns/old-pipeline"},
		"equal age and priority: names": {queue: []Request{req("b", 4, 4, 0), req("a", 4, 4, 0)}, want: "ns/a"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			plan := Schedule(DefaultConfig(), Snapshot{Now: t0.Add(200 * time.Minute), Nodes: []Node{gpuNode("n", 4)}, Queue: tc.queue})
			if len(plan.Reserves) != 1 || plan.Reserves[0].Gang.Pipeline != tc.want {
				t.Fatalf("reserved %+v, want %s", plan.Reserves, tc.want)
			}
		})
	}
}

func TestInfeasibleSaysWhyWithNumbers(t *testing.T) {
	tainted := gpuNode("t", 8)
	tainted.Taints = []corev1.Taint{{Key: "dedicated", Value: "infer", Effect: corev1.TaintEffectNoSchedule}}
	nodes := []Node{gpuNode("a", 8), gpuNode("b", 8), tainted}
	huge := req("huge", 1, 1, 0)
	huge.Footprint = ResourceList{gpu: Milli(16)}
	fpga := req("fpga", 1, 1, 0)
	fpga.Footprint = ResourceList{"example.com/fpga": Milli(1)}
	many := req("many", 40, 40, 0)
	picky := req("picky", 1, 1, 0)
	picky.Constraints.NodeSelector = map[string]string{"zone": "mars"}
	cases := map[string]struct {
		r    Request
		want string
	}{
		"worker larger than any node": {r: huge, want: "each worker needs 16 nvidia.com/gpu, but the largest of the 2 matching nodes has 8 allocatable"},
		"resource nobody has":         {r: fpga, want: "each worker needs 1 example.com/fpga, and no node has that resource"},
		"gang larger than the cluster": {r: many,
			want: "needs 40 workers of {nvidia.com/gpu: 1} at once, but the 2 matching nodes hold at most 16 even when empty"},
		"no node matches": {r: picky,
			want: "no node matches the worker's constraints: 3 nodes in the cluster, 3 rejected by nodeSelector/affinity, 0 by untolerated taints, 0 cordoned"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			plan := Schedule(DefaultConfig(), Snapshot{Now: t0, Nodes: nodes, Queue: []Request{tc.r}})
			if len(plan.Infeasible) != 1 {
				t.Fatalf("want infeasible, got %+v", plan)
			}
			if got := plan.Infeasible[0].Message; got != tc.want {
				t.Errorf("message:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestConstraintsAreHonoured(t *testing.T) {
	tainted := gpuNode("a-tainted", 8)
	tainted.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	cordoned := gpuNode("b-cordoned", 8)
	cordoned.Unschedulable = true
	labelled := gpuNode("c-labelled", 8)
	labelled.Labels = map[string]string{"pool": "a100"}
	plain := gpuNode("d-plain", 8)
	nodes := []Node{tainted, cordoned, labelled, plain}

	tolerating := req("tol", 8, 8, 0)
	tolerating.Constraints.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	selecting := req("sel", 4, 4, 0)
	selecting.Constraints.NodeSelector = map[string]string{"pool": "a100"}
	affine := req("aff", 4, 4, 0)
	affine.Constraints.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpDoesNotExist}},
		}}},
	}}
	plan := Schedule(DefaultConfig(), Snapshot{Now: t0, Nodes: nodes, Queue: []Request{tolerating, selecting, affine, req("any", 1, 1, 1)}})
	got := map[string]map[string]int{}
	for _, r := range plan.Reserves {
		got[r.Gang.Pipeline] = nodesOf(r)
	}
	want := map[string]map[string]int{
		// The tolerating gang may use the tainted node (the plain one fits too;
		// both are whole, so the first by name is used).
		"ns/tol": {"a-tainted": 8},
		"ns/sel": {"c-labelled": 4},
		"ns/aff": {"d-plain": 4},
		"ns/any": {"c-labelled": 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("placements (-want +got):\n%s", diff)
	}
}

func TestStarvationBoundStopsBackfillOnFencedNodes(t *testing.T) {
	// Two 4-GPU nodes, each half used by a running gang. The head needs 8.
	setup := func(bound time.Duration) *State {
		s := NewState(Config{StarvationBound: bound}, []Node{gpuNode("a", 4), gpuNode("b", 4)}, []Grant{
			{Request: req("run1", 2, 2, -10), Workers: []string{"a", "a"}},
			{Request: req("run2", 2, 2, -9), Workers: []string{"b", "b"}},
		})
		s.Submit(req("head", 8, 8, 0))
		s.Submit(req("small", 2, 2, 1))
		return s
	}
	// Within the bound, the small gang backfills.
	plan := setup(time.Hour).Cycle(t0.Add(time.Minute))
	if len(plan.Reserves) != 1 || plan.Reserves[0].Gang.Pipeline != "ns/small" || plan.Fence != nil {
		t.Fatalf("want backfill of small, got %+v", plan)
	}
	// Past the bound, the head fences both nodes and small waits.
	s := setup(0)
	plan = s.Cycle(t0.Add(time.Minute))
	if len(plan.Reserves) != 0 || plan.Fence == nil || len(plan.Fence.Nodes) != 2 {
		t.Fatalf("want no admission and a fence, got %+v", plan)
	}
	if plan.Waiting[1].Reason != WaitBehindHead || !plan.Waiting[0].Starving {
		t.Fatalf("waits: %+v", plan.Waiting)
	}
	if !strings.Contains(plan.Waiting[1].Message(), "draining for the queue's starving head") {
		t.Errorf("message %q does not say why", plan.Waiting[1].Message())
	}
	// When the running gangs end, the head gets the whole cluster.
	s.Release(GangKey{Pipeline: "ns/run1", Phase: "train"})
	s.Release(GangKey{Pipeline: "ns/run2", Phase: "train"})
	plan = s.Cycle(t0.Add(2 * time.Minute))
	if len(plan.Reserves) != 1 || plan.Reserves[0].Gang.Pipeline != "ns/head" {
		t.Fatalf("head not reserved: %+v", plan)
	}
}

func TestNodeLossReleasesGang(t *testing.T) {
	s := NewState(DefaultConfig(), []Node{gpuNode("a", 4), gpuNode("b", 4), gpuNode("c", 4)}, nil)
	s.Submit(req("p", 6, 6, 0))
	first := s.Cycle(t0)
	if len(first.Reserves) != 1 {
		t.Fatalf("not reserved: %+v", first)
	}
	lost := first.Reserves[0].Workers[0].Node
	s.RemoveNode(lost)
	plan := s.Cycle(t0.Add(time.Minute))
	want := []Release{{Gang: GangKey{Pipeline: "ns/p", Phase: "train"}, Reason: ReleaseNodeLost, Message: "node " + lost + " was removed"}}
	if diff := cmp.Diff(want, plan.Releases); diff != "" {
		t.Fatalf("releases (-want +got):\n%s", diff)
	}
	// The caller requeues the phase: it is re-reserved on the nodes left.
	s.Submit(req("p", 6, 6, 0))
	plan = s.Cycle(t0.Add(2 * time.Minute))
	if len(plan.Reserves) != 1 || nodesOf(plan.Reserves[0])[lost] != 0 {
		t.Fatalf("not re-reserved elsewhere: %+v", plan)
	}
}

func TestBackoffHoldsRequest(t *testing.T) {
	r := req("p", 1, 1, 0)
	r.NotBefore = t0.Add(time.Minute)
	plan := Schedule(DefaultConfig(), Snapshot{Now: t0, Nodes: []Node{gpuNode("a", 1)}, Queue: []Request{r}})
	if len(plan.Reserves) != 0 || len(plan.Waiting) != 1 || plan.Waiting[0].Reason != WaitBackoff {
		t.Fatalf("want backoff wait, got %+v", plan)
	}
	plan = Schedule(DefaultConfig(), Snapshot{Now: t0.Add(time.Minute), Nodes: []Node{gpuNode("a", 1)}, Queue: []Request{r}})
	if len(plan.Reserves) != 1 {
		t.Fatalf("want reserve after backoff, got %+v", plan)
	}
}
