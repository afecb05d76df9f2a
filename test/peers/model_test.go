package main

import (
	"testing"

	"github.com/phasegang/phasegang/sim"
)

// The models run the harness's own workloads: every pipeline of each
// finishes under both models, with the pods the harness would create.
func TestModelsRunTheWorkloads(t *testing.T) {
	for _, name := range []string{"seed", "burst", "frag"} {
		w := workloads[name]()
		for system, pol := range modelOf {
			res, err := sim.Run(scenarioOf(w), sim.Options{Policy: pol})
			if err != nil {
				t.Fatalf("%s as %s: %v", name, pol, err)
			}
			if m := res.Metrics; m.Finished != len(w.pipelines) {
				t.Errorf("%s, %s (%s): %d of %d pipelines finished", name, system, pol, m.Finished, len(w.pipelines))
			}
		}
	}
}

// The check passes a real run the model predicts within 10% and fails
// one it does not.
func TestCheckModels(t *testing.T) {
	w := seedWorkload()
	res, err := sim.Run(scenarioOf(w), sim.Options{Policy: sim.PolicyKueue})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Metrics
	close := figures{system: "kueue", makespan: m.Makespan * 1.08, jctAvg: m.JCTAvg * 0.95}
	far := figures{system: "kueue", makespan: m.Makespan * 1.2, jctAvg: m.JCTAvg}
	unmodelled := figures{system: "plain", makespan: 1, jctAvg: 1}
	rows, err := checkModels(w, []figures{close, far, unmodelled})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2 (plain has no model)", len(rows))
	}
	if !rows[0].makespanOK || !rows[0].jctAvgOK {
		t.Errorf("8%% and 5%% off: %+v, want within", rows[0])
	}
	if rows[1].makespanOK || !rows[1].jctAvgOK {
		t.Errorf("20%% off on makespan: %+v, want makespan outside, JCT within", rows[1])
	}
}
