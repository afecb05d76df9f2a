package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"
)

func gpuQuota(ns, name string, hard int64) Quota {
	return Quota{Namespace: ns, Name: name, Hard: ResourceList{gpu: Milli(hard)}}
}

func TestQuotaWaitsWholeNeverHalf(t *testing.T) {
	nodes := []Node{gpuNode("a", 8), gpuNode("b", 8)}
	snap := Snapshot{Now: t0, Nodes: nodes, Queue: []Request{req("big", 8, 8, 0)}, Quotas: []Quota{gpuQuota("ns", "gpu-quota", 4)}}
	plan := Schedule(DefaultConfig(), snap)
	if len(plan.Reserves) != 0 {
		t.Fatalf("a gang the quota does not admit was reserved: %+v", plan.Reserves)
	}
	if len(plan.Infeasible) != 1 {
		t.Fatalf("want Infeasible (hard 4 < 8), got %+v", plan)
	}
	want := "namespace ns's quota gpu-quota allows at most 4 nvidia.com/gpu (its hard limit); the gang needs 8 at once"
	if got := plan.Infeasible[0].Message; got != want {
		t.Errorf("infeasible:\n got %q\nwant %q", got, want)
	}

	// Hard 8, 4 used by other pods: the gang waits, with the numbers.
	q := gpuQuota("ns", "gpu-quota", 8)
	q.Used = ResourceList{gpu: Milli(4)}
	snap.Quotas = []Quota{q}
	plan = Schedule(DefaultConfig(), snap)
	if len(plan.Reserves) != 0 || len(plan.Infeasible) != 0 || len(plan.Waiting) != 1 {
		t.Fatalf("want one quota wait, got %+v", plan)
	}
	want = "namespace ns's quota gpu-quota allows 4 more nvidia.com/gpu; the gang needs 8"
	if w := plan.Waiting[0]; w.Reason != WaitQuota || w.Message() != want {
		t.Errorf("wait: reason %s, message\n got %q\nwant %q", w.Reason, w.Message(), want)
	}
	if plan.Fence != nil {
		t.Errorf("a gang waiting for quota fenced nodes: %+v", plan.Fence)
	}

	// A quota of another namespace does not apply.
	snap.Quotas = []Quota{gpuQuota("other", "gpu-quota", 0)}
	if plan = Schedule(DefaultConfig(), snap); len(plan.Reserves) != 1 || len(plan.Reserves[0].Workers) != 8 {
		t.Fatalf("another namespace's quota held the gang: %+v", plan)
	}
}

func TestQuotaCountsGrantsOfTheCycleAndTheLedger(t *testing.T) {
	nodes := []Node{gpuNode("a", 8), gpuNode("b", 8)}
	s := NewState(DefaultConfig(), nodes, []Grant{{Request: req("running", 2, 2, 0), Workers: []string{"a", "a"}}})
	s.SetQuotas([]Quota{gpuQuota("ns", "q", 8)})
	s.Submit(req("first", 4, 4, 1))
	s.Submit(req("second", 4, 4, 2)) // 2 + 4 + 4 > 8
	s.Submit(req("third", 2, 2, 3))  // fits in what is left
	plan := s.Cycle(t0)
	var got []string
	for _, r := range plan.Reserves {
		got = append(got, r.Gang.Pipeline)
	}
	if strings.Join(got, ",") != "ns/first,ns/third" {
		t.Fatalf("reserved %v, want first and third", got)
	}
	if left := s.QuotaLeft()["ns/q"][gpu]; left != 0 {
		t.Errorf("quota left %d, want 0", left)
	}
	// Releasing gives the quota back.
	s.Release(GangKey{Pipeline: "ns/running", Phase: "train"})
	s.Release(GangKey{Pipeline: "ns/third", Phase: "train"})
	plan = s.Cycle(t0.Add(time.Minute))
	if len(plan.Reserves) != 1 || plan.Reserves[0].Gang.Pipeline != "ns/second" {
		t.Fatalf("want second reserved once quota freed, got %+v", plan)
	}
}

