package engine_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

func limit(units int64) *int64 { v := engine.Milli(units); return &v }

func reserved(plan engine.Plan) string {
	var got []string
	for _, r := range plan.Reserves {
		got = append(got, r.Gang.Pipeline)
	}
	return strings.Join(got, ",")
}

func waitOf(plan engine.Plan, pipeline string) *engine.Wait {
	for i := range plan.Waiting {
		if plan.Waiting[i].Gang.Pipeline == pipeline {
			return &plan.Waiting[i]
		}
	}
	return nil
}

func TestQueueAdmission(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)}
	cases := map[string]struct {
		queues []engine.Queue
		ledger []engine.Grant
		queue  []engine.Request
		// wantReserved lists the pipelines granted, in order.
		wantReserved string
		// wantWait is the waiting message of ns/<waiting>.
		waiting, wantWait string
		wantInfeasible    string
	}{
		"no queues: nothing limits": {
			queue:        []engine.Request{wrappers.Gang("a", 8, 8, 0, wrappers.InQueue("")), wrappers.Gang("b", 8, 8, 1, wrappers.InQueue(""))},
			wantReserved: "ns/a,ns/b",
		},
		"nominal quota holds a gang back, with the numbers": {
			queues:       []engine.Queue{wrappers.EngineQueue("team-a", "", 8)},
			ledger:       []engine.Grant{{Request: wrappers.Gang("running", 6, 6, 0, wrappers.InQueue("team-a")), Workers: []string{"a", "a", "a", "a", "a", "a"}}},
			queue:        []engine.Request{wrappers.Gang("next", 4, 4, 1, wrappers.InQueue("team-a")), wrappers.Gang("small", 2, 2, 2, wrappers.InQueue("team-a"))},
			wantReserved: "ns/small",
			waiting:      "ns/next", wantWait: "queue team-a allows 2 more nvidia.com/gpu (nominal 8, 6 in use); the gang needs 4",
		},
		"an idle cohort member lends its nominal quota": {
			queues:       []engine.Queue{wrappers.EngineQueue("team-a", "research", 4), wrappers.EngineQueue("team-b", "research", 8)},
			queue:        []engine.Request{wrappers.Gang("burst", 12, 12, 0, wrappers.InQueue("team-a"))},
			wantReserved: "ns/burst",
		},
		"lendingLimit keeps the rest of the lender's quota": {
			queues: []engine.Queue{wrappers.EngineQueue("team-a", "research", 4), func() engine.Queue {
				q := wrappers.EngineQueue("team-b", "research", 8)
				q.Resources[wrappers.GPU] = engine.QueueQuota{Nominal: engine.Milli(8), LendingLimit: limit(2)}
				return q
			}()},
			queue:        []engine.Request{wrappers.Gang("burst", 6, 6, 0, wrappers.InQueue("team-a")), wrappers.Gang("more", 1, 1, 1, wrappers.InQueue("team-a"))},
			wantReserved: "ns/burst",
			waiting:      "ns/more", wantWait: "queue team-a allows 0 more nvidia.com/gpu (nominal 4, 6 in use, with what cohort research lends now); the gang needs 1",
		},
		"borrowingLimit bounds the borrower": {
			queues: []engine.Queue{func() engine.Queue {
				q := wrappers.EngineQueue("team-a", "research", 4)
				q.Resources[wrappers.GPU] = engine.QueueQuota{Nominal: engine.Milli(4), BorrowingLimit: limit(2)}
				return q
			}(), wrappers.EngineQueue("team-b", "research", 8)},
			ledger:  []engine.Grant{{Request: wrappers.Gang("running", 4, 4, 0, wrappers.InQueue("team-a")), Workers: []string{"a", "a", "a", "a"}}},
			queue:   []engine.Request{wrappers.Gang("more", 4, 4, 1, wrappers.InQueue("team-a"))},
			waiting: "ns/more", wantWait: "queue team-a allows 2 more nvidia.com/gpu (nominal 4, 4 in use, with what cohort research lends now); the gang needs 4",
		},
		"a lender's own use shrinks what it lends": {
			queues:       []engine.Queue{wrappers.EngineQueue("team-a", "research", 4), wrappers.EngineQueue("team-b", "research", 8)},
			ledger:       []engine.Grant{{Request: wrappers.Gang("b-running", 6, 6, 0, wrappers.InQueue("team-b")), Workers: []string{"b", "b", "b", "b", "b", "b"}}},
			queue:        []engine.Request{wrappers.Gang("burst", 8, 8, 1, wrappers.InQueue("team-a")), wrappers.Gang("fits", 6, 6, 2, wrappers.InQueue("team-a"))},
			wantReserved: "ns/fits",
			waiting:      "ns/burst", wantWait: "queue team-a allows 6 more nvidia.com/gpu (nominal 4, 0 in use, with what cohort research lends now); the gang needs 8",
		},
		"more than nominal plus borrowing, even idle, is Infeasible": {
			queues: []engine.Queue{func() engine.Queue {
				q := wrappers.EngineQueue("team-a", "research", 4)
				q.Resources[wrappers.GPU] = engine.QueueQuota{Nominal: engine.Milli(4), BorrowingLimit: limit(4)}
				return q
			}(), wrappers.EngineQueue("team-b", "research", 8)},
			queue:          []engine.Request{wrappers.Gang("huge", 10, 10, 0, wrappers.InQueue("team-a"))},
			wantInfeasible: "queue team-a can hold at most 8 nvidia.com/gpu (nominal 4, borrowingLimit 4); the gang needs 10 at once",
		},
		"more than the whole cohort is Infeasible": {
			queues:         []engine.Queue{wrappers.EngineQueue("team-a", "research", 4), wrappers.EngineQueue("team-b", "research", 2)},
			queue:          []engine.Request{wrappers.Gang("huge", 10, 10, 0, wrappers.InQueue("team-a"))},
			wantInfeasible: "queue team-a can hold at most 6 nvidia.com/gpu (nominal 4 and all its cohort research lends); the gang needs 10 at once",
		},
		"without a cohort, more than nominal is Infeasible": {
			queues:         []engine.Queue{wrappers.EngineQueue("team-a", "", 4)},
			queue:          []engine.Request{wrappers.Gang("huge", 5, 5, 0, wrappers.InQueue("team-a"))},
			wantInfeasible: "queue team-a can hold at most 4 nvidia.com/gpu (its nominal quota); the gang needs 5 at once",
		},
		"a queue that does not exist: the gang waits for it": {
			queues:  []engine.Queue{wrappers.EngineQueue("team-a", "", 8)},
			queue:   []engine.Request{wrappers.Gang("lost", 1, 1, 0, wrappers.InQueue("team-x"))},
			waiting: "ns/lost", wantWait: "queue team-x does not exist; the gang waits until a TenantQueue of that name is created",
		},
		"no queueName goes to the default queue": {
			queues:         []engine.Queue{wrappers.EngineQueue("default", "", 2)},
			queue:          []engine.Request{wrappers.Gang("plain", 4, 4, 0, wrappers.InQueue(""))},
			wantInfeasible: "queue default can hold at most 2 nvidia.com/gpu (its nominal quota); the gang needs 4 at once",
		},
		"no queueName and no default queue: not limited": {
			queues:       []engine.Queue{wrappers.EngineQueue("team-a", "", 2)},
			queue:        []engine.Request{wrappers.Gang("plain", 4, 4, 0, wrappers.InQueue(""))},
			wantReserved: "ns/plain",
		},
		"a resource the queue does not name is not limited": {
			queues: []engine.Queue{{Name: "team-a", Resources: map[engine.ResourceName]engine.QueueQuota{"cpu": {Nominal: engine.Milli(64)}}}},
			queue:  []engine.Request{wrappers.Gang("gpus", 16, 16, 0, wrappers.InQueue("team-a"))},
			// One GPU each, no CPU: the queue's cpu quota is untouched.
			wantReserved: "ns/gpus",
		},
		"pods count workers": {
			queues:         []engine.Queue{{Name: "team-a", Resources: map[engine.ResourceName]engine.QueueQuota{"pods": {Nominal: engine.Milli(3)}}}},
			queue:          []engine.Request{wrappers.Gang("four", 4, 4, 0, wrappers.InQueue("team-a")), wrappers.Gang("three", 3, 3, 1, wrappers.InQueue("team-a"))},
			wantInfeasible: "queue team-a can hold at most 3 pods (its nominal quota); the gang needs 4 at once",
			wantReserved:   "ns/three",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes, Ledger: tc.ledger, Queue: tc.queue, Queues: tc.queues})
			if got := reserved(plan); got != tc.wantReserved {
				t.Errorf("reserved %q, want %q", got, tc.wantReserved)
			}
			for _, rv := range plan.Reserves {
				for _, r := range tc.queue {
					if r.Gang == rv.Gang && int32(len(rv.Workers)) < r.Min {
						t.Errorf("%s reserved %d workers, fewer than its min %d", rv.Gang, len(rv.Workers), r.Min)
					}
				}
			}
			if tc.waiting != "" {
				w := waitOf(plan, tc.waiting)
				if w == nil {
					t.Fatalf("%s does not wait: %+v", tc.waiting, plan)
				}
				if w.Reason != engine.WaitQueue || w.Message() != tc.wantWait {
					t.Errorf("wait: reason %s, message\n got %q\nwant %q", w.Reason, w.Message(), tc.wantWait)
				}
			}
			var inf []string
			for _, i := range plan.Infeasible {
				inf = append(inf, i.Message)
			}
			if got := strings.Join(inf, "\n"); got != tc.wantInfeasible {
				t.Errorf("infeasible:\n got %q\nwant %q", got, tc.wantInfeasible)
			}
			if plan.Fence != nil {
				t.Errorf("a queue wait fenced nodes: %+v", plan.Fence)
			}
		})
	}
}

