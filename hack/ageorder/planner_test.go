package main

import (
	"fmt"
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
			m.x = pl.choose(m)
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
