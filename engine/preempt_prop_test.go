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

// preemptChecks is TestPropPreemption's number of random runs: the
// preemption loop it once missed showed up after about 7,000.
const preemptChecks = 20000

// TestPropPreemption drives a State through random cycles with random
// queues (a cohort, random reclaim and withinQueue policies and grace
// periods, some quota lent out) and checks every preemption the engine
// makes against its rules:
//
//   - the victim is released whole (ReleasePreempted) and holds nothing
//     after the cycle;
//   - the waiting gang has been queued at least its queue's grace period;
//   - across queues: the victim's queue is in the lender's cohort and was
//     borrowing (using more than its nominal quota) before the cycle; with
//     LowerPriority its priority is below the waiting gang's;
//   - within a queue: the queue's withinQueue policy preempts, and the
//     victim has lower priority, or (Any) equal priority and a younger
//     pipeline;
//   - it was worth it: with the victims gone, the waiting gang's queue
//     admits its Min workers (a cycle with it alone does not make it wait
//     for its queue);
//   - it does not repeat: with the victims queued again (as the
//     controller requeues them, at once), the next cycles at the same
//     instant never preempt the same gang again (a victim re-admitted on
//     what was freed for another gang would be preempted forever).
func TestPropPreemption(t *testing.T) { propPreemption(t, preemptChecks, false) }

// TestPropPreemptionTopology is TestPropPreemption with the nodes in two
// racks and gangs that want one (required or preferred): the victims
// that free one rack (preempt_domain.go) keep the same rules.
func TestPropPreemptionTopology(t *testing.T) { propPreemption(t, preemptChecks/2, true) }