// TestQueueFairShareOrder: across queues, the queue furthest below its
// fair share goes first, even with an older gang in another queue; within
// a queue, queue order (priority, age) stands.
func TestQueueFairShareOrder(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("a", 8)}
	queues := []engine.Queue{wrappers.EngineQueue("team-a", "research", 8), wrappers.EngineQueue("team-b", "research", 8)}
	// team-a already uses 4 of its 8; team-b nothing. Room for one more
	// 4-GPU gang on the node.
	ledger := []engine.Grant{{Request: wrappers.Gang("a-running", 4, 4, 0, wrappers.InQueue("team-a")), Workers: []string{"a", "a", "a", "a"}}}
	queue := []engine.Request{
		wrappers.Gang("a-old", 4, 4, 1, wrappers.InQueue("team-a")),
		wrappers.Gang("b-young", 4, 4, 9, wrappers.InQueue("team-b")),
	}
	plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes, Ledger: ledger, Queue: queue, Queues: queues})
	if got := reserved(plan); got != "ns/b-young" {
		t.Fatalf("reserved %q, want team-b's gang first (share 0 < team-a's 0.5)", got)
	}

	// Weight 4 makes team-a's share 0.5 / 4 = 0.125; team-b's 1 GPU of 8
	// (0.125) ties, and then the older gang goes first.
	queues[0].Weight = 4000
	ledger = append(ledger, engine.Grant{Request: wrappers.Gang("b-running", 1, 1, 0, wrappers.InQueue("team-b")), Workers: []string{"a"}})
	queue = []engine.Request{wrappers.Gang("a-old", 3, 3, 1, wrappers.InQueue("team-a")), wrappers.Gang("b-young", 3, 3, 9, wrappers.InQueue("team-b"))}
	plan = engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes, Ledger: ledger, Queue: queue, Queues: queues})
	if got := reserved(plan); got != "ns/a-old" {
		t.Fatalf("reserved %q, want team-a's older gang (equal shares after weight)", got)
	}

	// Within a queue: priority before age.
	high := wrappers.Gang("b-high", 4, 4, 5, wrappers.InQueue("team-b"))
	high.Priority = 10
	queue = []engine.Request{wrappers.Gang("b-old", 4, 4, 1, wrappers.InQueue("team-b")), high}
	plan = engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes, Ledger: ledger[:1], Queue: queue, Queues: queues})
	if got := reserved(plan); got != "ns/b-high" {
		t.Fatalf("reserved %q, want the higher-priority gang of team-b", got)
	}
}

