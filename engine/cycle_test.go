package engine_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

func nodesOf(r engine.Reservation) map[string]int {
	out := map[string]int{}
	for _, w := range r.Workers {
		out[w.Node]++
	}
	return out
}

func TestPlacementHeuristic(t *testing.T) {
	// Free GPUs: a=8 (empty), b=8 (empty), c=3 (5 used), d=5 (3 used).
	nodes := []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8), wrappers.EngineNode("c", 8), wrappers.EngineNode("d", 8)}
	nodes[2].Used = engine.ResourceList{wrappers.GPU: engine.Milli(5)}
	nodes[3].Used = engine.ResourceList{wrappers.GPU: engine.Milli(3)}
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
			plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes, Queue: []engine.Request{wrappers.Gang("p", tc.size, tc.size, 0)}})
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
	nodes := []engine.Node{wrappers.EngineNode("a", 4), wrappers.EngineNode("b", 4)}
	nodes[1].Used = engine.ResourceList{wrappers.GPU: engine.Milli(1)}
	plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes, Queue: []engine.Request{wrappers.Gang("big", 8, 8, 0), wrappers.Gang("late", 8, 8, 5)}})
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
	s := engine.NewState(engine.DefaultConfig(), []engine.Node{wrappers.EngineNode("a", 8)}, nil)
	s.Submit(wrappers.Gang("other", 5, 5, 0))
	s.Submit(wrappers.Gang("elastic", 2, 8, 1))
	plan := s.Cycle(Epoch)
	if len(plan.Reserves) != 2 || len(plan.Reserves[1].Workers) != 3 {
		t.Fatalf("want the elastic gang to start with the 3 free GPUs, got %+v", plan.Reserves)
	}
	// The other gang ends: the elastic gang grows to desired.
	s.Release(engine.GangKey{Pipeline: "ns/other", Phase: "train"})
	plan = s.Cycle(Epoch.Add(time.Minute))
	if len(plan.Grows) != 1 || len(plan.Grows[0].Workers) != 5 || plan.Grows[0].Workers[0].Index != 3 {
		t.Fatalf("want a grow of workers 3..7, got %+v", plan.Grows)
	}
	g, _ := s.Grant(engine.GangKey{Pipeline: "ns/elastic", Phase: "train"})
	if len(g.Workers) != 8 {
		t.Fatalf("granted %d, want 8", len(g.Workers))
	}
}

func TestSurplusReclaimedForOlderGang(t *testing.T) {
	s := engine.NewState(engine.DefaultConfig(), []engine.Node{wrappers.EngineNode("a", 8)}, nil)
	s.Submit(wrappers.Gang("young", 2, 8, 10))
	if plan := s.Cycle(Epoch); len(plan.Reserves[0].Workers) != 8 {
		t.Fatalf("young should take all 8: %+v", plan)
	}
	// An older pipeline's next phase arrives needing 5: young gives back
	// exactly 5 of its 6 surplus workers, highest indices first.
	s.Submit(wrappers.Gang("old", 5, 5, 0))
	plan := s.Cycle(Epoch.Add(time.Minute))
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
	s.Submit(wrappers.Gang("older", 3, 3, -1))
	plan = s.Cycle(Epoch.Add(2 * time.Minute))
	if len(plan.Shrinks) != 0 || len(plan.Reserves) != 0 {
		t.Fatalf("took workers below min: %+v", plan)
	}
}

