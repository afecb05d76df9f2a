package main

// planner is an online scheduler that knows what phasegang does not:
// every phase's run time, and, if knowsScaling, the trains' scaling (else
// it plans as if scaling were linear). It knows nothing of arrivals
// ahead. At every event it rolls each of its rules out over the
// pipelines that have arrived, from the state they are in, and follows
// the rule whose rollout ends them soonest (ties: the lower average JCT,
// then the first rule) until the next event: a receding-horizon plan.
//
// Why it is here: it tells which information the seed's target needs. If
// the planner meets it where phasegang's online rules do not, what is
// missing is the run times (and the scaling), which phasegang's API does
// not carry, not a cleverer rule over what the engine knows.
type planner struct {
	e            float64
	knowsScaling bool
	rules        []widths
}

// plan runs the seed's pipelines under the planner and returns the run.
func (pl planner) plan(pipes []pipeline) *model {
	m := newModel(pipes, pl.rules[0], pl.e)
	m.run(func(m *model) { m.x = pl.choose(m) })
	return m
}

// choose is the rule whose rollout from m's state, over the pipelines
// that have arrived, is best.
func (pl planner) choose(m *model) widths {
	arrived := m.pipes[:m.next]
	var best outcome
	var bestX widths
	for i, x := range pl.rules {
		r := m.fork(arrived, x)
		if !pl.knowsScaling {
			r.kappa = 1
		}
		r.run(nil)
		if o := r.result(); i == 0 || o.beats(best) {
			best, bestX = o, x
		}
	}
	return bestX
}

// fork is a copy of m's state for pipes (those that have arrived), to go
// on under rule x.
func (m *model) fork(pipes []pipeline, x widths) *model {
	f := &model{pipes: pipes, x: x, kappa: m.kappa, t: m.t, free: m.free, next: m.next,
		queue: append([]ready(nil), m.queue...), trains: make(map[int]*running, len(m.trains)),
		rigids: append([]rigid(nil), m.rigids...), finish: append([]float64(nil), m.finish[:len(pipes)]...),
		outcome: m.outcome}
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