// TestQueueUsage: the Plan reports each queue's nominal, use, borrowing
// and gang counts after the cycle.
func TestQueueUsage(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)}
	queues := []engine.Queue{wrappers.EngineQueue("team-a", "research", 4), wrappers.EngineQueue("team-b", "research", 8)}
	plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes, Queues: queues, Queue: []engine.Request{
		wrappers.Gang("burst", 6, 6, 0, wrappers.InQueue("team-a")), wrappers.Gang("more", 8, 8, 1, wrappers.InQueue("team-a")),
	}})
	want := []engine.QueueUsage{
		{Name: "team-a", Nominal: engine.ResourceList{wrappers.GPU: engine.Milli(4)}, Used: engine.ResourceList{wrappers.GPU: engine.Milli(6)}, Borrowed: engine.ResourceList{wrappers.GPU: engine.Milli(2)}, Admitted: 1, Pending: 1},
		{Name: "team-b", Nominal: engine.ResourceList{wrappers.GPU: engine.Milli(8)}, Used: engine.ResourceList{wrappers.GPU: 0}, Borrowed: engine.ResourceList{}},
	}
	if d := cmp.Diff(want, plan.Queues); d != "" {
		t.Errorf("queue usage (-want +got):\n%s", d)
	}
}

// TestQueueReclaimAtPhaseBoundary: team-a borrows team-b's idle quota;
// when team-b's gang arrives and its nominal quota is lent out, team-a's
// next phase is not admitted on borrowed quota (it would be, without
// reclaim), so team-b's gang gets the quota as soon as team-a's running
// phase ends, and team-a's next phase waits with the reason.
func TestQueueReclaimAtPhaseBoundary(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)}
	for _, policy := range []engine.ReclaimPolicy{engine.ReclaimNever, engine.ReclaimAny, engine.ReclaimLowerPriority} {
		t.Run(string(policy), func(t *testing.T) {
			queues := []engine.Queue{wrappers.EngineQueue("team-a", "research", 4), wrappers.EngineQueue("team-b", "research", 12)}
			queues[1].Reclaim = policy
			s := engine.NewState(engine.DefaultConfig(), nodes, nil)
			s.SetQueues(queues)
			s.Submit(wrappers.Gang("a-train", 12, 12, 0, wrappers.InQueue("team-a")))
			if plan := s.Cycle(Epoch); reserved(plan) != "ns/a-train" {
				t.Fatalf("team-a could not borrow team-b's idle quota: %+v", plan)
			}
			// team-b's gang arrives: its 8 fit its nominal 12, but 8 of
			// it are lent. team-a's next phase (4 GPUs, on borrowed
			// quota: 12 of nominal 4 in use) queues too; the nodes have
			// room for it.
			s.Submit(wrappers.Gang("b-train", 8, 8, 5, wrappers.InQueue("team-b")))
			next := wrappers.Gang("a-validate", 2, 2, 0, wrappers.InQueue("team-a"))
			next.Gang.Phase = "validate"
			s.Submit(next)
			plan := s.Cycle(Epoch.Add(time.Minute))
			a := waitOf(plan, "ns/a-validate")
			switch policy {
			case engine.ReclaimNever:
				// Nothing is reclaimed: team-a's phase borrows on. (2 of
				// the 12 are still free in the cohort pool.)
				if reserved(plan) != "ns/a-validate" {
					t.Fatalf("reserved %q, want a-validate on borrowed quota (no reclaim)", reserved(plan))
				}
			case engine.ReclaimAny, engine.ReclaimLowerPriority:
				// LowerPriority: team-a's gangs have priority 0, like
				// team-b's: not lower, so they are not held back.
				if policy == engine.ReclaimLowerPriority {
					if reserved(plan) != "ns/a-validate" {
						t.Fatalf("reserved %q, want a-validate (same priority is not lower)", reserved(plan))
					}
					return
				}
				if reserved(plan) != "" || a == nil {
					t.Fatalf("reserved %q; want a-validate held for team-b's reclaim", reserved(plan))
				}
				want := "queue team-a would borrow nvidia.com/gpu of cohort research, which queue team-b is reclaiming for ns/b-train/train (it waits for its nominal quota); the gang needs 2, 12 of its nominal 4 in use"
				if a.Message() != want {
					t.Errorf("a-validate waits:\n got %q\nwant %q", a.Message(), want)
				}
				b := waitOf(plan, "ns/b-train")
				if b == nil || !b.Queue.Reclaiming {
					t.Fatalf("b-train's wait does not say it reclaims: %+v", b)
				}
				// team-a's train phase ends: team-b's gang gets its quota
				// before team-a's next phase borrows again.
				s.Release(engine.GangKey{Pipeline: "ns/a-train", Phase: "train"})
				plan = s.Cycle(Epoch.Add(2 * time.Minute))
				if got := reserved(plan); got != "ns/a-validate,ns/b-train" {
					t.Fatalf("reserved %q after the borrower's phase ended, want both (a-validate within its nominal now)", got)
				}
			}
		})
	}
}

