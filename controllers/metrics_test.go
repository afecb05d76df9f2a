package controllers

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/phasegang/phasegang/engine"
)

// Moves and displaced releases are counted from the cycle's plan.
func TestMetricsCountRaces(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	key := engine.GangKey{Pipeline: "ns/p", Phase: "train"}
	m.observeSnapshot(engine.Snapshot{}, engine.Plan{
		Moves: []engine.Move{{Gang: key, Workers: []engine.MovedWorker{{Index: 6}, {Index: 7}}}},
		Releases: []engine.Release{
			{Gang: key, Reason: engine.ReleaseDisplaced},
			{Gang: engine.GangKey{Pipeline: "ns/q", Phase: "train"}, Reason: engine.ReleaseNodeLost},
		},
	})
	if got := testutil.ToFloat64(m.Moved); got != 2 {
		t.Errorf("moved workers = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.Displaced); got != 1 {
		t.Errorf("displaced gangs = %v, want 1", got)
	}
}
