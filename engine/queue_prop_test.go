package engine_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// queueChecks is TestPropQueues' number of random runs (see setChecks).
const queueChecks = 1000

// TestPropQueues drives a State through random cycles with random tenant
// queues (some in a cohort, with random nominal quotas, borrowing and
// lending limits, weights and reclaim policies) and checks, after every
// cycle, against a model computed from the grants alone:
//
//   - no queue holds more than its nominal quota plus what it may
//     borrow: nominal alone without a cohort, nominal + borrowingLimit
//     with one;
//   - lending limits hold: what a cohort's members use beyond their
//     nominal quota never exceeds what the others leave unused of theirs,
//     each counted up to its lendingLimit;
//   - no node is overcommitted, and every reserve is a whole gang (Min to
//     Desired workers);
//   - a gang whose Min exceeds all its queue could ever hold is reported
//     Infeasible and never granted;
//   - a gang waiting for its queue's room indeed lacks it;
//   - State.Cycle and the pure Schedule over the same snapshot agree.
func TestPropQueues(t *testing.T) {
	var total struct{ reserves, queueWaits, borrowing int }
	defer func() {
		// A property that nothing exercises proves nothing.
		if !t.Failed() && (total.reserves == 0 || total.queueWaits == 0 || total.borrowing == 0) {
			t.Errorf("the random runs made %d reserves, %d queue waits and %d cycles with borrowing: the generator is broken",
				total.reserves, total.queueWaits, total.borrowing)
		}
	}()
	setChecks(t, queueChecks)
	rapid.Check(t, func(rt *rapid.T) {
		var nodes []engine.Node
		for i := range rapid.IntRange(1, 4).Draw(rt, "nodes") {
			nodes = append(nodes, wrappers.EngineNode(fmt.Sprintf("n%d", i), int64(rapid.IntRange(1, 8).Draw(rt, "gpus"))))
		}
		names := []string{"default", "qa", "qb", "qc"}
		var queues []engine.Queue
		for _, name := range names {
			if !rapid.Bool().Draw(rt, "hasQueue") {
				continue
			}
			q := engine.Queue{
				Name:    name,
				Cohort:  rapid.SampledFrom([]string{"", "c1", "c1", "c2"}).Draw(rt, "cohort"),
				Weight:  rapid.SampledFrom([]int64{0, 500, 1000, 3000}).Draw(rt, "weight"),
				Reclaim: rapid.SampledFrom([]engine.ReclaimPolicy{"", engine.ReclaimNever, engine.ReclaimLowerPriority, engine.ReclaimAny}).Draw(rt, "reclaim"),
			}
			nominal := engine.Milli(int64(rapid.IntRange(0, 10).Draw(rt, "nominal")))
			qq := engine.QueueQuota{Nominal: nominal}
			if q.Cohort != "" && rapid.Bool().Draw(rt, "hasBorrowingLimit") {
				v := engine.Milli(int64(rapid.IntRange(0, 6).Draw(rt, "borrowingLimit")))
				qq.BorrowingLimit = &v
			}
			if q.Cohort != "" && rapid.Bool().Draw(rt, "hasLendingLimit") {
				v := min(engine.Milli(int64(rapid.IntRange(0, 10).Draw(rt, "lendingLimit"))), nominal)
				qq.LendingLimit = &v
			}
			q.Resources = map[engine.ResourceName]engine.QueueQuota{wrappers.GPU: qq}
			queues = append(queues, q)
		}
		byName := map[string]engine.Queue{}
		for _, q := range queues {
			byName[q.Name] = q
		}
		cfg := engine.Config{StarvationBound: time.Duration(rapid.IntRange(0, 3).Draw(rt, "bound")) * time.Minute}
		s := engine.NewState(cfg, nodes, nil)
		s.SetQueues(queues)
		reqs := map[engine.GangKey]engine.Request{}
		queued := map[engine.GangKey]bool{}
		var fence *engine.Fence
		var nominated []engine.GangKey
		infeasible := map[engine.GangKey]bool{}
		now := Epoch
		for step := range rapid.IntRange(1, 12).Draw(rt, "steps") {
			for range rapid.IntRange(0, 3).Draw(rt, "arrivals") {
				min := int32(rapid.IntRange(1, 6).Draw(rt, "min"))
				r := engine.Request{
					Gang:     engine.GangKey{Pipeline: fmt.Sprintf("ns/p%d", len(reqs)), Phase: "train"},
					Priority: int32(rapid.IntRange(0, 2).Draw(rt, "priority")),
					Created:  now, Queued: now, Min: min, Desired: min + int32(rapid.IntRange(0, 4).Draw(rt, "extra")),
					Footprint: engine.ResourceList{wrappers.GPU: engine.Milli(int64(rapid.IntRange(1, 2).Draw(rt, "perWorker")))},
					Queue:     rapid.SampledFrom([]string{"", "qa", "qb", "qc", "qd"}).Draw(rt, "queue"),
				}
				reqs[r.Gang] = r
				queued[r.Gang] = true
				s.Submit(r)
			}
			for _, g := range s.Grants() {
				if rapid.IntRange(0, 3).Draw(rt, "end") == 0 {
					s.Release(g.Gang)
				}
			}
			snap := engine.Snapshot{Now: now, Nodes: nodes, Ledger: s.Grants(), Queues: queues, Fence: fence, Nominated: nominated}
			plan := cycleAsSchedule(rt, step, s, cfg, snap, reqs, queued)
			fence, nominated = plan.Fence, plan.Nominated
			for _, rv := range plan.Reserves {
				delete(queued, rv.Gang)
				r := reqs[rv.Gang]
				if n := int32(len(rv.Workers)); n < r.Min || n > r.Desired {
					rt.Fatalf("step %d: %s reserved %d workers, outside [%d, %d]", step, rv.Gang, n, r.Min, r.Desired)
				}
			}
			total.reserves += len(plan.Reserves)
			for _, inf := range plan.Infeasible {
				infeasible[inf.Gang] = true
			}

			// The model: use per queue and per node, from the grants.
			used := map[string]int64{}
			onNode := map[string]int64{}
			for _, g := range s.Grants() {
				if q, ok := queueOf(g.Request, byName); ok {
					used[q.Name] += int64(len(g.Workers)) * g.Footprint[wrappers.GPU]
				}
				for _, n := range g.Workers {
					onNode[n] += g.Footprint[wrappers.GPU]
				}
			}
			for _, n := range nodes {
				if onNode[n.Name] > n.Allocatable[wrappers.GPU] {
					rt.Fatalf("step %d: node %s overcommitted: %d of %d", step, n.Name, onNode[n.Name], n.Allocatable[wrappers.GPU])
				}
			}
			borrowing := false
			for _, q := range queues {
				qq := q.Resources[wrappers.GPU]
				most := qq.Nominal
				if q.Cohort != "" && qq.BorrowingLimit != nil {
					most += *qq.BorrowingLimit
				}
				if (q.Cohort == "" || qq.BorrowingLimit != nil) && used[q.Name] > most {
					rt.Fatalf("step %d: queue %s holds %d, more than nominal + borrowing limit %d", step, q.Name, used[q.Name], most)
				}
				if used[q.Name] > qq.Nominal {
					borrowing = true
				}
			}
			if borrowing {
				total.borrowing++
			}
			for _, cohort := range []string{"c1", "c2"} {
				var borrowed, lendable int64
				for _, q := range queues {
					if q.Cohort != cohort {
						continue
					}
					qq := q.Resources[wrappers.GPU]
					lend := qq.Nominal
					if qq.LendingLimit != nil {
						lend = *qq.LendingLimit
					}
					borrowed += max(0, used[q.Name]-qq.Nominal)
					lendable += min(lend, max(0, qq.Nominal-used[q.Name]))
				}
				if borrowed > lendable {
					rt.Fatalf("step %d: cohort %s borrowed %d, more than its members lend of their unused quota (%d)", step, cohort, borrowed, lendable)
				}
			}
			for key, r := range reqs {
				if _, granted := s.Grant(key); granted && neverAdmitted(r, byName, queues) {
					rt.Fatalf("step %d: %s needs more than its queue could ever hold but was granted", step, key)
				}
			}
			for _, w := range plan.Waiting {
				if w.Reason != engine.WaitQueue {
					continue
				}
				total.queueWaits++
				if q := w.Queue; !q.Missing && q.HeldFor == nil && q.ReclaimFor == nil && q.Left >= q.Need {
					rt.Fatalf("step %d: %s waits for its queue with room: %s", step, w.Gang, w.Message())
				}
			}
			now = now.Add(time.Minute)
		}
		for key, r := range reqs {
			if neverAdmitted(r, byName, queues) && !infeasible[key] {
				rt.Fatalf("%s needs more than its queue could ever hold but was never reported Infeasible", key)
			}
		}
	})
}

// queueOf is the queue that limits r, if any.
func queueOf(r engine.Request, byName map[string]engine.Queue) (engine.Queue, bool) {
	name := r.Queue
	if name == "" {
		name = engine.DefaultQueue
	}
	q, ok := byName[name]
	return q, ok
}

// neverAdmitted: r's Min workers need more than its queue's nominal quota
// plus all its cohort lends (within its borrowing limit).
func neverAdmitted(r engine.Request, byName map[string]engine.Queue, queues []engine.Queue) bool {
	q, ok := queueOf(r, byName)
	if !ok {
		return false
	}
	qq := q.Resources[wrappers.GPU]
	most := qq.Nominal
	if q.Cohort != "" {
		for _, m := range queues {
			if m.Cohort == q.Cohort && m.Name != q.Name {
				mq := m.Resources[wrappers.GPU]
				lend := mq.Nominal
				if mq.LendingLimit != nil {
					lend = *mq.LendingLimit
				}
				most += lend
			}
		}
		if qq.BorrowingLimit != nil {
			most = min(most, qq.Nominal+*qq.BorrowingLimit)
		}
	}
	return int64(r.Min)*r.Footprint[wrappers.GPU] > most
}
