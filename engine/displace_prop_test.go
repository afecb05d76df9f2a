package engine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// raceChecks is TestPropDisplacement's number of random runs (see setChecks).
const raceChecks = 1000

// TestPropDisplacement grants random gangs, then lets pods phasegang does
// not manage take random capacity (some of it leaving), marks random
// workers unbound or refused, and runs one Schedule with more gangs queued.
// It checks the plan against a model of the ledger: no worker is ever
// placed (reserved, grown or moved) on a node it overcommits; a node that
// stays overcommitted by pods that stay holds no unbound worker; only
// unbound workers move, and a gang keeps its size; a displaced gang is
// moved whole or released whole, never both.
func TestPropDisplacement(t *testing.T) {
	var total struct{ moves, displaced int }
	defer func() {
		t.Logf("%d moves, %d displaced releases", total.moves, total.displaced)
		if !t.Failed() && (total.moves == 0 || total.displaced == 0) {
			t.Errorf("the random runs made %d moves and %d displaced releases: the generator is broken", total.moves, total.displaced)
		}
	}()
	setChecks(t, raceChecks)
	rapid.Check(t, func(rt *rapid.T) {
		var nodes []engine.Node
		for i := range rapid.IntRange(1, 4).Draw(rt, "nodes") {
			nodes = append(nodes, wrappers.EngineNode(fmt.Sprintf("n%d", i), int64(rapid.IntRange(1, 8).Draw(rt, "gpus"))))
		}
		var queue []engine.Request
		newReq := func(age int) engine.Request {
			k := int32(rapid.IntRange(1, 6).Draw(rt, "min"))
			created := Epoch.Add(time.Duration(age) * time.Minute)
			return engine.Request{
				Gang:    engine.GangKey{Pipeline: fmt.Sprintf("ns/p%d", age), Phase: "train"},
				Created: created, Queued: created, Min: k, Desired: k + int32(rapid.IntRange(0, 2).Draw(rt, "extra")),
				Footprint: engine.ResourceList{wrappers.GPU: engine.Milli(int64(rapid.IntRange(1, 2).Draw(rt, "perWorker")))},
			}
		}
		arrivals := rapid.IntRange(1, 6).Draw(rt, "granted")
		for i := range arrivals {
			queue = append(queue, newReq(i))
		}
		// Grants made on the clean cluster, by the engine itself.
		first := engine.NewState(engine.DefaultConfig(), nodes, nil)
		for _, r := range queue {
			first.Submit(r)
		}
		first.Cycle(Epoch)
		ledger := first.Grants()
		// Then the cluster changes under them.
		for i := range nodes {
			if rapid.Bool().Draw(rt, "taken") {
				alloc := nodes[i].Allocatable[wrappers.GPU] / 1000
				stay := int64(rapid.IntRange(0, int(alloc)).Draw(rt, "stay"))
				leave := int64(rapid.IntRange(0, 2).Draw(rt, "leave"))
				nodes[i].Used = engine.ResourceList{wrappers.GPU: engine.Milli(stay + leave)}
				nodes[i].Leaving = engine.ResourceList{wrappers.GPU: engine.Milli(leave)}
				nodes[i].LastPod = "other/pod"
			}
		}
		for i := range ledger {
			for w := range ledger[i].Workers {
				if rapid.Bool().Draw(rt, "unbound") {
					ledger[i].Unbound = append(ledger[i].Unbound, int32(w))
				}
				if rapid.IntRange(0, 4).Draw(rt, "refused") == 0 {
					ledger[i].Refused = append(ledger[i].Refused, engine.RefusedWorker{Index: int32(w), Message: "no"})
				}
			}
		}
		var later []engine.Request
		for i := range rapid.IntRange(0, 3).Draw(rt, "queued") {
			later = append(later, newReq(arrivals+i))
		}
		plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes, Ledger: ledger, Queue: later})

		type worker struct {
			node    string
			unbound bool
		}
		model := map[engine.GangKey][]worker{}
		fp := map[engine.GangKey]int64{}
		for _, g := range ledger {
			ws := make([]worker, len(g.Workers))
			for i, n := range g.Workers {
				ws[i] = worker{node: n, unbound: slices.Contains(g.Unbound, int32(i))}
			}
			model[g.Gang], fp[g.Gang] = ws, g.Footprint[wrappers.GPU]
		}
		for _, r := range later {
			fp[r.Gang] = r.Footprint[wrappers.GPU]
		}
		placed := map[string]bool{} // nodes that got a worker in this plan
		released := map[engine.GangKey]bool{}
		for _, rel := range plan.Releases {
			if rel.Reason == engine.ReleaseDisplaced {
				total.displaced++
			}
			released[rel.Gang] = true
			delete(model, rel.Gang)
		}
		for _, mv := range plan.Moves {
			total.moves++
			if released[mv.Gang] {
				rt.Fatalf("%s both moved and released: %+v", mv.Gang, plan)
			}
			ws := model[mv.Gang]
			for _, w := range mv.Workers {
				if int(w.Index) >= len(ws) || ws[w.Index].node != w.From {
					rt.Fatalf("move %+v of %s does not match its grant %v", w, mv.Gang, ws)
				}
				if !ws[w.Index].unbound {
					rt.Fatalf("%s: bound worker %d moved", mv.Gang, w.Index)
				}
				ws[w.Index].node = w.To
				placed[w.To] = true
			}
		}
		for _, sh := range plan.Shrinks {
			model[sh.Gang] = model[sh.Gang][:len(model[sh.Gang])-len(sh.Workers)]
		}
		for _, rv := range append(slices.Clone(plan.Reserves), plan.Grows...) {
			for _, w := range rv.Workers {
				model[rv.Gang] = append(model[rv.Gang], worker{node: w.Node, unbound: true})
				placed[w.Node] = true
			}
		}
		for _, g := range ledger {
			if ws, ok := model[g.Gang]; ok && len(ws) < len(g.Workers)-shrunk(plan, g.Gang) {
				rt.Fatalf("%s lost workers outside a shrink: %v", g.Gang, ws)
			}
		}
		for _, n := range nodes {
			stays := n.Used[wrappers.GPU] - n.Leaving[wrappers.GPU]
			var granted int64
			unbound := false
			for key, ws := range model {
				for _, w := range ws {
					if w.node == n.Name {
						granted += fp[key]
						unbound = unbound || w.unbound
					}
				}
			}
			alloc := n.Allocatable[wrappers.GPU]
			if placed[n.Name] && n.Used[wrappers.GPU]+granted > alloc {
				rt.Fatalf("node %s got a worker in this plan but is overcommitted: %d used + %d granted > %d\nplan %+v", n.Name, n.Used[wrappers.GPU], granted, alloc, plan)
			}
			if stays+granted > alloc && unbound {
				rt.Fatalf("node %s stays overcommitted (%d staying + %d granted > %d) with unbound workers on it\nplan %+v", n.Name, stays, granted, alloc, plan)
			}
		}
	})
}

func shrunk(p engine.Plan, key engine.GangKey) int {
	n := 0
	for _, sh := range p.Shrinks {
		if sh.Gang == key {
			n += len(sh.Workers)
		}
	}
	return n
}
