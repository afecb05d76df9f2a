package driver

import (
	"testing"

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