func TestYoungerElasticNeverTakesFromOlder(t *testing.T) {
	s := engine.NewState(engine.DefaultConfig(), []engine.Node{wrappers.EngineNode("a", 8)}, nil)
	s.Submit(wrappers.Gang("old", 4, 8, 0))
	s.Cycle(Epoch)
	s.Submit(wrappers.Gang("young", 2, 4, 5))
	plan := s.Cycle(Epoch.Add(time.Minute))
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
			s := engine.NewState(engine.DefaultConfig(), []engine.Node{wrappers.EngineNode("a", 8)}, nil)
			old := wrappers.Gang("old", 2, tc.oldDesired, 0)
			old.Priority = tc.oldPriority
			s.Submit(old)
			s.Submit(wrappers.Gang("other", 1, 1, 1))
			s.Cycle(Epoch.Add(time.Minute))
			s.Submit(wrappers.Gang("young", 2, 2, 5))
			if plan := s.Cycle(Epoch.Add(6 * time.Minute)); len(plan.Shrinks) != 0 || len(plan.Reserves) != 0 {
				t.Fatalf("within its starvation bound the young gang took something: %+v", plan)
			}
			plan := s.Cycle(Epoch.Add(16 * time.Minute)) // 11 minutes queued: starving
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
	hi := wrappers.Gang("zzz-high-priority", 4, 4, 50)
	hi.Priority = 10
	validate := wrappers.Gang("old-pipeline", 4, 4, 0)
	validate.Gang.Phase = "validate"
	validate.Queued = Epoch.Add(100 * time.Minute) // queued late, but the pipeline is old
	cases := map[string]struct {
		queue []engine.Request
		want  string
	}{
		"priority first":                {queue: []engine.Request{wrappers.Gang("a", 4, 4, 0), hi}, want: "ns/zzz-high-priority"},
		"a later phase keeps its age":   {queue: []engine.Request{wrappers.Gang("newer", 4, 4, 10), validate}, want: "ns/old-pipeline"},
		"equal age and priority: names": {queue: []engine.Request{wrappers.Gang("b", 4, 4, 0), wrappers.Gang("a", 4, 4, 0)}, want: "ns/a"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch.Add(200 * time.Minute), Nodes: []engine.Node{wrappers.EngineNode("n", 4)}, Queue: tc.queue})
			if len(plan.Reserves) != 1 || plan.Reserves[0].Gang.Pipeline != tc.want {
				t.Fatalf("reserved %+v, want %s", plan.Reserves, tc.want)
			}
		})
	}
}

