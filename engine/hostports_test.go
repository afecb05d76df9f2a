package engine_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

func TestHostPortConflicts(t *testing.T) {
	cases := map[string]struct {
		a, b engine.HostPort
		want bool
	}{
		"same port, defaults":                {engine.HostPort{Port: 8080}, engine.HostPort{Protocol: "TCP", Port: 8080, HostIP: "0.0.0.0"}, true},
		"another port":                       {engine.HostPort{Port: 8080}, engine.HostPort{Port: 8081}, false},
		"another protocol":                   {engine.HostPort{Port: 8080}, engine.HostPort{Protocol: "UDP", Port: 8080}, false},
		"two addresses":                      {engine.HostPort{Port: 8080, HostIP: "10.0.0.1"}, engine.HostPort{Port: 8080, HostIP: "10.0.0.2"}, false},
		"one address and every address":      {engine.HostPort{Port: 8080, HostIP: "10.0.0.1"}, engine.HostPort{Port: 8080}, true},
		"the same address":                   {engine.HostPort{Port: 8080, HostIP: "10.0.0.1"}, engine.HostPort{Port: 8080, HostIP: "10.0.0.1"}, true},
		"no port binds nothing":              {engine.HostPort{}, engine.HostPort{}, false},
		"every address and one address, too": {engine.HostPort{Port: 53, Protocol: "UDP"}, engine.HostPort{Port: 53, Protocol: "UDP", HostIP: "::1"}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.a.Conflicts(tc.b); got != tc.want {
				t.Errorf("%v.Conflicts(%v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
			if got := tc.b.Conflicts(tc.a); got != tc.want {
				t.Errorf("%v.Conflicts(%v) = %v, want %v (not symmetric)", tc.b, tc.a, got, tc.want)
			}
		})
	}
}

func TestHostPortPlacement(t *testing.T) {
	two := []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)}
	taken := wrappers.EngineNode("c", 8)
	taken.HostPorts = []engine.HostPort{{Protocol: "TCP", Port: 8080}}
	cases := map[string]struct {
		nodes  []engine.Node
		ledger []engine.Grant
		queue  []engine.Request
		// want maps each reserved gang's pipeline to its workers per node.
		want       map[string]map[string]int
		infeasible string
	}{
		"a gang with a host port spreads one worker per node": {
			nodes: two, queue: []engine.Request{wrappers.Gang("p", 2, 2, 0, wrappers.HostPort(8080))},
			want: map[string]map[string]int{"ns/p": {"a": 1, "b": 1}},
		},
		"more workers than nodes can never fit": {
			nodes: two, queue: []engine.Request{wrappers.Gang("p", 4, 4, 0, wrappers.HostPort(8080))},
			infeasible: "needs 4 workers at once, each binding host port TCP/8080, so at most one per node, but 2 of the 2 matching nodes can hold a worker of {nvidia.com/gpu: 1} even when empty",
		},
		"a node whose pod binds the port is avoided": {
			nodes: []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8), taken}, queue: []engine.Request{wrappers.Gang("p", 2, 2, 0, wrappers.HostPort(8080))},
			want: map[string]map[string]int{"ns/p": {"a": 1, "b": 1}},
		},
		"another gang's port on the nodes: it waits": {
			nodes:  two,
			ledger: []engine.Grant{{Request: wrappers.Gang("old", 2, 2, 0, wrappers.HostPort(8080)), Workers: []string{"a", "b"}}},
			queue:  []engine.Request{wrappers.Gang("p", 1, 1, 1, wrappers.HostPort(8080))},
			want:   map[string]map[string]int{},
		},
		"another port shares the nodes": {
			nodes:  two,
			ledger: []engine.Grant{{Request: wrappers.Gang("old", 2, 2, 0, wrappers.HostPort(8080)), Workers: []string{"a", "b"}}},
			queue:  []engine.Request{wrappers.Gang("p", 2, 2, 1, wrappers.HostPort(9090))},
			want:   map[string]map[string]int{"ns/p": {"a": 1, "b": 1}},
		},
		"required anti-affinity between its own workers: one per node": {
			nodes: two, queue: []engine.Request{wrappers.Gang("p", 2, 2, 0, wrappers.OnePerNode())},
			want: map[string]map[string]int{"ns/p": {"a": 1, "b": 1}},
		},
		"required anti-affinity: more workers than nodes can never fit": {
			nodes: two, queue: []engine.Request{wrappers.Gang("p", 3, 3, 0, wrappers.OnePerNode())},
			infeasible: "needs 3 workers at once, and its required pod anti-affinity (kubernetes.io/hostname) allows at most one per node, but 2 of the 2 matching nodes can hold a worker of {nvidia.com/gpu: 1} even when empty",
		},
		"required anti-affinity: growth goes to nodes the gang is not on": {
			nodes:  []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8), wrappers.EngineNode("c", 8)},
			ledger: []engine.Grant{{Request: wrappers.Gang("p", 1, 4, 0, wrappers.OnePerNode()), Workers: []string{"b"}}},
			want:   map[string]map[string]int{"ns/p": {"a": 1, "c": 1}},
		},
		"required anti-affinity does not keep other gangs away": {
			nodes:  []engine.Node{wrappers.EngineNode("a", 8)},
			ledger: []engine.Grant{{Request: wrappers.Gang("old", 1, 1, 0, wrappers.OnePerNode()), Workers: []string{"a"}}},
			queue:  []engine.Request{wrappers.Gang("p", 1, 1, 1, wrappers.OnePerNode())},
			want:   map[string]map[string]int{"ns/p": {"a": 1}},
		},
		"an elastic gang grows only onto nodes it is not on": {
			nodes: []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8), wrappers.EngineNode("c", 8)}, queue: []engine.Request{wrappers.Gang("p", 1, 5, 0, wrappers.HostPort(8080))},
			want: map[string]map[string]int{"ns/p": {"a": 1, "b": 1, "c": 1}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: tc.nodes, Ledger: tc.ledger, Queue: tc.queue})
			if tc.infeasible != "" {
				if len(plan.Infeasible) != 1 || plan.Infeasible[0].Message != tc.infeasible {
					t.Fatalf("infeasible %+v, want %q", plan.Infeasible, tc.infeasible)
				}
				return
			}
			got := map[string]map[string]int{}
			for _, rv := range append(plan.Reserves, plan.Grows...) {
				for n, k := range nodesOf(rv) {
					if got[rv.Gang.Pipeline] == nil {
						got[rv.Gang.Pipeline] = map[string]int{}
					}
					got[rv.Gang.Pipeline][n] += k
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("placement (-want +got):\n%s", diff)
			}
		})
	}
}

// A pod phasegang does not manage that binds a granted worker's host port
// on its node before the worker binds displaces it, as capacity would.
func TestHostPortTakenDisplaces(t *testing.T) {
	a := wrappers.EngineNode("a", 8)
	a.HostPorts = []engine.HostPort{{Port: 8080}, {Port: 22}} // only the one it needs is named
	plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: []engine.Node{a, wrappers.EngineNode("b", 8)},
		Ledger: []engine.Grant{{Request: wrappers.Gang("p", 1, 1, 0, wrappers.HostPort(8080)), Workers: []string{"a"}, Unbound: []int32{0}}}})
	want := []engine.Move{{Gang: wrappers.GangKey("p"), Reason: engine.MoveDisplaced, Workers: []engine.MovedWorker{{Index: 0, From: "a", To: "b"}},
		Message: "node a can no longer hold its reserved workers: a pod phasegang does not manage binds host port TCP/8080 there; moved worker 0 to b"}}
	if diff := cmp.Diff(want, plan.Moves); diff != "" {
		t.Errorf("moves (-want +got):\n%s", diff)
	}
}
