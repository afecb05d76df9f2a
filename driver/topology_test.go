package driver

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

func TestSetDomains(t *testing.T) {
	nodes := []engine.Node{
		{Name: "a", Labels: map[string]string{"example.com/block": "b1", "example.com/rack": "r1", "kubernetes.io/hostname": "a"}},
		{Name: "b", Labels: map[string]string{"example.com/rack": "r2", "kubernetes.io/hostname": "b"}},
	}
	SetDomains(nodes, wrappers.TopoLevels)
	got := [][]string{nodes[0].Domain, nodes[1].Domain}
	want := [][]string{{"b1", "r1", "a"}, {"", "r2", "b"}}
	if !cmp.Equal(got, want) {
		t.Errorf("domains %v, want %v", got, want)
	}
}

func TestDemandCarriesTheTopology(t *testing.T) {
	// train ran on r3a, r3b; validate (sameDomainAs train, required rack)
	// is queued; test (preferred zone, unknown to the cluster) is upcoming.
	pt := wrappers.MakePT("job").Phase("train", 2).Topology(v1alpha1.PhaseTopology{Preferred: "example.com/rack", SliceSize: ptr.To[int32](2), SliceLevel: "kubernetes.io/hostname"}).
		Phase("validate", 1).DependsOn("train").Topology(v1alpha1.PhaseTopology{Required: "example.com/rack", SameDomainAs: "train"}).
		Phase("test", 1).DependsOn("validate").Topology(v1alpha1.PhaseTopology{Preferred: "example.com/zone"}).
		Status(wrappers.PhaseIn("train", v1alpha1.PhaseSucceeded), wrappers.Queued("validate")).Obj()
	pt.Status.Phases[0].Assignments = []string{"r3a", "r3b"}
	pt.Status.ObservedGeneration = pt.Generation
	d := Demand{Levels: wrappers.TopoLevels}
	d.Add(pt, nil)
	if len(d.Queue) != 1 || len(d.Upcoming) != 1 {
		t.Fatalf("queue %v upcoming %v, want validate queued and test upcoming", d.Queue, d.Upcoming)
	}
	want := &engine.Topology{Level: 1, LevelName: "example.com/rack", Required: true, Near: []string{"r3a", "r3b"}}
	if diff := cmp.Diff(want, d.Queue[0].Topology); diff != "" {
		t.Errorf("validate's topology (-want +got):\n%s", diff)
	}
	want = &engine.Topology{Level: -1, LevelName: "example.com/zone"}
	if diff := cmp.Diff(want, d.Upcoming[0].Topology); diff != "" {
		t.Errorf("test's topology (-want +got):\n%s", diff)
	}
	train := TopologyOf(pt, &pt.Spec.Phases[0], 0, wrappers.TopoLevels)
	want = &engine.Topology{Level: 1, LevelName: "example.com/rack", SliceSize: 2, SliceLevel: 2, SliceLevelName: "kubernetes.io/hostname"}
	if diff := cmp.Diff(want, train); diff != "" {
		t.Errorf("train's topology (-want +got):\n%s", diff)
	}
}

// With the nodes' domains, a grant writes each worker's domain beside its
// node (status.phases[].domains), and every later change of the workers
// (growth, shrink, a requeue) keeps the two lists parallel.
func TestApplyPlanWritesWorkerDomains(t *testing.T) {
	nodes := []engine.Node{
		{Name: "n1", Labels: map[string]string{"example.com/block": "b1", "example.com/rack": "r1", "kubernetes.io/hostname": "n1"}},
		{Name: "n2", Labels: map[string]string{"example.com/block": "b1", "example.com/rack": "r2", "kubernetes.io/hostname": "n2"}},
		{Name: "n3"},
		{Name: "n4", Labels: map[string]string{"example.com/block": "b2", "kubernetes.io/hostname": "n4"}},
		{Name: "n5", Labels: map[string]string{"example.com/rack": "r5", "kubernetes.io/hostname": "n5"}},
	}
	SetDomains(nodes, wrappers.TopoLevels)
	nd := NodeDomains(nodes)
	if want := map[string]string{"n1": "b1/r1/n1", "n2": "b1/r2/n2", "n4": "b2"}; !cmp.Equal(nd, want) {
		t.Fatalf("NodeDomains %v, want %v", nd, want)
	}
	if NodeDomains([]engine.Node{{Name: "n1"}}) != nil {
		t.Error("NodeDomains without levels is not nil")
	}
	pt := wrappers.MakePT("job").Phase("train", 2).Desired(3).Status(wrappers.Queued("train")).Obj()
	pt.Status.ObservedGeneration = pt.Generation
	step := func(plan engine.Plan) []string {
		t.Helper()
		d := demandOf(pt)
		d.NodeDomains = nd
		changes := Changes{}
		ApplyPlan(plan, d, time.Now(), changes)
		pt = after(t, pt, changes)
		ps := pt.Status.Phases[0]
		if len(ps.Domains) != len(ps.Assignments) {
			t.Fatalf("domains %v beside assignments %v", ps.Domains, ps.Assignments)
		}
		return ps.Domains
	}
	key := gang("job", "train")
	if got, want := step(engine.Plan{Reserves: []engine.Reservation{{Gang: key,
		Workers: []engine.WorkerPlacement{{Index: 0, Node: "n2"}, {Index: 1, Node: "n1"}}}}}), []string{"b1/r2/n2", "b1/r1/n1"}; !cmp.Equal(got, want) {
		t.Errorf("reserved: domains %v, want %v", got, want)
	}
	if got, want := step(engine.Plan{Grows: []engine.Reservation{{Gang: key, Workers: []engine.WorkerPlacement{{Index: 2, Node: "n1"}}}}}),
		[]string{"b1/r2/n2", "b1/r1/n1", "b1/r1/n1"}; !cmp.Equal(got, want) {
		t.Errorf("grown: domains %v, want %v", got, want)
	}
	if got, want := step(engine.Plan{Shrinks: []engine.Shrink{{Gang: key, Workers: []engine.WorkerPlacement{{Index: 2, Node: "n1"}}}}}),
		[]string{"b1/r2/n2", "b1/r1/n1"}; !cmp.Equal(got, want) {
		t.Errorf("shrunk: domains %v, want %v", got, want)
	}
	if got := step(engine.Plan{Releases: []engine.Release{{Gang: key, Reason: engine.ReleaseNodeLost, Message: "node n2 was lost"}}}); got != nil {
		t.Errorf("requeued: domains %v, want none", got)
	}
}