func TestQuotaElasticGrowsWithinQuota(t *testing.T) {
	s := NewState(DefaultConfig(), []Node{gpuNode("a", 8), gpuNode("b", 8)}, nil)
	s.SetQuotas([]Quota{gpuQuota("ns", "q", 6)})
	s.Submit(req("elastic", 2, 12, 0))
	plan := s.Cycle(t0)
	if len(plan.Reserves) != 1 || len(plan.Reserves[0].Workers) != 6 {
		t.Fatalf("want the elastic gang to start with the quota's 6, got %+v", plan.Reserves)
	}
	if plan = s.Cycle(t0.Add(time.Minute)); len(plan.Grows) != 0 {
		t.Fatalf("grew beyond the quota: %+v", plan.Grows)
	}
}

func TestQuotaHeadKeepsYoungerGrowthOut(t *testing.T) {
	// A younger elastic gang runs with 2 of its 8; an older gang needs 8
	// of the quota's 8.
	s := NewState(Config{StarvationBound: time.Hour}, []Node{gpuNode("a", 16)}, []Grant{{Request: req("elastic", 2, 8, 5), Workers: []string{"a", "a"}}})
	s.SetQuotas([]Quota{gpuQuota("ns", "q", 8)})
	s.Submit(req("older", 8, 8, 0))
	plan := s.Cycle(t0)
	if len(plan.Grows) != 0 {
		t.Fatalf("a younger gang grew into the quota an older gang waits for: %+v", plan.Grows)
	}
	if len(plan.Waiting) != 1 || plan.Waiting[0].Reason != WaitQuota {
		t.Fatalf("want the older gang waiting for quota, got %+v", plan.Waiting)
	}
}

func TestQuotaStarvingHeadHoldsTheQuota(t *testing.T) {
	s := NewState(Config{StarvationBound: 10 * time.Minute}, []Node{gpuNode("a", 16)}, []Grant{{Request: req("running", 4, 4, 0), Workers: []string{"a", "a", "a", "a"}}})
	s.SetQuotas([]Quota{gpuQuota("ns", "q", 8)})
	s.Submit(req("big", 8, 8, 1))
	s.Submit(req("small", 2, 2, 2))
	plan := s.Cycle(t0.Add(5 * time.Minute))
	if len(plan.Reserves) != 1 || plan.Reserves[0].Gang.Pipeline != "ns/small" {
		t.Fatalf("within the bound the small gang backfills, got %+v", plan)
	}
	s.Release(GangKey{Pipeline: "ns/small", Phase: "train"})
	s.Submit(req("small2", 2, 2, 3))
	plan = s.Cycle(t0.Add(20 * time.Minute))
	if len(plan.Reserves) != 0 {
		t.Fatalf("past the bound nothing may enter the held quota, got %+v", plan.Reserves)
	}
	var msg string
	for _, w := range plan.Waiting {
		if w.Gang.Pipeline == "ns/small2" {
			msg = w.Message()
		}
	}
	if want := "namespace ns's quota q is held for ns/big/train, which has waited past its starvation bound"; msg != want {
		t.Errorf("small2 waits for %q, want %q", msg, want)
	}
}

