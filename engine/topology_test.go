package engine_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

const (
	block = 0
	rack  = 1
	host  = 2
)

// racks is block b1 with racks r1 and r2, block b2 with r3 and r4, two
// 8-GPU nodes per rack; used[i] GPUs of node i (r1a, r1b, r2a, ...) are
// taken by pods no grant covers.
func racks(used ...int64) []engine.Node {
	var out []engine.Node
	for i, name := range []string{"r1a", "r1b", "r2a", "r2b", "r3a", "r3b", "r4a", "r4b"} {
		var u int64
		if i < len(used) {
			u = used[i]
		}
		b := "b1"
		if name[1] >= '3' {
			b = "b2"
		}
		out = append(out, wrappers.TopoNode(name, 8, u, b, name[:2]))
	}
	return out
}

// racksOf is the rack of each worker of gang p's reservation.
func racksOf(t *testing.T, plan engine.Plan, p string) []string {
	t.Helper()
	for _, r := range plan.Reserves {
		if r.Gang.Pipeline == "ns/"+p {
			out := make([]string, len(r.Workers))
			for i, w := range r.Workers {
				out[i] = w.Node[:2]
			}
			return out
		}
	}
	t.Fatalf("%s was not reserved; waiting: %v, infeasible: %v", p, plan.Waiting, plan.Infeasible)
	return nil
}

func schedule(nodes []engine.Node, queue []engine.Request, ledger ...engine.Grant) engine.Plan {
	return engine.Schedule(engine.Config{StarvationBound: time.Hour},
		engine.Snapshot{Now: Epoch.Add(time.Minute), Nodes: nodes, Queue: queue, Ledger: ledger})
}

func distinct(xs []string) map[string]int {
	out := map[string]int{}
	for _, x := range xs {
		out[x]++
	}
	return out
}

func TestRequiredPlacesTheGangInOneDomain(t *testing.T) {
	// Free: r1 16-10=6, r2 16, r3 16-4=12, r4 16-15=1. 12 workers fit in
	// r2 or r3; best fit is r3 (12 of 12).
	nodes := racks(5, 5, 0, 0, 2, 2, 8, 7)
	plan := schedule(nodes, []engine.Request{wrappers.Gang("p", 12, 12, 0, wrappers.Topo(rack, true))})
	if got := distinct(racksOf(t, plan, "p")); !cmp.Equal(got, map[string]int{"r3": 12}) {
		t.Errorf("racks %v, want all 12 in r3", got)
	}
}

func TestRequiredWaitsRatherThanSplit(t *testing.T) {
	// 8+8+8+8 GPUs free in four racks: 32 free, but no rack has 12.
	nodes := racks(4, 4, 4, 4, 4, 4, 4, 4)
	plan := schedule(nodes, []engine.Request{wrappers.Gang("p", 12, 12, 0, wrappers.Topo(rack, true))})
	if len(plan.Reserves) != 0 {
		t.Fatalf("reserved %v, want it to wait", plan.Reserves)
	}
	if len(plan.Waiting) != 1 || !strings.Contains(plan.Waiting[0].Message(), "no example.com/rack has room for all 12 workers now; the best, r1, has room for 8") {
		t.Errorf("waiting %+v, want the level and the best rack's numbers", plan.Waiting)
	}
	// preferred spans two racks instead.
	plan = schedule(nodes, []engine.Request{wrappers.Gang("p", 12, 12, 0, wrappers.Topo(rack, false))})
	if got := distinct(racksOf(t, plan, "p")); len(got) != 2 {
		t.Errorf("preferred: racks %v, want 2", got)
	}
}

func TestRequiredIsFragmentationAware(t *testing.T) {
	// Workers of 2 GPUs; rack r1 has 3+3 GPUs free = 6, but room for 2
	// workers only; r2 is full. 3 workers (6 GPUs) do not fit in r1.
	nodes := racks(5, 5, 8, 8, 8, 8, 8, 8)
	two := func(r *engine.Request) { r.Footprint = engine.ResourceList{wrappers.GPU: engine.Milli(2)} }
	plan := schedule(nodes, []engine.Request{wrappers.Gang("p", 3, 3, 0, two, wrappers.Topo(rack, true))})
	if len(plan.Reserves) != 0 {
		t.Fatalf("reserved %v, want it to wait: r1's 6 free GPUs hold only 2 workers of 2", plan.Reserves)
	}
}

