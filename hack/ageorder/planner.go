package main

import (
	"runtime"
	"sync"
)

// planner is an online scheduler that knows what phasegang does not:
// every phase's run time (exactly, or each train's within an error,
// estimate), and, if knowsScaling, the trains' scaling (else it plans as
// if scaling were linear). It knows nothing of arrivals ahead. At every
// event it rolls each of its rules out over the pipelines that have
// arrived, from the state they are in, and follows the rule whose
// rollout ends them soonest (ties: the lower average JCT, then the first
// rule) until the next event: a receding-horizon plan.
//
// Why it is here: it tells which information the seed's target needs. If
// the planner meets it where phasegang's online rules do not, what is
// missing is the run times (and the scaling), which phasegang's API does
// not carry, not a cleverer rule over what the engine knows.
type planner struct {
	e            float64
	knowsScaling bool
	rules        []widths
	// estimate, if set, is each pipeline's train run time as the planner
	// believes it, in parts of the true one (1.2: 20% too long).
	estimate []float64
}

// plan runs the seed's pipelines under the planner and returns the run.
func (pl planner) plan(pipes []pipeline) *model {
	m := newModel(pipes, pl.rules[0], pl.e)
	m.run(func(m *model) { m.x = pl.rules[pl.choose(m)] })
	return m
}

// choose is the index of the rule whose rollout from m's state, over the
// pipelines that have arrived, is best. The rollouts are shared among the
// CPUs; the choice is the same as one loop's (the first of the best).
func (pl planner) choose(m *model) int {
	arrived := m.pipes[:m.next]
	parts := runtime.GOMAXPROCS(0)
	bests := make([]int, parts)
	outs := make([]outcome, parts)
	var wg sync.WaitGroup
	for part := range parts {
		wg.Go(func() {
			bests[part] = -1
			for i := part; i < len(pl.rules); i += parts {
				if o := pl.rollout(m, arrived, pl.rules[i]); bests[part] < 0 || o.beats(outs[part]) {
					bests[part], outs[part] = i, o
				}
			}
		})
	}
	wg.Wait()
	best := -1
	var bestOut outcome
	for part, i := range bests {
		if o := outs[part]; i >= 0 && (best < 0 || o.beats(bestOut) || !bestOut.beats(o) && i < best) {
			best, bestOut = i, o
		}
	}
	return best
}

// rollout is how the arrived pipelines end from m's state under rule x,
// as the planner believes: its scaling and run times.
func (pl planner) rollout(m *model, arrived []pipeline, x widths) outcome {
	r := m.fork(arrived, x)
	if !pl.knowsScaling {
		r.kappa = 1
	}
	if pl.estimate != nil {
		r.work = pl.estimate
		for q, t := range r.trains {
			// What it believes is left: its whole estimated work less
			// what it has done.
			t.left = max(t.left+pl.estimate[q]-1, eps)
		}
	}
	r.run(nil)
	return r.result()
}

// fork is a copy of m's state for pipes (those that have arrived), to go
// on under rule x.
func (m *model) fork(pipes []pipeline, x widths) *model {
	f := &model{pipes: pipes, x: x, kappa: m.kappa, t: m.t, free: m.free, next: m.next,
		queue: append([]ready(nil), m.queue...), trains: make(map[int]*running, len(m.trains)),
		rigids: append([]rigid(nil), m.rigids...), finish: append([]float64(nil), m.finish[:len(pipes)]...),
		outcome: m.outcome, work: m.work}
	for q, r := range m.trains {
		copied := *r
		f.trains[q] = &copied
	}
	return f
}

// plannerRules are the planner's choices: the 1,250 table rules, alone
// and with each of the 16 take rules (21,250).
func plannerRules(n int) []widths {
	return append(tableRules(n), takeTableRules(n)...)
}
