package engine_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// grantOn is a grant of pipeline p's train gang, worker i on nodes[i],
// created at Epoch+age minutes, with the given workers unbound.
func grantOn(p string, age int, nodes []string, unbound ...int32) engine.Grant {
	n := int32(len(nodes))
	return wrappers.Grant(wrappers.Gang(p, n, n, age), nodes, unbound...)
}

func allWorkers(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

func TestDisplacedWorkersMove(t *testing.T) {
	taken := wrappers.EngineNode("a", 8)
	taken.Used, taken.LastPod = engine.ResourceList{wrappers.GPU: engine.Milli(1)}, "ml/intruder"
	cases := map[string]struct {
		nodes  []engine.Node
		ledger []engine.Grant
		want   engine.Plan
	}{
		"the highest unbound index moves to a node that fits": {
			nodes:  []engine.Node{taken, wrappers.EngineNode("b", 8)},
			ledger: []engine.Grant{grantOn("p", 0, wrappers.Repeat("a", 8), allWorkers(8)...)},
			want: engine.Plan{Moves: []engine.Move{{Gang: wrappers.GangKey("p"), Reason: engine.MoveDisplaced,
				Workers: []engine.MovedWorker{{Index: 7, From: "a", To: "b"}},
				Message: "node a can no longer hold its reserved workers: pod ml/intruder, which phasegang does not manage, took the capacity (short by nvidia.com/gpu: 1); moved worker 7 to b"}}},
		},
		"bound workers are never moved: only the unbound one goes": {
			nodes:  []engine.Node{taken, wrappers.EngineNode("b", 8)},
			ledger: []engine.Grant{grantOn("p", 0, wrappers.Repeat("a", 8), 2)},
			want: engine.Plan{Moves: []engine.Move{{Gang: wrappers.GangKey("p"), Reason: engine.MoveDisplaced,
				Workers: []engine.MovedWorker{{Index: 2, From: "a", To: "b"}},
				Message: "node a can no longer hold its reserved workers: pod ml/intruder, which phasegang does not manage, took the capacity (short by nvidia.com/gpu: 1); moved worker 2 to b"}}},
		},
		"a started gang is not touched": {
			nodes:  []engine.Node{taken, wrappers.EngineNode("b", 8)},
			ledger: []engine.Grant{grantOn("p", 0, wrappers.Repeat("a", 8))},
			want:   engine.Plan{},
		},
		"the youngest gang on the node gives way": {
			nodes:  []engine.Node{taken, wrappers.EngineNode("b", 8)},
			ledger: []engine.Grant{grantOn("old", 0, wrappers.Repeat("a", 4), allWorkers(4)...), grantOn("young", 5, wrappers.Repeat("a", 4), allWorkers(4)...)},
			want: engine.Plan{Moves: []engine.Move{{Gang: wrappers.GangKey("young"), Reason: engine.MoveDisplaced,
				Workers: []engine.MovedWorker{{Index: 3, From: "a", To: "b"}},
				Message: "node a can no longer hold its reserved workers: pod ml/intruder, which phasegang does not manage, took the capacity (short by nvidia.com/gpu: 1); moved worker 3 to b"}}},
		},
		"nowhere to go: the gang is released whole": {
			nodes:  []engine.Node{taken},
			ledger: []engine.Grant{grantOn("p", 0, wrappers.Repeat("a", 8), allWorkers(8)...)},
			want: engine.Plan{Releases: []engine.Release{{Gang: wrappers.GangKey("p"), Reason: engine.ReleaseDisplaced,
				Message: "node a can no longer hold its reserved workers: pod ml/intruder, which phasegang does not manage, took the capacity (short by nvidia.com/gpu: 1); no other node fits worker 7"}}},
		},
		"all of a gang's lifted workers move, or none": {
			nodes: []engine.Node{
				{Name: "a", Allocatable: engine.ResourceList{wrappers.GPU: engine.Milli(8)}, Used: engine.ResourceList{wrappers.GPU: engine.Milli(2)}},
				{Name: "b", Allocatable: engine.ResourceList{wrappers.GPU: engine.Milli(8)}, Used: engine.ResourceList{wrappers.GPU: engine.Milli(7)}},
			},
			ledger: []engine.Grant{grantOn("p", 0, wrappers.Repeat("a", 8), allWorkers(8)...)},
			want: engine.Plan{Releases: []engine.Release{{Gang: wrappers.GangKey("p"), Reason: engine.ReleaseDisplaced,
				Message: "node a can no longer hold its reserved workers: pods phasegang does not manage took the capacity (short by nvidia.com/gpu: 2); no other node fits workers 6, 7"}}},
		},
		"capacity held by leaving pods is waited out": {
			nodes:  []engine.Node{{Name: "a", Allocatable: engine.ResourceList{wrappers.GPU: engine.Milli(8)}, Used: engine.ResourceList{wrappers.GPU: engine.Milli(1)}, Leaving: engine.ResourceList{wrappers.GPU: engine.Milli(1)}}, wrappers.EngineNode("b", 8)},
			ledger: []engine.Grant{grantOn("p", 0, wrappers.Repeat("a", 8), allWorkers(8)...)},
			want:   engine.Plan{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: tc.nodes, Ledger: tc.ledger})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// The capacity a released gang gives back is used in the same cycle: the
// queue's next gang is admitted on it, and the ledger never overcommits.
func TestDisplacedReleaseFreesCapacity(t *testing.T) {
	taken := wrappers.EngineNode("a", 8)
	taken.Used = engine.ResourceList{wrappers.GPU: engine.Milli(4)}
	s := engine.NewState(engine.DefaultConfig(), []engine.Node{taken}, []engine.Grant{grantOn("p", 0, wrappers.Repeat("a", 8), allWorkers(8)...)})
	s.Submit(wrappers.Gang("q", 4, 4, 1))
	plan := s.Cycle(Epoch)
	if len(plan.Releases) != 1 || plan.Releases[0].Reason != engine.ReleaseDisplaced || len(plan.Reserves) != 1 {
		t.Fatalf("want p released Displaced and q reserved, got %+v", plan)
	}
	if free, _ := s.Free("a"); free[wrappers.GPU] != 0 {
		t.Errorf("free GPUs on a after the cycle = %d, want 0", free[wrappers.GPU])
	}
}

// A moved worker stays unbound (its pod must be made again), and the next
// cycle over the same cluster moves nothing.
func TestMoveIsStable(t *testing.T) {
	taken := wrappers.EngineNode("a", 8)
	taken.Used = engine.ResourceList{wrappers.GPU: engine.Milli(1)}
	nodes := []engine.Node{taken, wrappers.EngineNode("b", 8)}
	s := engine.NewState(engine.DefaultConfig(), nodes, []engine.Grant{grantOn("p", 0, wrappers.Repeat("a", 8), allWorkers(8)...)})
	if plan := s.Cycle(Epoch); len(plan.Moves) != 1 {
		t.Fatalf("want one move, got %+v", plan)
	}
	g, _ := s.Grant(wrappers.GangKey("p"))
	if diff := cmp.Diff(allWorkers(8), g.Unbound); diff != "" {
		t.Errorf("unbound after the move (-want +got):\n%s", diff)
	}
	if plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes, Ledger: []engine.Grant{g}}); len(plan.Moves)+len(plan.Releases) != 0 {
		t.Errorf("the next cycle changes the grant again: %+v", plan)
	}
}

func TestRefusedWorkers(t *testing.T) {
	refusal := "Unschedulable: 0/2 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."
	refused := func(g engine.Grant) engine.Grant {
		g.Refused = []engine.RefusedWorker{{Index: 1, Message: refusal}}
		return g
	}
	cases := map[string]struct {
		nodes  []engine.Node
		ledger []engine.Grant
		want   engine.Plan
	}{
		"moved to a node that fits on free capacity": {
			nodes:  []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)},
			ledger: []engine.Grant{refused(grantOn("p", 0, wrappers.Repeat("a", 2), 0, 1))},
			want: engine.Plan{Moves: []engine.Move{{Gang: wrappers.GangKey("p"), Reason: engine.MoveRefused,
				Workers: []engine.MovedWorker{{Index: 1, From: "a", To: "b"}},
				Message: "kube-scheduler refused worker 1 on node a (" + refusal + "); moved worker 1 to b"}}},
		},
		"no other node fits: it stays, and the plan says so": {
			nodes:  []engine.Node{wrappers.EngineNode("a", 8), {Name: "b", Allocatable: engine.ResourceList{wrappers.GPU: engine.Milli(8)}, Used: engine.ResourceList{wrappers.GPU: engine.Milli(8)}}},
			ledger: []engine.Grant{refused(grantOn("p", 0, wrappers.Repeat("a", 2), 0, 1))},
			want: engine.Plan{Refused: []engine.Refusal{{Gang: wrappers.GangKey("p"), Index: 1, Node: "a",
				Message: "kube-scheduler refused worker 1 on node a (" + refusal + "); no other node fits it now, so it stays reserved there"}}},
		},
		"moved for a refusal before: it stays, and the plan says so": {
			nodes: []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)},
			ledger: []engine.Grant{func() engine.Grant {
				g := refused(grantOn("p", 0, wrappers.Repeat("a", 2), 0, 1))
				g.Refused[0].Moved = 1
				return g
			}()},
			want: engine.Plan{Refused: []engine.Refusal{{Gang: wrappers.GangKey("p"), Index: 1, Node: "a",
				Message: "kube-scheduler refused worker 1 on node a (" + refusal + "); it was moved for a refusal before, so it stays reserved there"}}},
		},
		"pods being deleted on its node hold what it needs: it waits": {
			nodes: []engine.Node{
				{Name: "a", Allocatable: engine.ResourceList{wrappers.GPU: engine.Milli(8)}, Used: engine.ResourceList{wrappers.GPU: engine.Milli(6)}, Leaving: engine.ResourceList{wrappers.GPU: engine.Milli(6)}},
				wrappers.EngineNode("b", 8),
			},
			ledger: []engine.Grant{refused(grantOn("p", 0, wrappers.Repeat("a", 2), 0, 1))},
			want:   engine.Plan{},
		},
		"a bound worker is not moved, whatever its pod once said": {
			nodes:  []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)},
			ledger: []engine.Grant{refused(grantOn("p", 0, wrappers.Repeat("a", 2), 0))},
			want:   engine.Plan{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: tc.nodes, Ledger: tc.ledger})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}
