package sim

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// The queued columns are per pipeline under every policy: the mean and
// p99 of PipelineResult.Queueing over the pipelines that ended, not of
// Result.Waits (one per gang, so one per phase under most policies and one
// per pipeline under whole-job).
func TestQueuedIsPerPipeline(t *testing.T) {
	sc := loadScenario(t, "../examples/simulate/seed-deadlock.yaml")
	for _, p := range Policies {
		t.Run(string(p), func(t *testing.T) {
			r := run(t, sc, p)
			var q []float64
			for _, pr := range r.Pipelines {
				if pr.Ended() {
					q = append(q, pr.Queueing.Seconds())
				}
			}
			if len(q) == 0 {
				t.Fatal("no pipeline ended")
			}
			m := r.Metrics
			if m.QueuedAvg != mean(q) || m.QueuedP99 != quantile(q, 0.99) {
				t.Errorf("queued avg %v p99 %v, want %v %v (the pipelines' Queueing)", m.QueuedAvg, m.QueuedP99, mean(q), quantile(q, 0.99))
			}
		})
	}
	// Waits do not count: three phase waits of one pipeline are one
	// pipeline's queueing.
	r := &Result{
		Pipelines: []PipelineResult{{Name: "a", State: "Succeeded", Finish: time.Hour, Queueing: 30 * time.Minute}},
		Waits:     []time.Duration{10 * time.Minute, 10 * time.Minute, 10 * time.Minute},
	}
	r.computeMetrics(&Scenario{})
	if r.Metrics.QueuedAvg != 1800 || r.Metrics.QueuedP99 != 1800 {
		t.Errorf("queued avg %v p99 %v, want 1800 1800", r.Metrics.QueuedAvg, r.Metrics.QueuedP99)
	}
}

// A run in which some pipeline never finished has an infinite makespan and
// no utilization (NaN): null in JSON (not -1, which reads as seconds);
// report's TestTableNeverFinished shows them as "∞" and "-". Finite
// figures encode as encoding/json would.
func TestMetricsNeverFinished(t *testing.T) {
	done := func(name string, finish time.Duration) PipelineResult {
		return PipelineResult{Name: name, State: "Succeeded", Finish: finish}
	}
	for name, tc := range map[string]struct {
		pipelines []PipelineResult
		finished  int
		makespan  float64 // seconds; +Inf when a pipeline never finished
		util      float64 // NaN when undefined
		json      map[string]any
	}{
		"all finished": {
			pipelines: []PipelineResult{done("a", time.Hour), done("b", 2*time.Hour)},
			finished:  2,
			makespan:  7200,
			util:      0.5,
			json:      map[string]any{"makespanSeconds": 7200.0, "gpuUtilization": 0.5},
		},
		"one deadlocked": {
			pipelines: []PipelineResult{done("a", time.Hour), {Name: "b", State: StateDeadlocked}},
			finished:  1,
			makespan:  math.Inf(1),
			util:      math.NaN(),
			json:      map[string]any{"makespanSeconds": nil, "gpuUtilization": nil},
		},
		"every pipeline infeasible": { // nothing ran: not ∞, not negative
			pipelines: []PipelineResult{{Name: "b", State: StateInfeasible, Arrival: time.Hour}},
			finished:  0,
			makespan:  0,
			util:      0,
			json:      map[string]any{"makespanSeconds": 0.0, "gpuUtilization": 0.0},
		},
		"one unfinished": {
			pipelines: []PipelineResult{{Name: "b", State: StateUnfinished}},
			finished:  0,
			makespan:  math.Inf(1),
			util:      math.NaN(),
			json:      map[string]any{"makespanSeconds": nil, "gpuUtilization": nil},
		},
	} {
		t.Run(name, func(t *testing.T) {
			// 4 of 8 GPUs busy for 2h.
			r := &Result{Policy: PolicyPerPod, GPUs: 8, BusyGPUSeconds: 4 * 7200, Pipelines: tc.pipelines}
			r.computeMetrics(&Scenario{})
			m := r.Metrics
			if m.Finished != tc.finished || !same(m.Makespan, tc.makespan) || !same(m.Utilization, tc.util) {
				t.Errorf("finished %d makespan %v util %v, want %d %v %v", m.Finished, m.Makespan, m.Utilization, tc.finished, tc.makespan, tc.util)
			}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var got struct{ Metrics map[string]any }
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.json {
				if v, ok := got.Metrics[k]; !ok || v != want {
					t.Errorf("%s = %v (present: %v), want %v in %s", k, v, ok, want, b)
				}
			}
		})
	}
	// Finite metrics: the same bytes as encoding/json's own encoding.
	type plain Metrics
	m := Metrics{Pipelines: 3, Finished: 3, Makespan: 1.5, LowerBound: 1, Utilization: 0.5, QueuedP99: 2, DecisionsPerSec: 7}
	for _, m := range []Metrics{m, {}} {
		got, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(plain(m))
		if string(got) != string(want) {
			t.Errorf("MarshalJSON:\n got %s\nwant %s", got, want)
		}
	}
}

// same is ==, with NaN equal to NaN.
func same(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