func TestPreferredSpansTheFewestDomains(t *testing.T) {
	// Free: r1 8, r2 8, r3 4, r4 0. 12 workers: r1 or r2 (8) + r3 (4)
	// would be 2 racks, as would r1 + r2; never 3.
	nodes := racks(4, 4, 4, 4, 6, 6, 8, 8)
	plan := schedule(nodes, []engine.Request{wrappers.Gang("p", 12, 12, 0, wrappers.Topo(rack, false))})
	if got := distinct(racksOf(t, plan, "p")); len(got) != 2 {
		t.Errorf("racks %v, want 2", got)
	}
}

func TestPreferredStaysInOneBlockWhenOneHoldsIt(t *testing.T) {
	// Free: b1 = r1 6 + r2 6 = 12; b2 = r3 10 + r4 0 = 10. No rack holds
	// 12; largest-first would take r3's 10 and 2 more elsewhere (two
	// blocks); block b1 holds all 12 in two racks.
	nodes := racks(5, 5, 5, 5, 3, 3, 8, 8)
	plan := schedule(nodes, []engine.Request{wrappers.Gang("p", 12, 12, 0, wrappers.Topo(rack, false))})
	if got := distinct(racksOf(t, plan, "p")); !cmp.Equal(got, map[string]int{"r1": 6, "r2": 6}) {
		t.Errorf("racks %v, want r1 6 + r2 6 (one block)", got)
	}
}

func TestTopologyNeverFits(t *testing.T) {
	// A rack has 16 GPUs: no rack ever holds 24.
	plan := schedule(racks(), []engine.Request{wrappers.Gang("p", 24, 24, 0, wrappers.Topo(rack, true))})
	want := "needs 24 workers of {nvidia.com/gpu: 1} in one example.com/rack, but no example.com/rack holds them even empty: the largest, r1, holds 16"
	if len(plan.Infeasible) != 1 || plan.Infeasible[0].Message != want {
		t.Errorf("infeasible %+v, want %q", plan.Infeasible, want)
	}
	// A level the cluster does not have.
	r := wrappers.Gang("q", 1, 1, 0, wrappers.Topo(rack, true))
	r.Topology.Level, r.Topology.LevelName = -1, "example.com/zone"
	plan = schedule(racks(), []engine.Request{r})
	if len(plan.Infeasible) != 1 || !strings.Contains(plan.Infeasible[0].Message, "example.com/zone is not one of the cluster's topology levels") {
		t.Errorf("infeasible %+v, want the unknown level named", plan.Infeasible)
	}
}

func TestSlicesStayWithinTheirDomain(t *testing.T) {
	// Free per node: 3 on every node but r2a (8). 8 workers in slices of
	// 4 per host: only r2a holds a slice of 4, so only 2 slices could
	// ever fit... r2a holds two slices.
	nodes := racks(5, 5, 0, 5, 5, 5, 5, 5)
	plan := schedule(nodes, []engine.Request{wrappers.Gang("p", 8, 8, 0, wrappers.Topo(rack, false), wrappers.Slices(4, host))})
	r := plan.Reserves
	if len(r) != 1 {
		t.Fatalf("reserves %v waiting %v", r, plan.Waiting)
	}
	for i, w := range r[0].Workers {
		if w.Node != "r2a" {
			t.Errorf("worker %d on %s, want r2a: the other hosts have room for 3 < 4", i, w.Node)
		}
	}
	// 12 workers: the third slice fits no host.
	plan = schedule(nodes, []engine.Request{wrappers.Gang("p", 12, 12, 0, wrappers.Topo(rack, false), wrappers.Slices(4, host))})
	if len(plan.Reserves) != 0 || len(plan.Waiting) != 1 || !strings.Contains(plan.Waiting[0].Message(), "room for 8 of its 12 workers now (in slices of 4 within one kubernetes.io/hostname)") {
		t.Errorf("reserves %v waiting %+v, want it to wait, saying the slices are short", plan.Reserves, plan.Waiting)
	}
	// Slices of 2 per host: consecutive workers share a host.
	plan = schedule(racks(), []engine.Request{wrappers.Gang("p", 6, 6, 0, wrappers.Topo(block, false), wrappers.Slices(2, host))})
	w := plan.Reserves[0].Workers
	for i := 0; i < len(w); i += 2 {
		if w[i].Node != w[i+1].Node {
			t.Errorf("slice %d on %s and %s, want one host", i/2, w[i].Node, w[i+1].Node)
		}
	}
}

