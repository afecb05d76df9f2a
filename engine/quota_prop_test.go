package engine_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// quotaChecks is TestPropQuota's number of random runs (see setChecks).
const quotaChecks = 1000

// TestPropQuota drives a State through random cycles with random quotas
// over several namespaces and checks, after every cycle: no quota is ever
// charged past its hard limit, every reserve is a whole gang (Min to
// Desired workers), a gang whose Min exceeds a quota's hard limit is
// reported Infeasible and never granted, and every quota wait names a
// quota that indeed lacks room for the gang.
func TestPropQuota(t *testing.T) {
	var total struct{ reserves, quotaWaits int }
	defer func() {
		// A property that nothing exercises proves nothing.
		if !t.Failed() && (total.reserves == 0 || total.quotaWaits == 0) {
			t.Errorf("the random runs made %d reserves and %d quota waits: the generator is broken", total.reserves, total.quotaWaits)
		}
	}()
	setChecks(t, quotaChecks)
	rapid.Check(t, func(rt *rapid.T) {
		namespaces := []string{"a", "b", "c"}
		var nodes []engine.Node
		for i := range rapid.IntRange(1, 4).Draw(rt, "nodes") {
			nodes = append(nodes, wrappers.EngineNode(fmt.Sprintf("n%d", i), int64(rapid.IntRange(1, 8).Draw(rt, "gpus"))))
		}
		var quotas []engine.Quota
		for _, ns := range namespaces {
			if rapid.Bool().Draw(rt, "hasQuota") {
				hard := int64(rapid.IntRange(0, 12).Draw(rt, "hard"))
				q := engine.Quota{Namespace: ns, Name: "q", Hard: engine.ResourceList{wrappers.GPU: engine.Milli(hard), "pods": engine.Milli(int64(rapid.IntRange(1, 12).Draw(rt, "podsHard")))}}
				q.Used = engine.ResourceList{wrappers.GPU: engine.Milli(int64(rapid.IntRange(0, int(hard)).Draw(rt, "used")))}
				quotas = append(quotas, q)
			}
		}
		hardOf := map[string]engine.ResourceList{}
		for _, q := range quotas {
			hardOf[q.Namespace] = q.Hard
		}
		cfg := engine.Config{StarvationBound: time.Duration(rapid.IntRange(0, 3).Draw(rt, "bound")) * time.Minute}
		s := engine.NewState(cfg, nodes, nil)
		s.SetQuotas(quotas)
		reqs := map[engine.GangKey]engine.Request{}
		queued := map[engine.GangKey]bool{}
		var fence *engine.Fence
		var nominated []engine.GangKey
		infeasible := map[engine.GangKey]bool{}
		now := Epoch
		var reserves, quotaWaits int
		for step := range rapid.IntRange(1, 12).Draw(rt, "steps") {
			for range rapid.IntRange(0, 3).Draw(rt, "arrivals") {
				ns := rapid.SampledFrom(namespaces).Draw(rt, "ns")
				min := int32(rapid.IntRange(1, 6).Draw(rt, "min"))
				desired := min + int32(rapid.IntRange(0, 4).Draw(rt, "extra"))
				r := engine.Request{
					Gang:    engine.GangKey{Pipeline: fmt.Sprintf("%s/p%d", ns, len(reqs)), Phase: "train"},
					Created: now, Queued: now, Min: min, Desired: desired,
					Footprint: engine.ResourceList{wrappers.GPU: engine.Milli(int64(rapid.IntRange(1, 2).Draw(rt, "perWorker")))},
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
			// The pure Schedule over the same snapshot decides the same
			// (quota charges rebuilt from the ledger, not kept).
			snap := engine.Snapshot{Now: now, Nodes: nodes, Ledger: s.Grants(), Quotas: quotas, Fence: fence, Nominated: nominated}
			plan := cycleAsSchedule(rt, step, s, cfg, snap, reqs, queued)
			fence, nominated = plan.Fence, plan.Nominated
			for _, rv := range plan.Reserves {
				delete(queued, rv.Gang)
			}
			reserves += len(plan.Reserves)
			quotaWaits += countQuotaWaits(plan)
			for _, inf := range plan.Infeasible {
				infeasible[inf.Gang] = true
			}
			for _, rv := range plan.Reserves {
				r := reqs[rv.Gang]
				if n := int32(len(rv.Workers)); n < r.Min || n > r.Desired {
					rt.Fatalf("step %d: %s reserved %d workers, outside [%d, %d]", step, rv.Gang, n, r.Min, r.Desired)
				}
			}
			// The quota check is against the model, not the State's books.
			charged := map[string]engine.ResourceList{}
			for _, g := range s.Grants() {
				ns := g.Gang.Namespace()
				if charged[ns] == nil {
					charged[ns] = engine.ResourceList{}
				}
				for name := range hardOf[ns] {
					charged[ns][name] += int64(len(g.Workers)) * engine.WorkerQuotaUse(&g.Request, name)
				}
			}
			for _, q := range quotas {
				for name, hard := range q.Hard {
					if got := q.Used[name] + charged[q.Namespace][name]; got > hard {
						rt.Fatalf("step %d: quota %s/%s charged %d %s past its hard %d", step, q.Namespace, q.Name, got, name, hard)
					}
				}
			}
			for key := range reqs {
				r := reqs[key]
				never := false
				for name, hard := range hardOf[key.Namespace()] {
					if int64(r.Min)*engine.WorkerQuotaUse(&r, name) > hard {
						never = true
					}
				}
				if _, granted := s.Grant(key); never && granted {
					rt.Fatalf("step %d: %s needs more than its quota's hard limit but was granted", step, key)
				}
			}
			for _, w := range plan.Waiting {
				if w.Reason == engine.WaitQuota && w.Quota.HeldFor == nil && w.Quota.Left >= w.Quota.Need {
					rt.Fatalf("step %d: %s waits for quota with room: %s", step, w.Gang, w.Message())
				}
			}
			now = now.Add(time.Minute)
		}
		total.reserves += reserves
		total.quotaWaits += quotaWaits
		for key := range reqs {
			r := reqs[key]
			for name, hard := range hardOf[key.Namespace()] {
				if int64(r.Min)*engine.WorkerQuotaUse(&r, name) > hard && !infeasible[key] {
					rt.Fatalf("%s needs more than its quota's hard %s but was never reported Infeasible", key, name)
				}
			}
		}
	})
}

func countQuotaWaits(p engine.Plan) int {
	n := 0
	for _, w := range p.Waiting {
		if w.Reason == engine.WaitQuota {
			n++
		}
	}
	return n
}
