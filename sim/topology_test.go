package sim

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// blind is sc with every phase's topology removed: the same cluster and
// slowdown model, placement blind to racks.
func blind(sc *Scenario) *Scenario {
	out := *sc
	out.Workload = make([]Workload, len(sc.Workload))
	for i, w := range sc.Workload {
		w.Training = *w.Training.DeepCopy()
		for j := range w.Training.Spec.Phases {
			w.Training.Spec.Phases[j].Topology = nil
		}
		out.Workload[i] = w
	}
	return &out
}

// The example scenario of docs/topology.md: on racks of 4 × 8 GPUs with a
// 0.8-per-extra-rack slowdown, trains that ask for preferred racks finish
// sooner on average than the same trains placed blind to racks.
func TestPreferredRackBeatsTopologyBlind(t *testing.T) {
	sc := loadScenario(t, "../examples/simulate/topology-racks.yaml")
	topo := run(t, sc, PolicyPhasegang).Metrics
	flat := run(t, blind(sc), PolicyPhasegang).Metrics
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)).Round(time.Second) }
	t.Logf("preferred rack: JCT avg %v p50 %v p99 %v, makespan %v, util %.1f%%, finished %d/%d",
		sec(topo.JCTAvg), sec(topo.JCTP50), sec(topo.JCTP99), sec(topo.Makespan), 100*topo.Utilization, topo.Finished, topo.Pipelines)
	t.Logf("topology-blind: JCT avg %v p50 %v p99 %v, makespan %v, util %.1f%%, finished %d/%d",
		sec(flat.JCTAvg), sec(flat.JCTP50), sec(flat.JCTP99), sec(flat.Makespan), 100*flat.Utilization, flat.Finished, flat.Pipelines)
	if topo.Finished != topo.Pipelines || flat.Finished != flat.Pipelines {
		t.Fatalf("not everything finished: %d/%d and %d/%d", topo.Finished, topo.Pipelines, flat.Finished, flat.Pipelines)
	}
	if topo.JCTAvg >= flat.JCTAvg {
		t.Errorf("preferred JCT avg %v, topology-blind %v: want preferred lower", sec(topo.JCTAvg), sec(flat.JCTAvg))
	}
}

// The suite's topology workload is a copy of the example (go:embed cannot
// reach examples/): keep them equal.
func TestSuiteTopologyIsTheExample(t *testing.T) {
	ex, err := os.ReadFile("../examples/simulate/topology-racks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cp, err := suiteFiles.ReadFile("testdata/suite/topology-racks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ex, cp) {
		t.Error("sim/testdata/suite/topology-racks.yaml differs from examples/simulate/topology-racks.yaml: copy the example over it")
	}
}