func TestSameDomainAs(t *testing.T) {
	// train ran on r3; r2 is the tightest fit for 4, but validate goes to r3.
	nodes := racks(8, 8, 6, 6, 0, 0, 8, 8)
	near := []engine.Request{wrappers.Gang("p", 4, 4, 0, wrappers.Topo(rack, false), wrappers.Near("r3a", "r3b"))}
	if got := distinct(racksOf(t, schedule(nodes, near), "p")); !cmp.Equal(got, map[string]int{"r3": 4}) {
		t.Errorf("preferred near r3: racks %v, want r3", got)
	}
	// r3 full: preferred goes elsewhere, required waits.
	nodes = racks(8, 8, 6, 6, 8, 8, 8, 8)
	if got := distinct(racksOf(t, schedule(nodes, near), "p")); !cmp.Equal(got, map[string]int{"r2": 4}) {
		t.Errorf("preferred near a full r3: racks %v, want r2", got)
	}
	req := []engine.Request{wrappers.Gang("p", 4, 4, 0, wrappers.Topo(rack, true), wrappers.Near("r3a", "r3b"))}
	plan := schedule(nodes, req)
	if len(plan.Reserves) != 0 || len(plan.Waiting) != 1 || !strings.Contains(plan.Waiting[0].Message(), "example.com/rack r3 (where its earlier phase ran) has room for 0 of its 4 workers now") {
		t.Errorf("required near a full r3: reserves %v waiting %+v, want it to wait for r3", plan.Reserves, plan.Waiting)
	}
}

func TestElasticGrowsInsideItsDomain(t *testing.T) {
	// A 2..8 gang holds 2 workers on r3a; r1 is empty, r3 has 6 more
	// free: it grows to 8 in r3, not onto the empty r1 node.
	nodes := racks(0, 0, 8, 8, 0, 8, 8, 8)
	r := wrappers.Gang("p", 2, 8, 0, wrappers.Topo(rack, false))
	plan := schedule(nodes, nil, wrappers.Grant(r, []string{"r3a", "r3a"}))
	if len(plan.Grows) != 1 {
		t.Fatalf("grows %v, want one", plan.Grows)
	}
	for _, w := range plan.Grows[0].Workers {
		if w.Node[:2] != "r3" {
			t.Errorf("grew worker %d onto %s, want r3", w.Index, w.Node)
		}
	}
}

// A starving head whose rack is required fences the nodes of one rack,
// the one with the most room now, not the roomiest nodes of several
// racks: capacity fenced across racks could never hold it together.
// With sameDomainAs it fences its earlier phase's rack.
func TestStarvingRequiredHeadFencesOneDomain(t *testing.T) {
	// 4 workers of 4 GPUs: each rack (2 nodes × 8) holds them empty.
	// Running gangs of 4-GPU workers leave room now for one worker in
	// r1 (r1a), r2 (r2b) and r4 (r4b), none in r3.
	four := func(r *engine.Request) { r.Footprint = engine.ResourceList{wrappers.GPU: engine.Milli(4)} }
	var ledger []engine.Grant
	for i, on := range [][]string{
		{"r1a", "r1b", "r1b"}, {"r2a", "r2a", "r2b"}, {"r3a", "r3a", "r3b", "r3b"}, {"r4a", "r4a", "r4b"},
	} {
		n := int32(len(on))
		ledger = append(ledger, wrappers.Grant(wrappers.Gang(fmt.Sprintf("run%d", i), n, n, 1, four), on))
	}
	fenced := func(opts ...wrappers.GangOpt) []string {
		head := wrappers.Gang("head", 4, 4, 0, append([]wrappers.GangOpt{four, wrappers.Topo(rack, true)}, opts...)...)
		plan := engine.Schedule(engine.Config{StarvationBound: time.Minute},
			engine.Snapshot{Now: Epoch.Add(time.Hour), Nodes: racks(), Queue: []engine.Request{head}, Ledger: ledger})
		if len(plan.Reserves) != 0 || plan.Fence == nil {
			t.Fatalf("reserved %v, fence %v: want the head to wait and fence", plan.Reserves, plan.Fence)
		}
		return plan.Fence.Nodes
	}
	// Topology-blind, the roomiest nodes are r1a and r2b: two racks.
	// r1, r2 and r4 tie on room now and ever; r1 comes first.
	if got := fenced(); !cmp.Equal(got, []string{"r1a", "r1b"}) {
		t.Errorf("fence %v, want rack r1's nodes", got)
	}
	if got := fenced(wrappers.Near("r4a")); !cmp.Equal(got, []string{"r4a", "r4b"}) {
		t.Errorf("sameDomainAs r4: fence %v, want rack r4's nodes", got)
	}
}
