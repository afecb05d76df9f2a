package main

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
)

// A planner with one rule is that rule's schedule.
func TestPlannerWithOneRuleFollowsIt(t *testing.T) {
	r, err := runEngine(0.9)
	if err != nil {
		t.Fatal(err)
	}
	pipes := pipelinesOf(r)
	for _, x := range []widths{uniform(len(pipes), trainMax), takeRules(len(pipes))[0]} {
		got := planner{e: 0.9, knowsScaling: true, rules: []widths{x}}.plan(pipes).result()
		if want := simulate(pipes, x, 0.9); got != want {
			t.Errorf("take %+v: the planner gives %+v, the rule alone %+v", x.take, got, want)
		}
	}
}

// The planner is online: what it does before an arrival does not depend
// on that arrival. With the pipelines that arrive from 1h10m on left out,
// its states before 1h10m are the same.
func TestPlannerDoesNotLookAhead(t *testing.T) {
	r, err := runEngine(0.9)
	if err != nil {
		t.Fatal(err)
	}
	pipes := pipelinesOf(r)
	const cut = 70 * 60
	early := slices.DeleteFunc(slices.Clone(pipes), func(p pipeline) bool { return p.arrival >= cut })
	if len(early) == len(pipes) || len(early) == 0 {
		t.Fatalf("%d of %d pipelines arrive before the cut", len(early), len(pipes))
	}
	pl := planner{e: 0.9, knowsScaling: true, rules: tableRules(len(pipes))}
	states := func(pipes []pipeline) []string {
		var seen []string
		m := newModel(pipes, pl.rules[0], pl.e)
		m.run(func(m *model) {
			m.x = pl.rules[pl.choose(m)]
			if m.t < cut {
				widths := map[int]int{}
				for q, r := range m.trains {
					widths[q] = r.w
				}
				seen = append(seen, fmt.Sprintf("%.0fs: widths %v, %d free", m.t, widths, m.free))
			}
		})
		return seen
	}
	all, some := states(pipes), states(early)
	if len(all) < 3 || !slices.Equal(all, some) {
		t.Errorf("before %ds with every pipeline:\n%v\nwith those before it only:\n%v", cut, all, some)
	}
}

// The rollouts are shared among the CPUs; the choice at every event of
// a run is the one a single loop makes: the first of the best rules.
func TestPlannerChoiceIsOneLoops(t *testing.T) {
	r, err := runEngine(0.9)
	if err != nil {
		t.Fatal(err)
	}
	pipes := pipelinesOf(r)
	pl := planner{e: 0.9, knowsScaling: true, rules: plannerRules(len(pipes))[:3000]}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	events := 0
	m := newModel(pipes, pl.rules[0], pl.e)
	m.run(func(m *model) {
		events++
		want, arrived := 0, m.pipes[:m.next]
		best := pl.rollout(m, arrived, pl.rules[0])
		for i, x := range pl.rules {
			if o := pl.rollout(m, arrived, x); o.beats(best) {
				want, best = i, o
			}
		}
		if got := pl.choose(m); got != want {
			t.Fatalf("at %s: rule %d chosen, one loop chooses %d", seconds(m.t), got, want)
		}
		m.x = pl.rules[want]
	})
	if events < 10 {
		t.Errorf("%d events", events)
	}
}

// A planner's rollout takes a running train to have its estimated work
// left: its estimate less what it has done. Exact estimates are the
// truth.
func TestRolloutTakesTheEstimate(t *testing.T) {
	pipes := []pipeline{{name: "a"}}
	m := newModel(pipes, uniform(1, trainMax), 1)
	m.next, m.free = 1, clusterGPUs-trainMax
	m.trains[0] = &running{w: trainMax, left: 0.5}
	rigids := rigidRun.Seconds() * 2
	for _, c := range []struct {
		estimate []float64
		want     float64
	}{
		{nil, 0.5*trainAtMax.Seconds() + rigids},
		{[]float64{1}, 0.5*trainAtMax.Seconds() + rigids},
		{[]float64{1.5}, 1.0*trainAtMax.Seconds() + rigids},
		{[]float64{0.25}, eps*trainAtMax.Seconds() + rigids}, // it has done more than it was thought to need
	} {
		pl := planner{e: 1, knowsScaling: true, rules: []widths{m.x}, estimate: c.estimate}
		if got := pl.rollout(m, pipes, m.x).makespan; math.Abs(got-c.want) > 1e-3 {
			t.Errorf("estimate %v: the rollout ends at %s, want %s", c.estimate, seconds(got), seconds(c.want))
		}
	}
	if m.trains[0].left != 0.5 {
		t.Errorf("the rollouts changed the model: %v left", m.trains[0].left)
	}
}
