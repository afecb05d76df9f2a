package main

import (
	"maps"
	"math"
	"testing"
	"time"
)

// The model with every train at 8, growing oldest first, is phasegang's
// schedule of the seed: the same makespan and average JCT as the engine
// (sim.Run), under linear and sub-linear scaling. Without it the search's
// figures would say nothing about the engine.
func TestModelAtFullWidthIsTheEngine(t *testing.T) {
	for _, e := range []float64{1, 0.9} {
		r, err := runEngine(e)
		if err != nil {
			t.Fatal(err)
		}
		pipes := pipelinesOf(r)
		if len(pipes) != 12 {
			t.Fatalf("e=%v: %d pipelines, want the seed's 12", e, len(pipes))
		}
		got := simulate(pipes, uniform(len(pipes), trainMax), e)
		if math.Abs(got.makespan-r.Metrics.Makespan) > 1e-3 || math.Abs(got.jctAvg-r.Metrics.JCTAvg) > 1e-3 {
			t.Errorf("e=%v: model makespan %s, JCT avg %s; engine %s, %s", e,
				seconds(got.makespan), seconds(got.jctAvg), seconds(r.Metrics.Makespan), seconds(r.Metrics.JCTAvg))
		}
	}
}

// Narrower trains take longer under sub-linear scaling too, but do more
// per GPU: at 4 workers a train runs 30m/0.5^κ (54 minutes at 0.9), at 8
// it runs 30 minutes. One pipeline alone checks the model's clock.
func TestOnePipelineRunsItsChain(t *testing.T) {
	pipes := []pipeline{{name: "a"}}
	for _, c := range []struct {
		w    int
		e    float64
		want float64
	}{
		{8, 1, 30*60 + 20*60},
		{4, 1, 60*60 + 20*60},
		{4, 0.9, 30*60/math.Pow(0.5, 1+math.Log2(0.9)) + 20*60},
	} {
		got := simulate(pipes, uniform(1, c.w), c.e)
		if math.Abs(got.makespan-c.want) > 1e-6 || got.maxRigidWait != 0 {
			t.Errorf("width %d, e=%v: makespan %s, rigid wait %s; want %s, 0s", c.w, c.e, seconds(got.makespan), seconds(got.maxRigidWait), seconds(c.want))
		}
	}
}

// The search keeps the best schedule it tried: a longer search never does
// worse than a shorter one with the same seed (it tries the same widths
// first), and the widths it returns give the figures it reports.
func TestSearchNeverLosesItsBest(t *testing.T) {
	r, err := runEngine(0.9)
	if err != nil {
		t.Fatal(err)
	}
	pipes := pipelinesOf(r)
	short, _ := search(pipes, 0.9, 7, 50)
	long, x := search(pipes, 0.9, 7, 500)
	if long.makespan > short.makespan {
		t.Errorf("500 tries: %s; 50 tries: %s", seconds(long.makespan), seconds(short.makespan))
	}
	if again := simulate(pipes, x, 0.9); again != long {
		t.Errorf("the best widths replayed give %+v, the search said %+v", again, long)
	}
}

// A take rule lets a queued train start on the GPUs of older trains above
// its floor, the youngest older train first, and only its min; without
// one the train waits, as in the engine.
func TestTakeStartsATrainOnOlderGPUs(t *testing.T) {
	for _, c := range []struct {
		take      take
		wantWidth map[int]int // pipeline → width; absent: not running
	}{
		{take{}, map[int]int{0: 8, 1: 8}},
		{take{floor: 4, queued: 1}, map[int]int{0: 8, 1: 4, 2: 4}},
		{take{floor: 6, queued: 1}, map[int]int{0: 6, 1: 6, 2: 4}},
		{take{floor: 4, queued: 2}, map[int]int{0: 8, 1: 8}},
		{take{floor: 7, queued: 1}, map[int]int{0: 8, 1: 8}}, // 2 above the floor: not the min of 4
	} {
		x := uniform(3, trainMax)
		x.take = c.take
		m := &model{pipes: make([]pipeline, 3), x: x, kappa: 1, free: 0,
			trains: map[int]*running{0: {w: 8, left: 1}, 1: {w: 8, left: 1}},
			queue:  []ready{{p: 2, k: train}}}
		m.walk()
		got := map[int]int{}
		for p, r := range m.trains {
			got[p] = r.w
		}
		if !maps.Equal(got, c.wantWidth) {
			t.Errorf("%+v: widths %v, want %v", c.take, got, c.wantWidth)
		}
	}
}

// The variant with the seed's own times is the seed, so -variants'
// table and the seed's figures are of one scenario.
func TestSeedVariantAtTheSeedsTimesIsTheSeed(t *testing.T) {
	seed, err := runEngine(0.9)
	if err != nil {
		t.Fatal(err)
	}
	same, err := runEngineOn(0.9, seedVariant(70*time.Minute, 15*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if same.Metrics != seed.Metrics {
		t.Errorf("variant at 1h10m, 15m apart: %+v, the seed: %+v", same.Metrics, seed.Metrics)
	}
	moved, err := runEngineOn(0.9, seedVariant(80*time.Minute, 16*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if moved.Metrics.LowerBound == seed.Metrics.LowerBound {
		t.Errorf("variant at 1h20m, 16m apart has the seed's LB %v: the variant did not move it", seed.Metrics.LowerBound)
	}
}
