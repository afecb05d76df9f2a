package engine

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
