package sim

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestScalingSpeed(t *testing.T) {
	sub := &Scaling{EfficiencyPerDoubling: 0.9}
	cases := []struct {
		name       string
		s          *Scaling
		n, desired int
		want       float64
	}{
		{"linear: n workers", nil, 4, 8, 4},
		{"any model at desired", sub, 8, 8, 8},
		// throughput(4) = 4·0.9² = 3.24, throughput(8) = 8·0.9³ = 5.832:
		// 4 of 8 workers do 8·3.24/5.832 = 4.444 desired-size
		// worker-seconds per second, more than linear's 4.
		{"half the workers at 0.9 per doubling", sub, 4, 8, 8 * 3.24 / 5.832},
		{"one worker", sub, 1, 4, 4 * 1 / (4 * 0.81)},
	}
	for _, tc := range cases {
		if got := tc.s.speed(tc.n, tc.desired); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: speed(%d of %d) = %v, want %v", tc.name, tc.n, tc.desired, got, tc.want)
		}
	}
	// The bound's width: a 2..8 phase at 0.9 charges 2·5.832/1.8 = 6.48
	// workers' worth, less than desired (8): its least GPU-time is at min.
	if got, want := sub.boundWidth(2, 8), 2*5.832/1.8; math.Abs(got-want) > 1e-9 {
		t.Errorf("boundWidth(2, 8) = %v, want %v", got, want)
	}
}

func TestScalingSlowsSmallGangs(t *testing.T) {
	// One elastic train (min 4, desired 8, 1h at 8) alone on 4 GPUs: 2h
	// at linear scaling, 8·1h / (8·3.24/5.832) = 1h48m at 0.9 per doubling
	// (4 workers are more efficient per worker than 8).
	data := []byte(`
name: one-train
cluster:
  nodePools:
  - {name: n, count: 1, allocatable: {nvidia.com/gpu: "4", cpu: "16", memory: 64Gi, pods: "110"}}
workload:
- runtimes: {train: 1h}
  training:
    metadata: {name: t, namespace: ml}
    spec:
      phases:
      - name: train
        gang: {min: 4, desired: 8}
        template:
          spec:
            containers:
            - name: w
              image: trainer
              resources:
                requests: {nvidia.com/gpu: "1"}
                limits: {nvidia.com/gpu: "1"}
`)
	for _, tc := range []struct {
		e    float64
		want float64 // makespan, seconds
	}{{1, 7200}, {0.9, 3600 * 5.832 / 3.24}} {
		if got := makespanUnder(t, data, &Scaling{EfficiencyPerDoubling: tc.e}); math.Abs(got-tc.want) > 1 {
			t.Errorf("efficiency %v: makespan %.0fs, want %.0fs", tc.e, got, tc.want)
		}
	}
}

func TestScalingRejectsEfficiencyOutOfRange(t *testing.T) {
	// Below 0.5 a phase would run slower the more workers it had.
	for _, e := range []float64{-0.5, 0.3, 0.49, 1.5, math.NaN()} {
		err := (&Scaling{EfficiencyPerDoubling: e}).Validate()
		if err == nil || !strings.Contains(err.Error(), "scaling.efficiencyPerDoubling") {
			t.Errorf("efficiency %v: error %v, want one naming scaling.efficiencyPerDoubling", e, err)
		}
	}
	for _, e := range []float64{0, 0.5, 0.9, 1} {
		if err := (&Scaling{EfficiencyPerDoubling: e}).Validate(); err != nil {
			t.Errorf("efficiency %v: %v", e, err)
		}
	}
}

func TestResizeCostStallsAResizedGang(t *testing.T) {
	// 8 GPUs: a rigid 4-GPU job (1h) and an elastic train (min 4, desired
	// 8, 1h at 8) arrive together. The train starts on 4, does 4 of its
	// 8 GPU-hours by 1h, grows to 8 and needs 30m more: 1h30m. A resize
	// cost of 5m stalls it once, at 8 workers: 1h35m.
	data := []byte(`
name: one-grow
cluster:
  nodePools:
  - {name: n, count: 1, allocatable: {nvidia.com/gpu: "8", cpu: "32", memory: 64Gi, pods: "110"}}
workload:
- runtimes: {train: 1h}
  training:
    metadata: {name: a-rigid, namespace: ml}
    spec:
      phases:
      - name: train
        gang: {min: 4}
        template: {spec: {containers: [{name: w, image: trainer, resources: {requests: {nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}}]}}
- runtimes: {train: 1h}
  training:
    metadata: {name: b-elastic, namespace: ml}
    spec:
      phases:
      - name: train
        gang: {min: 4, desired: 8}
        template: {spec: {containers: [{name: w, image: trainer, resources: {requests: {nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}}]}}
`)
	for _, tc := range []struct {
		cost string
		want float64 // makespan, seconds
	}{{"", 5400}, {"5m", 5700}} {
		var scaling *Scaling
		if tc.cost != "" {
			scaling = &Scaling{}
			scaling.ResizeCost.Duration, _ = time.ParseDuration(tc.cost)
		}
		if got := makespanUnder(t, data, scaling); math.Abs(got-tc.want) > 1 {
			t.Errorf("resize cost %q: makespan %.0fs, want %.0fs", tc.cost, got, tc.want)
		}
	}
}

// makespanUnder runs the scenario in data under phasegang with the
// scaling model s (nil: the scenario's own) and returns its makespan in
// seconds.
func makespanUnder(t *testing.T, data []byte, s *Scaling) float64 {
	t.Helper()
	sc, err := LoadScenario(data)
	if err != nil {
		t.Fatal(err)
	}
	if s != nil {
		sc.Scaling = s
	}
	res, err := Run(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Metrics.Makespan
}