// TestQueueDocsExample: the numbers docs/queues.md's worked example
// quotes (team A: nominal 8, borrowingLimit 6; team B: nominal 8,
// lendingLimit 6, cohort research).
func TestQueueDocsExample(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)}
	queues := []engine.Queue{
		{Name: "team-a", Cohort: "research", Resources: map[engine.ResourceName]engine.QueueQuota{wrappers.GPU: {Nominal: engine.Milli(8), BorrowingLimit: limit(6)}}},
		{Name: "team-b", Cohort: "research", Resources: map[engine.ResourceName]engine.QueueQuota{wrappers.GPU: {Nominal: engine.Milli(8), LendingLimit: limit(6)}}},
	}
	resnet := wrappers.Gang("resnet", 12, 12, 1, wrappers.InQueue("team-a"))
	if plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes, Queues: queues, Queue: []engine.Request{resnet}}); reserved(plan) != "ns/resnet" {
		t.Errorf("with team B idle, resnet is not admitted: %+v", plan)
	}
	bRunning := engine.Grant{Request: wrappers.Gang("b", 6, 6, 0, wrappers.InQueue("team-b")), Workers: []string{"b", "b", "b", "b", "b", "b"}}
	plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes, Queues: queues, Ledger: []engine.Grant{bRunning}, Queue: []engine.Request{resnet}})
	want := "queue team-a allows 10 more nvidia.com/gpu (nominal 8, 0 in use, with what cohort research lends now); the gang needs 12"
	if w := waitOf(plan, "ns/resnet"); w == nil || w.Message() != want {
		t.Errorf("with team B using 6, resnet waits %+v, want %q", w, want)
	}
	huge := wrappers.Gang("huge", 16, 16, 1, wrappers.InQueue("team-a"))
	plan = engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes, Queues: queues, Queue: []engine.Request{huge}})
	want = "queue team-a can hold at most 14 nvidia.com/gpu (nominal 8, borrowingLimit 6); the gang needs 16 at once"
	if len(plan.Infeasible) != 1 || plan.Infeasible[0].Message != want {
		t.Errorf("a 16-GPU gang: %+v, want Infeasible %q", plan.Infeasible, want)
	}
}