func TestInfeasibleSaysWhyWithNumbers(t *testing.T) {
	tainted := wrappers.EngineNode("t", 8)
	tainted.Taints = []corev1.Taint{{Key: "dedicated", Value: "infer", Effect: corev1.TaintEffectNoSchedule}}
	nodes := []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8), tainted}
	huge := wrappers.Gang("huge", 1, 1, 0)
	huge.Footprint = engine.ResourceList{wrappers.GPU: engine.Milli(16)}
	fpga := wrappers.Gang("fpga", 1, 1, 0)
	fpga.Footprint = engine.ResourceList{"example.com/fpga": engine.Milli(1)}
	many := wrappers.Gang("many", 40, 40, 0)
	picky := wrappers.Gang("picky", 1, 1, 0)
	picky.Constraints.NodeSelector = map[string]string{"zone": "mars"}
	cases := map[string]struct {
		r    engine.Request
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
			plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes, Queue: []engine.Request{tc.r}})
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
	tainted := wrappers.EngineNode("a-tainted", 8)
	tainted.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	cordoned := wrappers.EngineNode("b-cordoned", 8)
	cordoned.Unschedulable = true
	labelled := wrappers.EngineNode("c-labelled", 8)
	labelled.Labels = map[string]string{"pool": "a100"}
	plain := wrappers.EngineNode("d-plain", 8)
	nodes := []engine.Node{tainted, cordoned, labelled, plain}

	tolerating := wrappers.Gang("tol", 8, 8, 0)
	tolerating.Constraints.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	selecting := wrappers.Gang("sel", 4, 4, 0)
	selecting.Constraints.NodeSelector = map[string]string{"pool": "a100"}
	affine := wrappers.Gang("aff", 4, 4, 0)
	affine.Constraints.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpDoesNotExist}},
		}}},
	}}
	plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes, Queue: []engine.Request{tolerating, selecting, affine, wrappers.Gang("any", 1, 1, 1)}})
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
	setup := func(bound time.Duration) *engine.State {
		s := engine.NewState(engine.Config{StarvationBound: bound}, []engine.Node{wrappers.EngineNode("a", 4), wrappers.EngineNode("b", 4)}, []engine.Grant{
			{Request: wrappers.Gang("run1", 2, 2, -10), Workers: []string{"a", "a"}},
			{Request: wrappers.Gang("run2", 2, 2, -9), Workers: []string{"b", "b"}},
		})
		s.Submit(wrappers.Gang("head", 8, 8, 0))
		s.Submit(wrappers.Gang("small", 2, 2, 1))
		return s
	}
	// Within the bound, the small gang backfills.
	plan := setup(time.Hour).Cycle(Epoch.Add(time.Minute))
	if len(plan.Reserves) != 1 || plan.Reserves[0].Gang.Pipeline != "ns/small" || plan.Fence != nil {
		t.Fatalf("want backfill of small, got %+v", plan)
	}
	// Past the bound, the head fences both nodes and small waits.
	s := setup(0)
	plan = s.Cycle(Epoch.Add(time.Minute))
	if len(plan.Reserves) != 0 || plan.Fence == nil || len(plan.Fence.Nodes) != 2 {
		t.Fatalf("want no admission and a fence, got %+v", plan)
	}
	if plan.Waiting[1].Reason != engine.WaitBehindHead || !plan.Waiting[0].Starving {
		t.Fatalf("waits: %+v", plan.Waiting)
	}
	if !strings.Contains(plan.Waiting[1].Message(), "draining for the queue's starving head") {
		t.Errorf("message %q does not say why", plan.Waiting[1].Message())
	}
	// When the running gangs end, the head gets the whole cluster.
	s.Release(engine.GangKey{Pipeline: "ns/run1", Phase: "train"})
	s.Release(engine.GangKey{Pipeline: "ns/run2", Phase: "train"})
	plan = s.Cycle(Epoch.Add(2 * time.Minute))
	if len(plan.Reserves) != 1 || plan.Reserves[0].Gang.Pipeline != "ns/head" {
		t.Fatalf("head not reserved: %+v", plan)
	}
}

func TestNodeLossReleasesGang(t *testing.T) {
	s := engine.NewState(engine.DefaultConfig(), []engine.Node{wrappers.EngineNode("a", 4), wrappers.EngineNode("b", 4), wrappers.EngineNode("c", 4)}, nil)
	s.Submit(wrappers.Gang("p", 6, 6, 0))
	first := s.Cycle(Epoch)
	if len(first.Reserves) != 1 {
		t.Fatalf("not reserved: %+v", first)
	}
	lost := first.Reserves[0].Workers[0].Node
	s.RemoveNode(lost)
	plan := s.Cycle(Epoch.Add(time.Minute))
	want := []engine.Release{{Gang: engine.GangKey{Pipeline: "ns/p", Phase: "train"}, Reason: engine.ReleaseNodeLost, Message: "node " + lost + " was removed"}}
	if diff := cmp.Diff(want, plan.Releases); diff != "" {
		t.Fatalf("releases (-want +got):\n%s", diff)
	}
	// The caller requeues the phase: it is re-reserved on the nodes left.
	s.Submit(wrappers.Gang("p", 6, 6, 0))
	plan = s.Cycle(Epoch.Add(2 * time.Minute))
	if len(plan.Reserves) != 1 || nodesOf(plan.Reserves[0])[lost] != 0 {
		t.Fatalf("not re-reserved elsewhere: %+v", plan)
	}
}

func TestBackoffHoldsRequest(t *testing.T) {
	r := wrappers.Gang("p", 1, 1, 0)
	r.NotBefore = Epoch.Add(time.Minute)
	plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: []engine.Node{wrappers.EngineNode("a", 1)}, Queue: []engine.Request{r}})
	if len(plan.Reserves) != 0 || len(plan.Waiting) != 1 || plan.Waiting[0].Reason != engine.WaitBackoff {
		t.Fatalf("want backoff wait, got %+v", plan)
	}
	plan = engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch.Add(time.Minute), Nodes: []engine.Node{wrappers.EngineNode("a", 1)}, Queue: []engine.Request{r}})
	if len(plan.Reserves) != 1 {
		t.Fatalf("want reserve after backoff, got %+v", plan)
	}
}

