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

// Per-queue series follow the cycle's queue use in the resource's units,
// count preemptions against the victim's queue, and go away with their
// queue.
func TestMetricsPerQueue(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	gpus := func(n int64) engine.ResourceList { return engine.ResourceList{gpu: engine.Milli(n)} }
	usage := []engine.QueueUsage{
		{Name: "team-a", Nominal: gpus(4), Used: gpus(8), Borrowed: gpus(4), Admitted: 2},
		{Name: "team-b", Nominal: gpus(4), Used: gpus(0), Borrowed: engine.ResourceList{}, Pending: 1},
	}
	m.observeQueues(usage, []engine.Preemption{{Queue: "team-a", Lender: "team-b"}})
	checks := []struct {
		name      string
		got, want float64
	}{
		{"team-a nominal", testutil.ToFloat64(m.QueueNominal.WithLabelValues("team-a", "nvidia.com/gpu")), 4},
		{"team-a used", testutil.ToFloat64(m.QueueUsed.WithLabelValues("team-a", "nvidia.com/gpu")), 8},
		{"team-a borrowed", testutil.ToFloat64(m.QueueBorrowed.WithLabelValues("team-a", "nvidia.com/gpu")), 4},
		{"team-b borrowed", testutil.ToFloat64(m.QueueBorrowed.WithLabelValues("team-b", "nvidia.com/gpu")), 0},
		{"team-a admitted", testutil.ToFloat64(m.QueueAdmitted.WithLabelValues("team-a")), 2},
		{"team-b pending", testutil.ToFloat64(m.QueuePending.WithLabelValues("team-b")), 1},
		{"team-a preempted", testutil.ToFloat64(m.QueuePreempts.WithLabelValues("team-a")), 1},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// team-b is deleted: its series go, team-a's stay.
	m.observeQueues(usage[:1], nil)
	if n := testutil.CollectAndCount(m.QueueNominal); n != 1 {
		t.Errorf("%d nominal series after team-b was deleted, want team-a's 1", n)
	}
	if n := testutil.CollectAndCount(m.QueuePending); n != 1 {
		t.Errorf("%d pending series after team-b was deleted, want team-a's 1", n)
	}
	if got := testutil.ToFloat64(m.QueuePreempts.WithLabelValues("team-a")); got != 1 {
		t.Errorf("team-a preempted = %v after a cycle without preemptions, want 1 (a counter)", got)
	}
}
