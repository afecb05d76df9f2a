package engine_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

func TestQuotaWaitsWholeNeverHalf(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)}
	snap := engine.Snapshot{Now: Epoch, Nodes: nodes, Queue: []engine.Request{wrappers.Gang("big", 8, 8, 0)}, Quotas: []engine.Quota{wrappers.EngineQuota("ns", "gpu-quota", 4)}}
	plan := engine.Schedule(engine.DefaultConfig(), snap)
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
	q := wrappers.EngineQuota("ns", "gpu-quota", 8)
	q.Used = engine.ResourceList{wrappers.GPU: engine.Milli(4)}
	snap.Quotas = []engine.Quota{q}
	plan = engine.Schedule(engine.DefaultConfig(), snap)
	if len(plan.Reserves) != 0 || len(plan.Infeasible) != 0 || len(plan.Waiting) != 1 {
		t.Fatalf("want one quota wait, got %+v", plan)
	}
	want = "namespace ns's quota gpu-quota allows 4 more nvidia.com/gpu; the gang needs 8"
	if w := plan.Waiting[0]; w.Reason != engine.WaitQuota || w.Message() != want {
		t.Errorf("wait: reason %s, message\n got %q\nwant %q", w.Reason, w.Message(), want)
	}
	if plan.Fence != nil {
		t.Errorf("a gang waiting for quota fenced nodes: %+v", plan.Fence)
	}

	// A quota of another namespace does not apply.
	snap.Quotas = []engine.Quota{wrappers.EngineQuota("other", "gpu-quota", 0)}
	if plan = engine.Schedule(engine.DefaultConfig(), snap); len(plan.Reserves) != 1 || len(plan.Reserves[0].Workers) != 8 {
		t.Fatalf("another namespace's quota held the gang: %+v", plan)
	}
}

func TestQuotaCountsGrantsOfTheCycleAndTheLedger(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)}
	s := engine.NewState(engine.DefaultConfig(), nodes, []engine.Grant{{Request: wrappers.Gang("running", 2, 2, 0), Workers: []string{"a", "a"}}})
	s.SetQuotas([]engine.Quota{wrappers.EngineQuota("ns", "q", 8)})
	s.Submit(wrappers.Gang("first", 4, 4, 1))
	s.Submit(wrappers.Gang("second", 4, 4, 2)) // 2 + 4 + 4 > 8
	s.Submit(wrappers.Gang("third", 2, 2, 3))  // fits in what is left
	plan := s.Cycle(Epoch)
	var got []string
	for _, r := range plan.Reserves {
		got = append(got, r.Gang.Pipeline)
	}
	if strings.Join(got, ",") != "ns/first,ns/third" {
		t.Fatalf("reserved %v, want first and third", got)
	}
	if left := s.QuotaLeft()["ns/q"][wrappers.GPU]; left != 0 {
		t.Errorf("quota left %d, want 0", left)
	}
	// Releasing gives the quota back.
	s.Release(engine.GangKey{Pipeline: "ns/running", Phase: "train"})
	s.Release(engine.GangKey{Pipeline: "ns/third", Phase: "train"})
	plan = s.Cycle(Epoch.Add(time.Minute))
	if len(plan.Reserves) != 1 || plan.Reserves[0].Gang.Pipeline != "ns/second" {
		t.Fatalf("want second reserved once quota freed, got %+v", plan)
	}
}

func TestQuotaElasticGrowsWithinQuota(t *testing.T) {
	s := engine.NewState(engine.DefaultConfig(), []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)}, nil)
	s.SetQuotas([]engine.Quota{wrappers.EngineQuota("ns", "q", 6)})
	s.Submit(wrappers.Gang("elastic", 2, 12, 0))
	plan := s.Cycle(Epoch)
	if len(plan.Reserves) != 1 || len(plan.Reserves[0].Workers) != 6 {
		t.Fatalf("want the elastic gang to start with the quota's 6, got %+v", plan.Reserves)
	}
	if plan = s.Cycle(Epoch.Add(time.Minute)); len(plan.Grows) != 0 {
		t.Fatalf("grew beyond the quota: %+v", plan.Grows)
	}
}

func TestQuotaHeadKeepsYoungerGrowthOut(t *testing.T) {
	// A younger elastic gang runs with 2 of its 8; an older gang needs 8
	// of the quota's 8.
	s := engine.NewState(engine.Config{StarvationBound: time.Hour}, []engine.Node{wrappers.EngineNode("a", 16)}, []engine.Grant{{Request: wrappers.Gang("elastic", 2, 8, 5), Workers: []string{"a", "a"}}})
	s.SetQuotas([]engine.Quota{wrappers.EngineQuota("ns", "q", 8)})
	s.Submit(wrappers.Gang("older", 8, 8, 0))
	plan := s.Cycle(Epoch)
	if len(plan.Grows) != 0 {
		t.Fatalf("a younger gang grew into the quota an older gang waits for: %+v", plan.Grows)
	}
	if len(plan.Waiting) != 1 || plan.Waiting[0].Reason != engine.WaitQuota {
		t.Fatalf("want the older gang waiting for quota, got %+v", plan.Waiting)
	}
}

