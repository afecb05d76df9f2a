package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHostPortConflicts(t *testing.T) {
	cases := map[string]struct {
		a, b HostPort
		want bool
	}{
		"same port, defaults":                {HostPort{Port: 8080}, HostPort{Protocol: "TCP", Port: 8080, HostIP: "0.0.0.0"}, true},
		"another port":                       {HostPort{Port: 8080}, HostPort{Port: 8081}, false},
		"another protocol":                   {HostPort{Port: 8080}, HostPort{Protocol: "UDP", Port: 8080}, false},
		"two addresses":                      {HostPort{Port: 8080, HostIP: "10.0.0.1"}, HostPort{Port: 8080, HostIP: "10.0.0.2"}, false},
		"one address and every address":      {HostPort{Port: 8080, HostIP: "10.0.0.1"}, HostPort{Port: 8080}, true},
		"the same address":                   {HostPort{Port: 8080, HostIP: "10.0.0.1"}, HostPort{Port: 8080, HostIP: "10.0.0.1"}, true},
		"no port binds nothing":              {HostPort{}, HostPort{}, false},
		"every address and one address, too": {HostPort{Port: 53, Protocol: "UDP"}, HostPort{Port: 53, Protocol: "UDP", HostIP: "::1"}, true},
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

func portReq(p string, min, desired int32, age int, port int32) Request {
	r := req(p, min, desired, age)
	r.HostPorts = []HostPort{{Port: port}}
	return r
}

func spreadReq(p string, min, desired int32, age int) Request {
	r := req(p, min, desired, age)
	r.OnePerNode = true
	return r
}

func TestHostPortPlacement(t *testing.T) {
	two := []Node{gpuNode("a", 8), gpuNode("b", 8)}
	taken := gpuNode("c", 8)
	taken.HostPorts = []HostPort{{Protocol: "TCP", Port: 8080}}
	cases := map[string]struct {
		nodes  []Node
		ledger []Grant
		queue  []Request
		// want maps each reserved gang's pipeline to its workers per node.
		want       map[string]map[string]int
		infeasible string
	}{
		"a gang with a host port spreads one worker per node": {
			nodes: two, queue: []Request{portReq("p", 2, 2, 0, 8080)},
			want: map[string]map[string]int{"ns/p": {"a": 1, "b": 1}},
		},
		"more workers than nodes can never fit": {
			nodes: two, queue: []Request{portReq("p", 4, 4, 0, 8080)},
			infeasible: "needs 4 workers at once, each binding host port TCP/8080, so at most one per node, but 2 of the 2 matching nodes can hold a worker of {nvidia.com/gpu: 1} even when empty",
		},
		"a node whose pod binds the port is avoided": {
			nodes: []Node{gpuNode("a", 8), gpuNode("b", 8), taken}, queue: []Request{portReq("p", 2, 2, 0, 8080)},
			want: map[string]map[string]int{"ns/p": {"a": 1, "b": 1}},
		},
		"another gang's port on the nodes: it waits": {
			nodes:  two,
			ledger: []Grant{{Request: portReq("old", 2, 2, 0, 8080), Workers: []string{"a", "b"}}},
			queue:  []Request{portReq("p", 1, 1, 1, 8080)},
			want:   map[string]map[string]int{},
		},
		"another port shares the nodes": {
			nodes:  two,
			ledger: []Grant{{Request: portReq("old", 2, 2, 0, 8080), Workers: []string{"a", "b"}}},
			queue:  []Request{portReq("p", 2, 2, 1, 9090)},
			want:   map[string]map[string]int{"ns/p": {"a": 1, "b": 1}},
		},
		"required anti-affinity between its own workers: one per node": {
			nodes: two, queue: []Request{spreadReq("p", 2, 2, 0)},
			want: map[string]map[string]int{"ns/p": {"a": 1, "b": 1}},
		},
		"required anti-affinity: more workers than nodes can never fit": {
			nodes: two, queue: []Request{spreadReq("p", 3, 3, 0)},
			infeasible: "needs 3 workers at once, and its required pod anti-affinity (kubernetes.io/hostname) allows at most one per node, but 2 of the 2 matching nodes can hold a worker of {nvidia.com/gpu: 1} even when empty",
		},
		"required anti-affinity: growth goes to nodes the gang is not on": {
			nodes:  []Node{gpuNode("a", 8), gpuNode("b", 8), gpuNode("c", 8)},
			ledger: []Grant{{Request: spreadReq("p", 1, 4, 0), Workers: []string{"b"}}},
			want:   map[string]map[string]int{"ns/p": {"a": 1, "c": 1}},
		},
		"required anti-affinity does not keep other gangs away": {
			nodes:  []Node{gpuNode("a", 8)},
			ledger: []Grant{{Request: spreadReq("old", 1, 1, 0), Workers: []string{"a"}}},
			queue:  []Request{spreadReq("p", 1, 1, 1)},
			want:   map[string]map[string]int{"ns/p": {"a": 1}},
		},
		"an elastic gang grows only onto nodes it is not on": {
			nodes: []Node{gpuNode("a", 8), gpuNode("b", 8), gpuNode("c", 8)}, queue: []Request{portReq("p", 1, 5, 0, 8080)},
			want: map[string]map[string]int{"ns/p": {"a": 1, "b": 1, "c": 1}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			plan := Schedule(DefaultConfig(), Snapshot{Now: t0, Nodes: tc.nodes, Ledger: tc.ledger, Queue: tc.queue})
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
	a := gpuNode("a", 8)
	a.HostPorts = []HostPort{{Port: 8080}, {Port: 22}} // only the one it needs is named
	plan := Schedule(DefaultConfig(), Snapshot{Now: t0, Nodes: []Node{a, gpuNode("b", 8)},
		Ledger: []Grant{{Request: portReq("p", 1, 1, 0, 8080), Workers: []string{"a"}, Unbound: []int32{0}}}})
	want := []Move{{Gang: gangOf("p"), Reason: MoveDisplaced, Workers: []MovedWorker{{Index: 0, From: "a", To: "b"}},
		Message: "node a can no longer hold its reserved workers: a pod phasegang does not manage binds host port TCP/8080 there; moved worker 0 to b"}}
	if diff := cmp.Diff(want, plan.Moves); diff != "" {
		t.Errorf("moves (-want +got):\n%s", diff)
	}
}