func propPreemption(t *testing.T, checks int, topo bool) {
	var total struct{ across, within, forTopo int }
	defer func() {
		if !t.Failed() && (total.across == 0 || total.within == 0 || (topo && total.forTopo == 0)) {
			t.Errorf("the random runs preempted %d gangs across queues and %d within one, %d for a required rack: the generator is broken", total.across, total.within, total.forTopo)
		}
	}()
	setChecks(t, checks)
	policies := []engine.ReclaimPolicy{"", engine.ReclaimNever, engine.ReclaimLowerPriority, engine.ReclaimAny}
	graces := []*time.Duration{nil, new(time.Duration(0)), new(2 * time.Minute)}
	rapid.Check(t, func(rt *rapid.T) {
		var nodes []engine.Node
		maxNodes, minGPUs, maxGPUs := 3, 2, 8
		if topo {
			// Two racks of up to two small nodes: gangs of up to 4 workers
			// fill a rack, and victims chosen by quota are often in both.
			maxNodes, minGPUs, maxGPUs = 4, 1, 4
		}
		for i := range rapid.IntRange(1, maxNodes).Draw(rt, "nodes") {
			n := wrappers.EngineNode(fmt.Sprintf("n%d", i), int64(rapid.IntRange(minGPUs, maxGPUs).Draw(rt, "gpus")))
			if topo {
				n.Domain = []string{"b1", fmt.Sprintf("r%d", i%2), n.Name}
			}
			nodes = append(nodes, n)
		}
		var queues []engine.Queue
		byName := map[string]engine.Queue{}
		for _, name := range []string{"qa", "qb", "qc"} {
			q := engine.Queue{
				Name:         name,
				Cohort:       rapid.SampledFrom([]string{"", "c1", "c1"}).Draw(rt, "cohort"),
				Reclaim:      rapid.SampledFrom(policies).Draw(rt, "reclaim"),
				WithinQueue:  rapid.SampledFrom(policies).Draw(rt, "withinQueue"),
				ReclaimGrace: rapid.SampledFrom(graces).Draw(rt, "grace"),
				Resources:    map[engine.ResourceName]engine.QueueQuota{wrappers.GPU: {Nominal: engine.Milli(int64(rapid.IntRange(1, 8).Draw(rt, "nominal")))}},
			}
			queues = append(queues, q)
			byName[name] = q
		}
		cfg := engine.Config{StarvationBound: time.Hour}
		s := engine.NewState(cfg, nodes, nil)
		s.SetQueues(queues)
		reqs := map[engine.GangKey]engine.Request{}
		all := map[engine.GangKey]engine.Request{} // every request, admitted or not
		now := Epoch
		for step := range rapid.IntRange(1, 10).Draw(rt, "steps") {
			for range rapid.IntRange(0, 3).Draw(rt, "arrivals") {
				min := int32(rapid.IntRange(1, 4).Draw(rt, "min"))
				// Named by len(all), which never shrinks: a name used again
				// while its gang holds a grant is a request Submit ignores,
				// and settle would queue that one again for the victim
				// instead of the victim's own.
				r := engine.Request{
					Gang:     engine.GangKey{Pipeline: fmt.Sprintf("ns/p%d", len(all)), Phase: "train"},
					Priority: int32(rapid.IntRange(0, 2).Draw(rt, "priority")),
					// Distinct creation times: queue order between equals
					// is then the pipelines' age, as the check below reads it.
					Created: now.Add(-time.Duration(rapid.IntRange(0, 5).Draw(rt, "age"))*time.Minute + time.Duration(len(all))), Queued: now,
					Min: min, Desired: min + int32(rapid.IntRange(0, 2).Draw(rt, "extra")),
					Footprint: engine.ResourceList{wrappers.GPU: engine.Milli(1)},
					Queue:     rapid.SampledFrom([]string{"qa", "qb", "qc"}).Draw(rt, "queue"),
				}
				if topo {
					if kind := rapid.IntRange(0, 2).Draw(rt, "topology"); kind > 0 {
						wrappers.Topo(1, kind == 1)(&r)
					}
				}
				reqs[r.Gang], all[r.Gang] = r, r
				s.Submit(r)
			}
			for _, g := range s.Grants() {
				if rapid.IntRange(0, 5).Draw(rt, "end") == 0 {
					s.Release(g.Gang)
				}
			}
			before := map[engine.GangKey]engine.Grant{}
			usedBefore := map[string]int64{}
			for _, g := range s.Grants() {
				before[g.Gang] = g
				usedBefore[g.Queue] += int64(len(g.Workers)) * g.Footprint[wrappers.GPU]
			}
			plan := s.Cycle(now)
			for _, p := range plan.Preemptions {
				v, ok := before[p.Gang]
				if !ok {
					rt.Fatalf("step %d: preempted %s, which held no grant", step, p.Gang)
				}
				if _, still := s.Grant(p.Gang); still {
					rt.Fatalf("step %d: preempted %s still holds a grant", step, p.Gang)
				}
				if !slices.ContainsFunc(plan.Releases, func(r engine.Release) bool { return r.Gang == p.Gang && r.Reason == engine.ReleasePreempted }) {
					rt.Fatalf("step %d: preempted %s is not released as Preempted", step, p.Gang)
				}
				w := reqs[p.For]
				if w.Topology != nil && w.Topology.Required {
					total.forTopo++
				}
				lq := byName[p.Lender]
				if lq.ReclaimGrace == nil || now.Sub(w.Queued) < *lq.ReclaimGrace {
					rt.Fatalf("step %d: %s preempted for %s within its queue's grace period", step, p.Gang, p.For)
				}
				if p.Queue == p.Lender {
					total.within++
					ok := v.Priority < w.Priority ||
						(lq.WithinQueue == engine.ReclaimAny && v.Priority == w.Priority && v.Created.After(w.Created))
					if lq.WithinQueue == "" || lq.WithinQueue == engine.ReclaimNever || !ok {
						rt.Fatalf("step %d: %s (priority %d, created %v) preempted within queue %s (withinQueue %q) for %s (priority %d, created %v)",
							step, p.Gang, v.Priority, v.Created, p.Queue, lq.WithinQueue, p.For, w.Priority, w.Created)
					}
				} else {
					total.across++
					vq := byName[p.Queue]
					if vq.Cohort == "" || vq.Cohort != lq.Cohort || usedBefore[p.Queue] <= vq.Resources[wrappers.GPU].Nominal {
						rt.Fatalf("step %d: %s of queue %s (cohort %q, used %d of nominal %d) preempted for lender %s of cohort %q",
							step, p.Gang, p.Queue, vq.Cohort, usedBefore[p.Queue], vq.Resources[wrappers.GPU].Nominal, p.Lender, lq.Cohort)
					}
					if lq.Reclaim == engine.ReclaimLowerPriority && v.Priority >= w.Priority {
						rt.Fatalf("step %d: %s (priority %d) preempted under LowerPriority for %s (priority %d)", step, p.Gang, v.Priority, p.For, w.Priority)
					}
				}
			}
			// Worth it: the waiting gang alone would not wait for its queue.
			for _, p := range plan.Preemptions {
				alone := engine.Schedule(cfg, engine.Snapshot{Now: now, Nodes: nodes, Ledger: s.Grants(), Queues: queues, Queue: []engine.Request{reqs[p.For]}})
				for _, wt := range alone.Waiting {
					if wt.Gang == p.For && wt.Reason == engine.WaitQueue {
						rt.Fatalf("step %d: %s preempted for %s, whose queue still does not admit it: %s\npreemptions %+v\nqueues %+v\nbefore %+v\nafter %+v", step, p.Gang, p.For, wt.Message(), plan.Preemptions, queues, before, s.Grants())
					}
				}
			}
			for _, rv := range plan.Reserves {
				delete(reqs, rv.Gang)
			}
			settle(rt, s, plan, now, all, reqs)
			now = now.Add(time.Minute)
		}
	})
}

// settle queues the victims of plan's preemptions again, as the
// controller does, and runs up to three more cycles at now, failing if
// one preempts a gang preempted at now already.
func settle(rt *rapid.T, s *engine.State, plan engine.Plan, now time.Time, all, reqs map[engine.GangKey]engine.Request) {
	preempted := map[engine.GangKey]bool{}
	for range 3 {
		if len(plan.Preemptions) == 0 {
			return
		}
		for _, p := range plan.Preemptions {
			if preempted[p.Gang] {
				rt.Fatalf("%s preempted twice at %v (for %s): a preemption loop", p.Gang, now, p.For)
			}
			preempted[p.Gang] = true
			r := all[p.Gang]
			r.Queued = now
			reqs[p.Gang] = r
			s.Submit(r)
		}
		plan = s.Cycle(now)
		for _, rv := range plan.Reserves {
			delete(reqs, rv.Gang)
		}
	}
}