// A one-node gang goes to the snuggest node (best fit), or with Spread
// (kube-scheduler's LeastAllocated, for the simulator's kueue pods) to
// the roomiest.
func TestSpreadTakesTheRoomiestNode(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)}
	ledger := []engine.Grant{wrappers.Grant(wrappers.Gang("half", 4, 4, 0), wrappers.Repeat("a", 4))}
	for spread, want := range map[bool]string{false: "a", true: "b"} {
		pod := wrappers.Gang("pod", 1, 1, 1)
		pod.Spread = spread
		plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes, Ledger: ledger, Queue: []engine.Request{pod}})
		if len(plan.Reserves) != 1 || plan.Reserves[0].Workers[0].Node != want {
			t.Errorf("spread %v: reserved %+v, want node %s", spread, plan.Reserves, want)
		}
	}
}

// TestWholeNodeGangsGrowYoungestFirstOnceNothingWaits: when no queued
// gang is blocked and every running elastic gang below desired is one of
// whole-node workers, the youngest grows first: of gangs started alike it
// has run the least, and fed last it would run on alone while the nodes
// the others free idle (the wave burst's last wave, docs/simulator.md,
// "Youngest first once nothing waits"). Gangs of smaller workers, or any
// gang while one waits, keep oldest first.
func TestWholeNodeGangsGrowYoungestFirstOnceNothingWaits(t *testing.T) {
	wholeNode := func(r *engine.Request) { r.Footprint = engine.ResourceList{wrappers.GPU: engine.Milli(8)} }
	cases := map[string]struct {
		nodes  []engine.Node
		ledger []engine.Grant
		queue  []engine.Request
		want   string
	}{
		"whole-node workers, nothing queued: the youngest grows": {
			nodes: []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8), wrappers.EngineNode("c", 8)},
			ledger: []engine.Grant{
				wrappers.Grant(wrappers.Gang("old", 1, 2, 0, wholeNode), []string{"a"}),
				wrappers.Grant(wrappers.Gang("young", 1, 2, 5, wholeNode), []string{"b"}),
			},
			want: "ns/young+1",
		},
		"whole-node workers, a gang blocked: the oldest grows": {
			nodes: []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8), wrappers.EngineNode("c", 8)},
			ledger: []engine.Grant{
				wrappers.Grant(wrappers.Gang("old", 1, 2, 0, wholeNode), []string{"a"}),
				wrappers.Grant(wrappers.Gang("young", 1, 2, 5, wholeNode), []string{"b"}),
			},
			queue: []engine.Request{wrappers.Gang("later", 2, 2, 9, wholeNode)},
			want:  "ns/old+1",
		},
		"one-GPU workers, nothing queued: the oldest grows": {
			nodes: []engine.Node{wrappers.EngineNode("a", 8)},
			ledger: []engine.Grant{
				wrappers.Grant(wrappers.Gang("old", 1, 4, 0), wrappers.Repeat("a", 3)),
				wrappers.Grant(wrappers.Gang("young", 1, 5, 5), wrappers.Repeat("a", 4)),
			},
			want: "ns/old+1",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := engine.NewState(engine.DefaultConfig(), tc.nodes, tc.ledger)
			for _, r := range tc.queue {
				s.Submit(r)
			}
			plan := s.Cycle(Epoch.Add(time.Hour))
			var got []string
			for _, g := range plan.Grows {
				got = append(got, g.Gang.Pipeline+"+"+strconv.Itoa(len(g.Workers)))
			}
			if strings.Join(got, ",") != tc.want {
				t.Errorf("grows %v, want %s", got, tc.want)
			}
		})
	}
}