// Wait.Ahead is a place in the gang's own queue's order: with tenant
// queues the gangs of another queue are not counted (the order across
// queues follows fair share and shifts as gangs run), and the message
// says younger gangs that fit may still start first (backfill), which a
// bare count would hide: the gangs told "0 gangs ahead" are overtaken by
// two younger gangs that fit.
func TestWaitAheadCountsTheGangsOwnQueue(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("a", 4), wrappers.EngineNode("b", 4)}
	queues := []engine.Queue{wrappers.EngineQueue("team-a", "", 16), wrappers.EngineQueue("team-b", "", 16)}
	queue := []engine.Request{
		wrappers.Gang("a-big", 8, 8, 0, wrappers.InQueue("team-a")), wrappers.Gang("b-big", 8, 8, 1, wrappers.InQueue("team-b")),
		wrappers.Gang("a-next", 8, 8, 2, wrappers.InQueue("team-a")), wrappers.Gang("b-small", 3, 3, 3, wrappers.InQueue("team-b")), wrappers.Gang("a-small", 3, 3, 4, wrappers.InQueue("team-a")),
	}
	ledger := []engine.Grant{{Request: wrappers.Gang("running", 1, 1, -1, wrappers.InQueue("team-b")), Workers: []string{"a"}}}
	plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes, Ledger: ledger, Queue: queue, Queues: queues})
	if got := reserved(plan); got != "ns/a-small,ns/b-small" {
		t.Fatalf("reserved %q, want both younger small gangs to backfill", got)
	}
	cases := map[string]struct {
		ahead int
		in    string
	}{"ns/a-big": {0, "team-a"}, "ns/b-big": {0, "team-b"}, "ns/a-next": {1, "team-a"}}
	for p, want := range cases {
		w := waitOf(plan, p)
		if w == nil {
			t.Fatalf("%s has no Wait: %+v", p, plan.Waiting)
		}
		if w.Ahead != want.ahead || w.AheadIn != want.in {
			t.Errorf("%s: %d ahead in %q, want %d in %q", p, w.Ahead, w.AheadIn, want.ahead, want.in)
		}
	}
	want := "needs 8 × {nvidia.com/gpu: 1} at once on 2 matching nodes; 1 fit now across 1 nodes, largest block 1; 1 gang ahead in queue team-a (younger gangs that fit may start first until the head waits past the starvation bound)"
	if got := waitOf(plan, "ns/a-next").Message(); got != want {
		t.Errorf("message:\n got %q\nwant %q", got, want)
	}
}

