package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// grantOn is a grant of pipeline p's train gang, worker i on nodes[i],
// created at t0+age minutes, with the given workers unbound.
func grantOn(p string, age int, nodes []string, unbound ...int32) Grant {
	r := req(p, int32(len(nodes)), int32(len(nodes)), age)
	return Grant{Request: r, Workers: nodes, Unbound: unbound}
}

func repeat(node string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = node
	}
	return out
}

func allWorkers(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

func gangOf(p string) GangKey { return GangKey{Pipeline: "ns/" + p, Phase: "train"} }

func TestDisplacedWorkersMove(t *testing.T) {
	taken := gpuNode("a", 8)
	taken.Used, taken.LastPod = ResourceList{gpu: Milli(1)}, "ml/intruder"
	cases := map[string]struct {
		nodes  []Node
		ledger []Grant
		want   Plan
	}{
		"the highest unbound index moves to a node that fits": {
			nodes:  []Node{taken, gpuNode("b", 8)},
			ledger: []Grant{grantOn("p", 0, repeat("a", 8), allWorkers(8)...)},
			want: Plan{Moves: []Move{{Gang: gangOf("p"), Reason: MoveDisplaced,
				Workers: []MovedWorker{{Index: 7, From: "a", To: "b"}},
				Message: "node a can no longer hold its reserved workers: pod ml/intruder, which phasegang does not manage, took the capacity (short by nvidia.com/gpu: 1); moved worker 7 to b"}}},
		},
		"bound workers are never moved: only the unbound one goes": {
			nodes:  []Node{taken, gpuNode("b", 8)},
			ledger: []Grant{grantOn("p", 0, repeat("a", 8), 2)},
			want: Plan{Moves: []Move{{Gang: gangOf("p"), Reason: MoveDisplaced,
				Workers: []MovedWorker{{Index: 2, From: "a", To: "b"}},
				Message: "node a can no longer hold its reserved workers: pod ml/intruder, which phasegang does not manage, took the capacity (short by nvidia.com/gpu: 1); moved worker 2 to b"}}},
		},
		"a started gang is not touched": {
			nodes:  []Node{taken, gpuNode("b", 8)},
			ledger: []Grant{grantOn("p", 0, repeat("a", 8))},
			want:   Plan{},
		},
		"the youngest gang on the node gives way": {
			nodes:  []Node{taken, gpuNode("b", 8)},
			ledger: []Grant{grantOn("old", 0, repeat("a", 4), allWorkers(4)...), grantOn("young", 5, repeat("a", 4), allWorkers(4)...)},
			want: Plan{Moves: []Move{{Gang: gangOf("young"), Reason: MoveDisplaced,
				Workers: []MovedWorker{{Index: 3, From: "a", To: "b"}},
				Message: "node a can no longer hold its reserved workers: pod ml/intruder, which phasegang does not manage, took the capacity (short by nvidia.com/gpu: 1); moved worker 3 to b"}}},
		},
		"nowhere to go: the gang is released whole": {
			nodes:  []Node{taken},
			ledger: []Grant{grantOn("p", 0, repeat("a", 8), allWorkers(8)...)},
			want: Plan{Releases: []Release{{Gang: gangOf("p"), Reason: ReleaseDisplaced,
				Message: "node a can no longer hold its reserved workers: pod ml/intruder, which phasegang does not manage, took the capacity (short by nvidia.com/gpu: 1); no other node fits worker 7"}}},
		},
		"all of a gang's lifted workers move, or none": {
			nodes: []Node{
				{Name: "a", Allocatable: ResourceList{gpu: Milli(8)}, Used: ResourceList{gpu: Milli(2)}},
				{Name: "b", Allocatable: ResourceList{gpu: Milli(8)}, Used: ResourceList{gpu: Milli(7)}},
			},
			ledger: []Grant{grantOn("p", 0, repeat("a", 8), allWorkers(8)...)},
			want: Plan{Releases: []Release{{Gang: gangOf("p"), Reason: ReleaseDisplaced,
				Message: "node a can no longer hold its reserved workers: pods phasegang does not manage took the capacity (short by nvidia.com/gpu: 2); no other node fits workers 6, 7"}}},
		},
		"capacity held by leaving pods is waited out": {
			nodes:  []Node{{Name: "a", Allocatable: ResourceList{gpu: Milli(8)}, Used: ResourceList{gpu: Milli(1)}, Leaving: ResourceList{gpu: Milli(1)}}, gpuNode("b", 8)},
			ledger: []Grant{grantOn("p", 0, repeat("a", 8), allWorkers(8)...)},
			want:   Plan{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Schedule(DefaultConfig(), Snapshot{Now: t0, Nodes: tc.nodes, Ledger: tc.ledger})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// The capacity a released gang gives back is used in the same cycle: the
// queue's next gang is admitted on it, and the ledger never overcommits.
func TestDisplacedReleaseFreesCapacity(t *testing.T) {
	taken := gpuNode("a", 8)
	taken.Used = ResourceList{gpu: Milli(4)}
	s := NewState(DefaultConfig(), []Node{taken}, []Grant{grantOn("p", 0, repeat("a", 8), allWorkers(8)...)})
	s.Submit(req("q", 4, 4, 1))
	plan := s.Cycle(t0)
	if len(plan.Releases) != 1 || plan.Releases[0].Reason != ReleaseDisplaced || len(plan.Reserves) != 1 {
		t.Fatalf("want p released Displaced and q reserved, got %+v", plan)
	}
	if free, _ := s.Free("a"); free[gpu] != 0 {
		t.Errorf("free GPUs on a after the cycle = %d, want 0", free[gpu])
	}
}

// A moved worker stays unbound (its pod must be made again), and the next
// cycle over the same cluster moves nothing.
func TestMoveIsStable(t *testing.T) {
	taken := gpuNode("a", 8)
	taken.Used = ResourceList{gpu: Milli(1)}
	nodes := []Node{taken, gpuNode("b", 8)}
	s := NewState(DefaultConfig(), nodes, []Grant{grantOn("p", 0, repeat("a", 8), allWorkers(8)...)})
	if plan := s.Cycle(t0); len(plan.Moves) != 1 {
		t.Fatalf("want one move, got %+v", plan)
	}
	g, _ := s.Grant(gangOf("p"))
	if diff := cmp.Diff(allWorkers(8), g.Unbound); diff != "" {
		t.Errorf("unbound after the move (-want +got):\n%s", diff)
	}
	if plan := Schedule(DefaultConfig(), Snapshot{Now: t0, Nodes: nodes, Ledger: []Grant{g}}); len(plan.Moves)+len(plan.Releases) != 0 {
		t.Errorf("the next cycle changes the grant again: %+v", plan)
	}
}

func TestRefusedWorkers(t *testing.T) {
	refusal := "Unschedulable: 0/2 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."
	refused := func(g Grant) Grant {
		g.Refused = []RefusedWorker{{Index: 1, Message: refusal}}
		return g
	}
	cases := map[string]struct {
		nodes  []Node
		ledger []Grant
		want   Plan
	}{
		"moved to a node that fits on free capacity": {
			nodes:  []Node{gpuNode("a", 8), gpuNode("b", 8)},
			ledger: []Grant{refused(grantOn("p", 0, repeat("a", 2), 0, 1))},
			want: Plan{Moves: []Move{{Gang: gangOf("p"), Reason: MoveRefused,
				Workers: []MovedWorker{{Index: 1, From: "a", To: "b"}},
				Message: "kube-scheduler refused worker 1 on node a (" + refusal + "); moved worker 1 to b"}}},
		},
		"no other node fits: it stays, and the plan says so": {
			nodes:  []Node{gpuNode("a", 8), {Name: "b", Allocatable: ResourceList{gpu: Milli(8)}, Used: ResourceList{gpu: Milli(8)}}},
			ledger: []Grant{refused(grantOn("p", 0, repeat("a", 2), 0, 1))},
			want: Plan{Refused: []Refusal{{Gang: gangOf("p"), Index: 1, Node: "a",
				Message: "kube-scheduler refused worker 1 on node a (" + refusal + "); no other node fits it now, so it stays reserved there"}}},
		},
		"moved for a refusal before: it stays, and the plan says so": {
			nodes: []Node{gpuNode("a", 8), gpuNode("b", 8)},
			ledger: []Grant{func() Grant {
				g := refused(grantOn("p", 0, repeat("a", 2), 0, 1))
				g.Refused[0].Moved = 1
				return g
			}()},
			want: Plan{Refused: []Refusal{{Gang: gangOf("p"), Index: 1, Node: "a",
				Message: "kube-scheduler refused worker 1 on node a (" + refusal + "); it was moved for a refusal before, so it stays reserved there"}}},
		},
		"pods being deleted on its node hold what it needs: it waits": {
			nodes: []Node{
				{Name: "a", Allocatable: ResourceList{gpu: Milli(8)}, Used: ResourceList{gpu: Milli(6)}, Leaving: ResourceList{gpu: Milli(6)}},
				gpuNode("b", 8),
			},
			ledger: []Grant{refused(grantOn("p", 0, repeat("a", 2), 0, 1))},
			want:   Plan{},
		},
		"a bound worker is not moved, whatever its pod once said": {
			nodes:  []Node{gpuNode("a", 8), gpuNode("b", 8)},
			ledger: []Grant{refused(grantOn("p", 0, repeat("a", 2), 0))},
			want:   Plan{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Schedule(DefaultConfig(), Snapshot{Now: t0, Nodes: tc.nodes, Ledger: tc.ledger})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}