func TestQuotaResourceNamesAndScopes(t *testing.T) {
	r := req("p", 1, 1, 0)
	r.Footprint = ResourceList{gpu: Milli(1), "cpu": 500, "pods": Milli(1)}
	r.Quota = QuotaFacts{Limits: ResourceList{"cpu": Milli(1)}, PriorityClassName: "high"}
	for name, want := range map[ResourceName]int64{"pods": 1000, "count/pods": 1000, "cpu": 500, "limits.cpu": 1000, gpu: 1000, "memory": 0} {
		if got := WorkerQuotaUse(&r, name); got != want {
			t.Errorf("%s: %d, want %d", name, got, want)
		}
	}
	in := func(op corev1.ScopeSelectorOperator, v ...string) []corev1.ScopedResourceSelectorRequirement {
		return []corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: v}}
	}
	cases := map[string]struct {
		scopes []corev1.ScopedResourceSelectorRequirement
		facts  QuotaFacts
		want   bool
	}{
		"no scope":               {nil, QuotaFacts{}, true},
		"priority In":            {in(corev1.ScopeSelectorOpIn, "high"), QuotaFacts{PriorityClassName: "high"}, true},
		"priority In, other":     {in(corev1.ScopeSelectorOpIn, "high"), QuotaFacts{PriorityClassName: "low"}, false},
		"priority In, none":      {in(corev1.ScopeSelectorOpIn, "high"), QuotaFacts{}, false},
		"priority NotIn, none":   {in(corev1.ScopeSelectorOpNotIn, "high"), QuotaFacts{}, true},
		"priority Exists":        {in(corev1.ScopeSelectorOpExists), QuotaFacts{PriorityClassName: "x"}, true},
		"priority DoesNotExist":  {in(corev1.ScopeSelectorOpDoesNotExist), QuotaFacts{PriorityClassName: "x"}, false},
		"BestEffort":             {[]corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopeBestEffort}}, QuotaFacts{BestEffort: false}, false},
		"NotBestEffort":          {[]corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopeNotBestEffort}}, QuotaFacts{}, true},
		"Terminating":            {[]corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopeTerminating}}, QuotaFacts{Terminating: true}, true},
		"NotTerminating":         {[]corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopeNotTerminating}}, QuotaFacts{Terminating: true}, false},
		"VolumeAttributesClass":  {[]corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopeVolumeAttributesClass, Operator: corev1.ScopeSelectorOpExists}}, QuotaFacts{}, false},
		"unknown scope: applied": {[]corev1.ScopedResourceSelectorRequirement{{ScopeName: "SomethingNew"}}, QuotaFacts{}, true},
	}
	for name, tc := range cases {
		if got := ScopesMatch(tc.scopes, tc.facts); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

func TestQuotaFactsOf(t *testing.T) {
	deadline := int64(60)
	spec := &corev1.PodSpec{
		PriorityClassName:     "high",
		ActiveDeadlineSeconds: &deadline,
		Containers: []corev1.Container{{Name: "w", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "cpu": resource.MustParse("2")},
		}}},
	}
	f := QuotaFactsOf(spec)
	if !f.Terminating || f.BestEffort || f.PriorityClassName != "high" || f.Limits["cpu"] != 2000 || f.Limits[gpu] != 1000 {
		t.Errorf("facts %+v", f)
	}
	gpuOnly := &corev1.PodSpec{Containers: []corev1.Container{{Name: "w", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
	}}}}
	if f := QuotaFactsOf(gpuOnly); !f.BestEffort || f.Terminating {
		t.Errorf("a GPU-only pod is BestEffort (QoS reads cpu and memory only): %+v", f)
	}
}

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
	rapid.Check(t, func(rt *rapid.T) {
		namespaces := []string{"a", "b", "c"}
		var nodes []Node
		for i := range rapid.IntRange(1, 4).Draw(rt, "nodes") {
			nodes = append(nodes, gpuNode(fmt.Sprintf("n%d", i), int64(rapid.IntRange(1, 8).Draw(rt, "gpus"))))
		}
		var quotas []Quota
		for _, ns := range namespaces {
			if rapid.Bool().Draw(rt, "hasQuota") {
				hard := int64(rapid.IntRange(0, 12).Draw(rt, "hard"))
				q := Quota{Namespace: ns, Name: "q", Hard: ResourceList{gpu: Milli(hard), "pods": Milli(int64(rapid.IntRange(1, 12).Draw(rt, "podsHard")))}}
				q.Used = ResourceList{gpu: Milli(int64(rapid.IntRange(0, int(hard)).Draw(rt, "used")))}
				quotas = append(quotas, q)
			}
		}
		hardOf := map[string]ResourceList{}
		for _, q := range quotas {
			hardOf[q.Namespace] = q.Hard
		}
		cfg := Config{StarvationBound: time.Duration(rapid.IntRange(0, 3).Draw(rt, "bound")) * time.Minute}
		s := NewState(cfg, nodes, nil)
		s.SetQuotas(quotas)
		reqs := map[GangKey]Request{}
		queued := map[GangKey]bool{}
		var fence *Fence
		infeasible := map[GangKey]bool{}
		now := t0
		var reserves, quotaWaits int
		for step := range rapid.IntRange(1, 12).Draw(rt, "steps") {
			for range rapid.IntRange(0, 3).Draw(rt, "arrivals") {
				ns := rapid.SampledFrom(namespaces).Draw(rt, "ns")
				min := int32(rapid.IntRange(1, 6).Draw(rt, "min"))
				desired := min + int32(rapid.IntRange(0, 4).Draw(rt, "extra"))
				r := Request{
					Gang:    GangKey{Pipeline: fmt.Sprintf("%s/p%d", ns, len(reqs)), Phase: "train"},
					Created: now, Queued: now, Min: min, Desired: desired,
					Footprint: ResourceList{gpu: Milli(int64(rapid.IntRange(1, 2).Draw(rt, "perWorker")))},
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
			snap := Snapshot{Now: now, Nodes: nodes, Ledger: s.Grants(), Quotas: quotas, Fence: fence}
			for key := range queued {
				snap.Queue = append(snap.Queue, reqs[key])
			}
			slices.SortFunc(snap.Queue, func(a, b Request) int { return compareKeys(a.Gang, b.Gang) })
			pure := Schedule(cfg, snap)
			plan := s.Cycle(now)
			fence = plan.Fence
			if d := cmp.Diff(plan, pure, cmpopts.EquateEmpty()); d != "" {
				rt.Fatalf("step %d: State.Cycle and Schedule differ (-state +pure):\n%s", step, d)
			}
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
			charged := map[string]ResourceList{}
			for _, g := range s.Grants() {
				ns := g.Gang.Namespace()
				if charged[ns] == nil {
					charged[ns] = ResourceList{}
				}
				for name := range hardOf[ns] {
					charged[ns][name] += int64(len(g.Workers)) * WorkerQuotaUse(&g.Request, name)
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
					if int64(r.Min)*WorkerQuotaUse(&r, name) > hard {
						never = true
					}
				}
				if _, granted := s.Grant(key); never && granted {
					rt.Fatalf("step %d: %s needs more than its quota's hard limit but was granted", step, key)
				}
			}
			for _, w := range plan.Waiting {
				if w.Reason == WaitQuota && w.Quota.HeldFor == nil && w.Quota.Left >= w.Quota.Need {
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
				if int64(r.Min)*WorkerQuotaUse(&r, name) > hard && !infeasible[key] {
					rt.Fatalf("%s needs more than its quota's hard %s but was never reported Infeasible", key, name)
				}
			}
		}
	})
}

func countQuotaWaits(p Plan) int {
	n := 0
	for _, w := range p.Waiting {
		if w.Reason == WaitQuota {
			n++
		}
	}
	return n
}

// An upcoming phase past its quota's hard limit dooms its pipeline at
// once: nothing of it runs, though its first phase would fit.
func TestQuotaUpcomingPhaseDoomsPipeline(t *testing.T) {
	first := req("p", 2, 2, 0)
	later := req("p", 8, 8, 0)
	later.Gang.Phase = "test"
	plan := Schedule(DefaultConfig(), Snapshot{Now: t0, Nodes: []Node{gpuNode("a", 8)}, Queue: []Request{first}, Upcoming: []Request{later},
		Quotas: []Quota{gpuQuota("ns", "q", 4)}})
	if len(plan.Reserves) != 0 || len(plan.Infeasible) != 1 || plan.Infeasible[0].Gang != later.Gang {
		t.Fatalf("want the pipeline held and its test phase Infeasible, got %+v", plan)
	}
	if len(plan.Waiting) != 1 || plan.Waiting[0].Reason != WaitPipelineCannotFinish {
		t.Errorf("want the first phase held, got %+v", plan.Waiting)
	}
}