// TestGrowthGoesToTheQueueBelowItsShare: what the cohort has free goes
// to the elastic gang of the queue with the lowest share, not to the
// oldest gang: team A already holds 10 of its 8 GPUs, team B 2.
func TestGrowthGoesToTheQueueBelowItsShare(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("n", 16)}
	ledger := []engine.Grant{
		wrappers.Grant(wrappers.Gang("a-old", 2, 12, 0, wrappers.InQueue("team-a")), wrappers.Repeat("n", 10)),
		wrappers.Grant(wrappers.Gang("b-young", 2, 8, 5, wrappers.InQueue("team-b")), wrappers.Repeat("n", 2)),
	}
	s := engine.NewState(engine.Config{StarvationBound: time.Hour}, nodes, ledger)
	s.SetQueues([]engine.Queue{wrappers.EngineQueue("team-a", "c", 8), wrappers.EngineQueue("team-b", "c", 8)})
	plan := s.Cycle(Epoch.Add(time.Hour))
	var got []string
	for _, g := range plan.Grows {
		got = append(got, fmt.Sprintf("%s+%d", g.Gang.Pipeline, len(g.Workers)))
	}
	if strings.Join(got, ",") != "ns/b-young+4" {
		t.Errorf("grows %v, want team B's gang to take the 4 free GPUs", got)
	}
}

