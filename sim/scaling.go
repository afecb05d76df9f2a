package sim

import (
	"fmt"
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scaling is how an elastic phase's speed depends on its number of
// workers. The simulator used to assume linear scaling (n workers run n
// times as fast as one), which flatters elasticity: a real data-parallel
// job loses some efficiency each time its worker count doubles
// (communication, stragglers, a smaller per-worker batch).
type Scaling struct {
	// EfficiencyPerDoubling is the parallel efficiency kept per doubling
	// of the workers: throughput(n) = n · e^log2(n). 1 (or unset) is
	// linear; 0.9 means 2 workers do 1.8 times the work of one, 4 do
	// 3.24 times. A phase's runtime is its duration at desired workers
	// under this model, so it is the same at desired under every model;
	// only smaller sizes take longer.
	EfficiencyPerDoubling float64 `json:"efficiencyPerDoubling,omitempty"`
	// ResizeCost is the progress an elastic phase loses each time it
	// grows or shrinks while running: an elastic framework (torch
	// elastic, Horovod elastic) stops every worker, meets again at its
	// rendezvous with the new membership and reloads its last
	// checkpoint. The phase makes no progress for that long, at its new
	// size. Unset: resizes are free.
	ResizeCost metav1.Duration `json:"resizeCost,omitempty"`
}

// resizeCost is the stall per resize, 0 when unset.
func (sc *Scaling) resizeCost() time.Duration {
	if sc == nil {
		return 0
	}
	return sc.ResizeCost.Duration
}

// efficiency is e, 1 when unset.
func (sc *Scaling) efficiency() float64 {
	if sc == nil || sc.EfficiencyPerDoubling == 0 {
		return 1
	}
	return sc.EfficiencyPerDoubling
}

// throughput is n workers' speed relative to one worker's.
func (sc *Scaling) throughput(n float64) float64 {
	if n <= 0 {
		return 0
	}
	e := sc.efficiency()
	if e == 1 {
		return n
	}
	return n * math.Pow(e, math.Log2(n))
}

// speed is how many worker-seconds at desired size n workers do per
// second: n under linear scaling, desired at desired under any.
func (sc *Scaling) speed(n, desired int) float64 {
	if sc.efficiency() == 1 || n == desired {
		return float64(n)
	}
	return float64(desired) * sc.throughput(float64(n)) / sc.throughput(float64(desired))
}

// boundWidth is the width the lower bound charges a phase of min..desired
// workers with: the phase's least resource-time is at min workers (per
// worker efficiency only falls as workers are added), and measured in
// min-size resource-seconds it progresses at most as fast as
// min · throughput(desired)/throughput(min) workers' worth. Under linear
// scaling that is desired.
func (sc *Scaling) boundWidth(min, desired int) float64 {
	if sc.efficiency() == 1 || min == desired {
		return float64(desired)
	}
	return float64(min) * sc.throughput(float64(desired)) / sc.throughput(float64(min))
}

// exponent is κ in throughput(n) = n^κ (n · e^log2(n) = n^(1+log2 e)):
// 1 under linear scaling, 0.848 at 0.9 per doubling. Measured in
// min-size resource-seconds, a phase of min..desired workers that holds
// y of a resource per second (y_min ≤ y ≤ y_desired) progresses at
// y_min · (y/y_min)^κ per second: the lower bound's trade-off between
// finishing sooner and using more (see windowWork).
func (sc *Scaling) exponent() float64 {
	return 1 + math.Log2(sc.efficiency())
}

// Validate checks the model; the error names the scenario field.
func (sc *Scaling) Validate() error {
	if sc == nil {
		return nil
	}
	// Below 0.5 per doubling, n · e^log2(n) falls as n grows: a phase
	// would run slower the more workers it had, and the lower bound's
	// premise (no phase runs faster than at desired) would not hold.
	if e := sc.EfficiencyPerDoubling; e != 0 && !(e >= 0.5 && e <= 1) {
		return fmt.Errorf("scaling.efficiencyPerDoubling: %v is not in [0.5, 1] (1 is linear scaling; below 0.5 more workers would run a phase slower)", e)
	}
	if sc.ResizeCost.Duration < 0 {
		return fmt.Errorf("scaling.resizeCost: %v is negative", sc.ResizeCost.Duration)
	}
	return nil
}