func TestQuotaStarvingHeadHoldsTheQuota(t *testing.T) {
	s := engine.NewState(engine.Config{StarvationBound: 10 * time.Minute}, []engine.Node{wrappers.EngineNode("a", 16)}, []engine.Grant{{Request: wrappers.Gang("running", 4, 4, 0), Workers: []string{"a", "a", "a", "a"}}})
	s.SetQuotas([]engine.Quota{wrappers.EngineQuota("ns", "q", 8)})
	s.Submit(wrappers.Gang("big", 8, 8, 1))
	s.Submit(wrappers.Gang("small", 2, 2, 2))
	plan := s.Cycle(Epoch.Add(5 * time.Minute))
	if len(plan.Reserves) != 1 || plan.Reserves[0].Gang.Pipeline != "ns/small" {
		t.Fatalf("within the bound the small gang backfills, got %+v", plan)
	}
	s.Release(engine.GangKey{Pipeline: "ns/small", Phase: "train"})
	s.Submit(wrappers.Gang("small2", 2, 2, 3))
	plan = s.Cycle(Epoch.Add(20 * time.Minute))
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
	r := wrappers.Gang("p", 1, 1, 0)
	r.Footprint = engine.ResourceList{wrappers.GPU: engine.Milli(1), "cpu": 500, "pods": engine.Milli(1)}
	r.Quota = engine.QuotaFacts{Limits: engine.ResourceList{"cpu": engine.Milli(1)}, PriorityClassName: "high"}
	for name, want := range map[engine.ResourceName]int64{"pods": 1000, "count/pods": 1000, "cpu": 500, "limits.cpu": 1000, wrappers.GPU: 1000, "memory": 0} {
		if got := engine.WorkerQuotaUse(&r, name); got != want {
			t.Errorf("%s: %d, want %d", name, got, want)
		}
	}
	in := func(op corev1.ScopeSelectorOperator, v ...string) []corev1.ScopedResourceSelectorRequirement {
		return []corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: v}}
	}
	cases := map[string]struct {
		scopes []corev1.ScopedResourceSelectorRequirement
		facts  engine.QuotaFacts
		want   bool
	}{
		"no scope":               {nil, engine.QuotaFacts{}, true},
		"priority In":            {in(corev1.ScopeSelectorOpIn, "high"), engine.QuotaFacts{PriorityClassName: "high"}, true},
		"priority In, other":     {in(corev1.ScopeSelectorOpIn, "high"), engine.QuotaFacts{PriorityClassName: "low"}, false},
		"priority In, none":      {in(corev1.ScopeSelectorOpIn, "high"), engine.QuotaFacts{}, false},
		"priority NotIn, none":   {in(corev1.ScopeSelectorOpNotIn, "high"), engine.QuotaFacts{}, true},
		"priority Exists":        {in(corev1.ScopeSelectorOpExists), engine.QuotaFacts{PriorityClassName: "x"}, true},
		"priority DoesNotExist":  {in(corev1.ScopeSelectorOpDoesNotExist), engine.QuotaFacts{PriorityClassName: "x"}, false},
		"BestEffort":             {[]corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopeBestEffort}}, engine.QuotaFacts{BestEffort: false}, false},
		"NotBestEffort":          {[]corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopeNotBestEffort}}, engine.QuotaFacts{}, true},
		"Terminating":            {[]corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopeTerminating}}, engine.QuotaFacts{Terminating: true}, true},
		"NotTerminating":         {[]corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopeNotTerminating}}, engine.QuotaFacts{Terminating: true}, false},
		"VolumeAttributesClass":  {[]corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopeVolumeAttributesClass, Operator: corev1.ScopeSelectorOpExists}}, engine.QuotaFacts{}, false},
		"unknown scope: applied": {[]corev1.ScopedResourceSelectorRequirement{{ScopeName: "SomethingNew"}}, engine.QuotaFacts{}, true},
	}
	for name, tc := range cases {
		if got := engine.ScopesMatch(tc.scopes, tc.facts); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

// An upcoming phase past its quota's hard limit dooms its pipeline at
// once: nothing of it runs, though its first phase would fit.
func TestQuotaUpcomingPhaseDoomsPipeline(t *testing.T) {
	first := wrappers.Gang("p", 2, 2, 0)
	later := wrappers.Gang("p", 8, 8, 0)
	later.Gang.Phase = "test"
	plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: []engine.Node{wrappers.EngineNode("a", 8)}, Queue: []engine.Request{first}, Upcoming: []engine.Request{later},
		Quotas: []engine.Quota{wrappers.EngineQuota("ns", "q", 4)}})
	if len(plan.Reserves) != 0 || len(plan.Infeasible) != 1 || plan.Infeasible[0].Gang != later.Gang {
		t.Fatalf("want the pipeline held and its test phase Infeasible, got %+v", plan)
	}
	if len(plan.Waiting) != 1 || plan.Waiting[0].Reason != engine.WaitPipelineCannotFinish {
		t.Errorf("want the first phase held, got %+v", plan.Waiting)
	}
}