// TestStarvingBorrowerHoldsNothing: past its starvation bound, a queue's
// head that would fit within its queue's nominal quota holds the queue
// (nothing behind it is admitted into it), but one that would run on
// what the cohort lends does not: the bound promises a queue's
// entitlement, not borrowed room (Kueue's generator, issue 31: holding
// queues for their borrowing 20-GPU heads cost 4 × the average JCT).
func TestStarvingBorrowerHoldsNothing(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)}
	queues := []engine.Queue{wrappers.EngineQueue("team-a", "research", 4), wrappers.EngineQueue("team-b", "research", 4)}
	onB := func(p string, n int32, q string) engine.Grant {
		workers := make([]string, n)
		for i := range workers {
			workers[i] = "b"
		}
		return engine.Grant{Request: wrappers.Gang(p, n, n, 0, wrappers.InQueue(q)), Workers: workers}
	}
	cases := map[string]struct {
		ledger   []engine.Grant
		head     int32
		wantHeld bool
	}{
		// team-a holds 2 of its 4; a 4-GPU head would borrow 2.
		"a head that would borrow": {ledger: []engine.Grant{onB("a-running", 2, "team-a"), onB("b-running", 4, "team-b")}, head: 4},
		// team-b borrows 2 of team-a's 4; team-a's 4-GPU head is within its
		// nominal quota and waits for it.
		"a head within nominal": {ledger: []engine.Grant{onB("b-running", 6, "team-b")}, head: 4, wantHeld: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			queue := []engine.Request{
				wrappers.Gang("head", tc.head, tc.head, 0, wrappers.InQueue("team-a")),
				wrappers.Gang("small", 1, 1, 1, wrappers.InQueue("team-a")),
			}
			now := wrappers.EngineT0.Add(30 * time.Minute) // both past the 10-minute bound
			plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: now, Nodes: nodes, Ledger: tc.ledger, Queue: queue, Queues: queues})
			if w := waitOf(plan, "ns/head"); w == nil {
				t.Fatalf("the head does not wait: reserved %q", reserved(plan))
			}
			w := waitOf(plan, "ns/small")
			held := w != nil && w.Queue != nil && w.Queue.HeldFor != nil && *w.Queue.HeldFor == wrappers.GangKey("head")
			if held != tc.wantHeld {
				t.Errorf("small held for the head: %v, want %v (reserved %q, wait %+v)", held, tc.wantHeld, reserved(plan), w)
			}
			if !tc.wantHeld && reserved(plan) != "ns/small" {
				t.Errorf("reserved %q, want ns/small", reserved(plan))
			}
			if plan.Fence != nil {
				t.Errorf("a queue wait fenced nodes: %+v", plan.Fence)
			}
		})
	}
}

// TestStarvingBorrowerFencesNothing: the same for the nodes. Past its
// bound, a gang the nodes cannot hold yet fences the nodes it waits for
// when it would run within its queue's nominal quota, and not when it
// would borrow.
func TestStarvingBorrowerFencesNothing(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)}
	queues := []engine.Queue{wrappers.EngineQueue("team-a", "research", 4), wrappers.EngineQueue("team-b", "research", 12)}
	// 13 GPUs held outside any queue (no default queue: not limited).
	other := engine.Grant{Request: wrappers.Gang("other", 13, 13, 0, wrappers.InQueue("")),
		Workers: []string{"a", "a", "a", "a", "a", "a", "a", "a", "b", "b", "b", "b", "b"}}
	for name, tc := range map[string]struct {
		head      int32
		wantFence bool
	}{
		"a head that would borrow": {head: 6},
		"a head within nominal":    {head: 4, wantFence: true},
	} {
		t.Run(name, func(t *testing.T) {
			queue := []engine.Request{
				wrappers.Gang("head", tc.head, tc.head, 0, wrappers.InQueue("team-a")),
				wrappers.Gang("small", 1, 1, 1, wrappers.InQueue("team-a")),
			}
			now := wrappers.EngineT0.Add(30 * time.Minute)
			plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: now, Nodes: nodes, Ledger: []engine.Grant{other}, Queue: queue, Queues: queues})
			if fenced := plan.Fence != nil; fenced != tc.wantFence {
				t.Errorf("fence %+v, want fenced %v", plan.Fence, tc.wantFence)
			}
			if want := map[bool]string{true: "", false: "ns/small"}[tc.wantFence]; reserved(plan) != want {
				t.Errorf("reserved %q, want %q", reserved(plan), want)
			}
		})
	}
}
