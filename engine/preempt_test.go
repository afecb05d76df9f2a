package engine_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// lender is team-b of cohort research, nominal 8, reclaiming with
// policy and grace.
func lender(policy engine.ReclaimPolicy, grace *time.Duration) engine.Queue {
	q := wrappers.EngineQueue("team-b", "research", 8)
	q.Reclaim, q.ReclaimGrace = policy, grace
	return q
}

func dur(d time.Duration) *time.Duration { return &d }

func preempted(plan engine.Plan) string {
	var got []string
	for _, p := range plan.Preemptions {
		got = append(got, p.Gang.Pipeline)
	}
	return strings.Join(got, ",")
}

func shrinks(plan engine.Plan) string {
	var got []string
	for _, s := range plan.Shrinks {
		got = append(got, s.Gang.Pipeline+"-"+string(rune('0'+len(s.Workers))))
	}
	return strings.Join(got, ",")
}

// mustTake stops the test unless plan preempts exactly wantPreempted
// and shrinks exactly wantShrunk (preempted's and shrinks' forms).
func mustTake(t *testing.T, plan engine.Plan, wantPreempted, wantShrunk string) {
	t.Helper()
	if got := preempted(plan); got != wantPreempted {
		t.Fatalf("preempted %q, want %q; preemptions %+v, waiting %+v", got, wantPreempted, plan.Preemptions, plan.Waiting)
	}
	if got := shrinks(plan); got != wantShrunk {
		t.Fatalf("shrunk %q, want %q", got, wantShrunk)
	}
}

func TestPreemptReclaimsPastGrace(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)}
	// team-a holds all 16 GPUs: 8 of its own and 8 borrowed of team-b.
	ledger := func() []engine.Grant {
		return []engine.Grant{
			wrappers.Grant(wrappers.Gang("a-old", 8, 8, 0, wrappers.InQueue("team-a")), wrappers.Repeat("a", 8)),
			wrappers.Grant(wrappers.Gang("a-mid", 4, 4, 1, wrappers.InQueue("team-a")), wrappers.Repeat("b", 4)),
			wrappers.Grant(wrappers.Gang("a-young", 4, 4, 2, wrappers.InQueue("team-a")), wrappers.Repeat("b", 4)),
		}
	}
	waiting := func(min int32) engine.Request {
		r := wrappers.Gang("b", min, min, 10, wrappers.InQueue("team-b"))
		return r
	}
	cases := map[string]struct {
		queue         engine.Queue
		ledger        []engine.Grant
		min           int32
		priority      int32
		now           time.Duration // since Epoch
		wantPreempted string
		wantShrunk    string
	}{
		"within the grace period: nothing is preempted": {
			queue: lender(engine.ReclaimAny, dur(5*time.Minute)), min: 4, now: 14 * time.Minute,
		},
		"no grace period: reclaim at phase boundaries only": {
			queue: lender(engine.ReclaimAny, nil), min: 4, now: 10 * time.Hour,
		},
		"policy Never: nothing is preempted": {
			queue: lender(engine.ReclaimNever, dur(0)), min: 4, now: 10 * time.Hour,
		},
		"past the grace period: the youngest gang that covers the shortfall": {
			queue: lender(engine.ReclaimAny, dur(5*time.Minute)), min: 4, now: 15 * time.Minute,
			wantPreempted: "ns/a-young",
		},
		"fewest gangs: one gang that covers it alone beats two younger": {
			queue: lender(engine.ReclaimAny, dur(0)), min: 6, now: 10 * time.Minute,
			wantPreempted: "ns/a-old",
		},
		"lowest priority first, whatever the age": {
			queue: lender(engine.ReclaimAny, dur(0)), min: 4, now: 10 * time.Minute,
			ledger: func() []engine.Grant {
				l := ledger()
				l[2].Priority = 5 // a-young outranks a-mid
				return l
			}(),
			wantPreempted: "ns/a-mid",
		},
		"elastic surplus is shrunk before any gang is preempted": {
			queue: lender(engine.ReclaimAny, dur(0)), min: 2, now: 10 * time.Minute,
			ledger: func() []engine.Grant {
				l := ledger()
				l[2] = wrappers.Grant(wrappers.Gang("a-young", 2, 4, 2, wrappers.InQueue("team-a")), wrappers.Repeat("b", 4))
				return l
			}(),
			wantShrunk: "ns/a-young-2",
		},
		"LowerPriority: borrowers of equal priority are not preempted": {
			queue: lender(engine.ReclaimLowerPriority, dur(0)), min: 4, now: 10 * time.Minute,
		},
		"LowerPriority: the lower-priority borrower is": {
			queue: lender(engine.ReclaimLowerPriority, dur(0)), min: 4, now: 10 * time.Minute, priority: 1,
			wantPreempted: "ns/a-young",
		},
		"LowerPriority: nothing if the lower-priority borrowers cannot cover it": {
			queue: lender(engine.ReclaimLowerPriority, dur(0)), min: 6, now: 10 * time.Minute, priority: 1,
			ledger: func() []engine.Grant {
				l := ledger()
				l[0].Priority, l[1].Priority = 5, 5 // only a-young (4) is lower
				return l
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := tc.ledger
			if l == nil {
				l = ledger()
			}
			s := engine.NewState(engine.Config{StarvationBound: time.Hour}, nodes, l)
			s.SetQueues([]engine.Queue{wrappers.EngineQueue("team-a", "research", 8), tc.queue})
			w := waiting(tc.min)
			w.Priority = tc.priority
			s.Submit(w)
			now := Epoch.Add(tc.now)
			plan := s.Cycle(now)
			mustTake(t, plan, tc.wantPreempted, tc.wantShrunk)
			for _, p := range plan.Preemptions {
				i := slices.IndexFunc(plan.Releases, func(r engine.Release) bool { return r.Gang == p.Gang })
				if i < 0 || plan.Releases[i].Reason != engine.ReleasePreempted || plan.Releases[i].Message != p.Message {
					t.Fatalf("preemption %s is not released as Preempted: %+v", p.Gang, plan.Releases)
				}
				if p.For != w.Gang || p.Queue != "team-a" || p.Lender != "team-b" {
					t.Fatalf("preemption %+v", p)
				}
				if _, ok := s.Grant(p.Gang); ok {
					t.Fatalf("%s still holds its grant", p.Gang)
				}
			}
			if tc.wantPreempted == "" && tc.wantShrunk == "" {
				if len(plan.Releases) != 0 {
					t.Fatalf("released %+v", plan.Releases)
				}
				return
			}
			// The quota is back: the next cycle admits the lender's gang.
			next := s.Cycle(now.Add(time.Second))
			if got := reserved(next); got != "ns/b" {
				t.Fatalf("next cycle reserved %q, want ns/b; waiting: %+v", got, next.Waiting)
			}
		})
	}
}

func TestPreemptMessage(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)}
	s := engine.NewState(engine.Config{StarvationBound: time.Hour}, nodes, []engine.Grant{
		wrappers.Grant(wrappers.Gang("a-old", 8, 8, 0, wrappers.InQueue("team-a")), wrappers.Repeat("a", 8)),
		wrappers.Grant(wrappers.Gang("a-young", 8, 8, 2, wrappers.InQueue("team-a")), wrappers.Repeat("b", 8)),
	})
	s.SetQueues([]engine.Queue{wrappers.EngineQueue("team-a", "research", 8), lender(engine.ReclaimAny, dur(90*time.Second))})
	s.Submit(wrappers.Gang("eval", 4, 4, 10, wrappers.InQueue("team-b")))
	plan := s.Cycle(Epoch.Add(20 * time.Minute))
	want := "preempted: queue team-b reclaims the nvidia.com/gpu its cohort research borrowed for ns/eval/train, which waited 10m0s for its nominal quota (reclaimGracePeriod 1m30s); its 8 workers held 8 nvidia.com/gpu, queue team-a used 16 of its nominal 8"
	if len(plan.Preemptions) != 1 || plan.Preemptions[0].Message != want {
		t.Fatalf("preemptions %+v\nwant message %q", plan.Preemptions, want)
	}
	if plan.Preemptions[0].Gang.Pipeline != "ns/a-young" {
		t.Fatalf("preempted %s, want the youngest, ns/a-young", plan.Preemptions[0].Gang)
	}
}

// withinQueue: a gang waiting past the grace period for its own queue's
// quota preempts the queue's gangs of lower priority (LowerPriority), or
// also of equal priority and a younger pipeline (Any), surplus first and
// the fewest, youngest gangs; never for a gang that waits for nodes, not
// quota, and never an older gang of equal priority.
func TestPreemptWithinQueue(t *testing.T) {
	// team-a: nominal 8 on 16 GPUs, no cohort; its 8 are held by a-old
	// (4, created at minute 0) and a-young (4, minute 2).
	ledger := func() []engine.Grant {
		return []engine.Grant{
			wrappers.Grant(wrappers.Gang("a-old", 4, 4, 0, wrappers.InQueue("team-a")), wrappers.Repeat("a", 4)),
			wrappers.Grant(wrappers.Gang("a-young", 4, 4, 2, wrappers.InQueue("team-a")), wrappers.Repeat("a", 4)),
		}
	}
	cases := map[string]struct {
		policy   engine.ReclaimPolicy
		grace    *time.Duration
		priority int32
		// created is the waiting pipeline's age in minutes after Epoch; it
		// queued at minute 10.
		created       int
		nodes         []engine.Node
		ledger        []engine.Grant
		wantPreempted string
		wantShrunk    string
	}{
		"LowerPriority: the youngest lower-priority gang": {
			policy: engine.ReclaimLowerPriority, grace: dur(5 * time.Minute), priority: 5, created: 10,
			wantPreempted: "ns/a-young",
		},
		"within the grace period: nothing": {
			policy: engine.ReclaimLowerPriority, grace: dur(time.Hour), priority: 5, created: 10,
		},
		"no grace period: nothing": {
			policy: engine.ReclaimLowerPriority, priority: 5, created: 10,
		},
		"Never: nothing": {
			policy: engine.ReclaimNever, grace: dur(0), priority: 5, created: 10,
		},
		"LowerPriority: equal priority is not preempted": {
			policy: engine.ReclaimLowerPriority, grace: dur(0), created: 1,
		},
		"Any: an equal-priority younger pipeline is": {
			policy: engine.ReclaimAny, grace: dur(0), created: 1,
			wantPreempted: "ns/a-young",
		},
		"Any: never an older pipeline of equal priority": {
			policy: engine.ReclaimAny, grace: dur(0), created: 10,
		},
		"elastic surplus before a whole gang": {
			policy: engine.ReclaimLowerPriority, grace: dur(0), priority: 5, created: 10,
			ledger: []engine.Grant{
				wrappers.Grant(wrappers.Gang("a-old", 2, 2, 0, wrappers.InQueue("team-a")), wrappers.Repeat("a", 2)),
				wrappers.Grant(wrappers.Gang("a-young", 2, 6, 2, wrappers.InQueue("team-a")), wrappers.Repeat("b", 6)),
			},
			wantShrunk: "ns/a-young-4",
		},
		"waits for nodes, not quota: nothing": {
			policy: engine.ReclaimLowerPriority, grace: dur(0), priority: 5, created: 10,
			nodes:  []engine.Node{wrappers.EngineNode("a", 8)},
			ledger: []engine.Grant{wrappers.Grant(wrappers.Gang("a-young", 2, 2, 2, wrappers.InQueue("team-a")), wrappers.Repeat("a", 2)), wrappers.Grant(wrappers.Gang("o", 6, 6, 0, wrappers.InQueue("other")), wrappers.Repeat("a", 6))},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nodes := tc.nodes
			if nodes == nil {
				nodes = []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)}
			}
			l := tc.ledger
			if l == nil {
				l = ledger()
			}
			q := wrappers.EngineQueue("team-a", "", 8)
			q.WithinQueue, q.ReclaimGrace = tc.policy, tc.grace
			s := engine.NewState(engine.Config{StarvationBound: time.Hour}, nodes, l)
			s.SetQueues([]engine.Queue{q, wrappers.EngineQueue("other", "", 8)})
			w := wrappers.Gang("high", 4, 4, tc.created, wrappers.InQueue("team-a"))
			w.Queued, w.Priority = Epoch.Add(10*time.Minute), tc.priority
			s.Submit(w)
			now := Epoch.Add(15 * time.Minute)
			plan := s.Cycle(now)
			mustTake(t, plan, tc.wantPreempted, tc.wantShrunk)
			if tc.wantPreempted == "" && tc.wantShrunk == "" {
				if len(plan.Releases) != 0 {
					t.Fatalf("released %+v", plan.Releases)
				}
				return
			}
			for _, p := range plan.Preemptions {
				if p.For != w.Gang || p.Queue != "team-a" || p.Lender != "team-a" || !strings.Contains(p.Message, "preempted within queue team-a") {
					t.Fatalf("preemption %+v", p)
				}
			}
			next := s.Cycle(now.Add(time.Second))
			if got := reserved(next); got != "ns/high" {
				t.Fatalf("next cycle reserved %q, want ns/high; waiting: %+v", got, next.Waiting)
			}
		})
	}
}

func TestWithinQueueMessage(t *testing.T) {
	s := engine.NewState(engine.Config{StarvationBound: time.Hour}, []engine.Node{wrappers.EngineNode("a", 8)}, []engine.Grant{wrappers.Grant(wrappers.Gang("low", 8, 8, 0, wrappers.InQueue("team-a")), wrappers.Repeat("a", 8))})
	q := wrappers.EngineQueue("team-a", "", 8)
	q.WithinQueue, q.ReclaimGrace = engine.ReclaimLowerPriority, dur(2*time.Minute)
	s.SetQueues([]engine.Queue{q})
	w := wrappers.Gang("urgent", 8, 8, 5, wrappers.InQueue("team-a"))
	w.Priority = 100
	s.Submit(w)
	plan := s.Cycle(Epoch.Add(8 * time.Minute))
	want := "preempted within queue team-a (withinQueue LowerPriority) for ns/urgent/train, priority 100 over its 0, which waited 3m0s for the queue's quota (reclaimGracePeriod 2m0s); its 8 workers held 8 nvidia.com/gpu, queue team-a used 8 of its nominal 8"
	if len(plan.Preemptions) != 1 || plan.Preemptions[0].Message != want {
		t.Fatalf("preemptions %+v\nwant message %q", plan.Preemptions, want)
	}
}

// TestRecheckNamesTheNextTimedDecision: a plan tells when time alone
// changes a decision, so a caller that cycles only on events (the
// simulator) preempts at the grace period's end, not at the next event.
func TestRecheckNamesTheNextTimedDecision(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)}
	ledger := []engine.Grant{
		wrappers.Grant(wrappers.Gang("a-old", 8, 8, 0, wrappers.InQueue("team-a")), wrappers.Repeat("a", 8)),
		wrappers.Grant(wrappers.Gang("a-young", 8, 8, 1, wrappers.InQueue("team-a")), wrappers.Repeat("b", 8)),
	}
	s := engine.NewState(engine.Config{StarvationBound: time.Hour}, nodes, ledger)
	s.SetQueues([]engine.Queue{wrappers.EngineQueue("team-a", "research", 8), lender(engine.ReclaimAny, dur(5*time.Minute))})
	w := wrappers.Gang("b", 8, 8, 10, wrappers.InQueue("team-b"))
	s.Submit(w)

	plan := s.Cycle(w.Queued.Add(time.Minute))
	if want := w.Queued.Add(5 * time.Minute); !plan.Recheck.Equal(want) || preempted(plan) != "" {
		t.Fatalf("within the grace: Recheck %v, preempted %q; want %v and nothing", plan.Recheck, preempted(plan), want)
	}
	plan = s.Cycle(plan.Recheck)
	if preempted(plan) != "ns/a-young" {
		t.Fatalf("at the Recheck: preempted %q, want ns/a-young", preempted(plan))
	}
	if want := w.Queued.Add(time.Hour); !plan.Recheck.Equal(want) {
		t.Fatalf("after the preemption: Recheck %v, want the starvation bound %v", plan.Recheck, want)
	}

	s = engine.NewState(engine.Config{StarvationBound: time.Hour}, nodes, nil)
	retry := wrappers.Gang("r", 1, 1, 0)
	retry.NotBefore = Epoch.Add(30 * time.Second)
	s.Submit(retry)
	if plan := s.Cycle(Epoch); !plan.Recheck.Equal(retry.NotBefore) || reserved(plan) != "" {
		t.Fatalf("backoff: Recheck %v, reserved %q; want %v and nothing", plan.Recheck, reserved(plan), retry.NotBefore)
	}
	if plan := s.Cycle(retry.NotBefore); reserved(plan) != "ns/r" || !plan.Recheck.IsZero() {
		t.Fatalf("after the backoff: reserved %q, Recheck %v; want ns/r and none", reserved(plan), plan.Recheck)
	}
}

// TestPreemptNotForWhatTheCycleLent is TestPropPreemption's counterexample
// (-rapid.seed=2401000334176814017): team-b reclaims with LowerPriority
// past its grace period, and team-a, within its nominal quota, has a
// gang of team-b's priority waiting to borrow. The walk runs before the
// preemption, and a gang granted in a cycle is never preempted in it: had
// the walk lent team-b's quota to a-new, the preemption would have taken
// it back from a-old, which borrowed nothing, swapping a-old for a-new
// (team-a's withinQueue policy preempts nothing). Only team-c's elastic
// surplus, which is borrowed, is to be taken.
func TestPreemptNotForWhatTheCycleLent(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("a", 2), wrappers.EngineNode("b", 3)}
	cases := map[string]struct {
		grace         time.Duration
		oldPriority   int32 // a-old's; team-b's waiting gang has 1
		wantReserved  string
		wantPreempted string
		wantShrunk    string
		wantNext      string // reserved by the next cycle
	}{
		"past the grace period: a-new does not borrow, team-c's surplus is shrunk": {
			wantShrunk: "ns/c-elastic-1", wantNext: "ns/b",
		},
		"within the grace period: an equal priority borrows (reclaim at phase boundaries)": {
			grace: time.Hour, wantReserved: "ns/a-new",
		},
		"past it, team-a holding nothing the preemption may take: a-new borrows": {
			oldPriority: 1, wantReserved: "ns/a-new",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			old := wrappers.Gang("a-old", 1, 1, 0, wrappers.InQueue("team-a"))
			old.Priority = tc.oldPriority
			ledger := []engine.Grant{
				wrappers.Grant(old, wrappers.Repeat("a", 1)),                                                             // team-a: 1 of its nominal 1
				wrappers.Grant(wrappers.Gang("c-elastic", 1, 2, 1, wrappers.InQueue("team-c")), wrappers.Repeat("b", 2)), // team-c: 2 of 1
			}
			s := engine.NewState(engine.Config{StarvationBound: time.Hour}, nodes, ledger)
			qb := wrappers.EngineQueue("team-b", "c1", 3)
			qb.Reclaim, qb.ReclaimGrace = engine.ReclaimLowerPriority, dur(tc.grace)
			s.SetQueues([]engine.Queue{wrappers.EngineQueue("team-a", "c1", 1), qb, wrappers.EngineQueue("team-c", "c1", 1)})
			b := wrappers.Gang("b", 3, 3, 10, wrappers.InQueue("team-b"))
			b.Priority = 1
			aNew := wrappers.Gang("a-new", 1, 1, 11, wrappers.InQueue("team-a"))
			aNew.Priority = 1
			s.Submit(b)
			s.Submit(aNew)
			now := Epoch.Add(12 * time.Minute)
			plan := s.Cycle(now)
			if got := reserved(plan); got != tc.wantReserved {
				t.Errorf("reserved %q, want %q", got, tc.wantReserved)
			}
			if got := preempted(plan); got != tc.wantPreempted {
				t.Errorf("preempted %q, want %q: %+v", got, tc.wantPreempted, plan.Preemptions)
			}
			if got := shrinks(plan); got != tc.wantShrunk {
				t.Errorf("shrunk %q, want %q", got, tc.wantShrunk)
			}
			if tc.wantReserved == "" {
				w := waitOf(plan, "ns/a-new")
				if w == nil || w.Queue == nil || w.Queue.ReclaimFor == nil || *w.Queue.ReclaimFor != b.Gang {
					t.Errorf("a-new's wait: %+v, want it held for team-b's reclaim", w)
				}
			}
			if tc.wantNext != "" {
				if got := reserved(s.Cycle(now)); got != tc.wantNext {
					t.Errorf("next cycle reserved %q, want %q", got, tc.wantNext)
				}
			}
		})
	}
}

// TestPreemptWithinQueueNotDeferred is TestPropPreemption's counterexample
// (-rapid.seed=8922542294766806003): one node of 7 GPUs, queue qa of
// nominal 8 preempting within itself. The elastic high gang (min 4,
// desired 6) does not fit at its full width; deferred, it let low-b, of
// lower priority, take the 4 GPUs it fits in at min, and then, short of
// quota, preempted low-a for it (low-b, granted in that cycle, is never
// preempted in it). low-a, queued again, was granted ahead of the
// deferred gang in the next cycle and low-b preempted, and so on at the
// same instant. Past the grace period the gang is not deferred: it starts
// at min at once and nothing is preempted.
func TestPreemptWithinQueueNotDeferred(t *testing.T) {
	cases := map[string]struct {
		grace        *time.Duration
		wantReserved string
	}{
		"past the grace period: high starts at min, nothing preempted":    {grace: dur(0), wantReserved: "ns/high"},
		"within it: high is deferred and low-b backfills (desired first)": {grace: dur(time.Hour), wantReserved: "ns/low-b"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := wrappers.EngineQueue("qa", "", 8)
			q.WithinQueue, q.ReclaimGrace = engine.ReclaimLowerPriority, tc.grace
			lowA := wrappers.Gang("low-a", 2, 3, 1, wrappers.InQueue("qa"))
			s := engine.NewState(engine.Config{StarvationBound: time.Hour}, []engine.Node{wrappers.EngineNode("n0", 7)}, []engine.Grant{wrappers.Grant(lowA, wrappers.Repeat("n0", 3))})
			s.SetQueues([]engine.Queue{q})
			high := wrappers.Gang("high", 4, 6, 1, wrappers.InQueue("qa"))
			high.Priority = 1
			lowB := wrappers.Gang("low-b", 3, 3, 2, wrappers.InQueue("qa"))
			s.Submit(high)
			s.Submit(lowB)
			now := Epoch.Add(2 * time.Minute)
			plan := s.Cycle(now)
			if got := reserved(plan); got != tc.wantReserved {
				t.Errorf("reserved %q, want %q", got, tc.wantReserved)
			}
			if got := preempted(plan); got != "" {
				t.Errorf("preempted %q, want none: %+v", got, plan.Preemptions)
			}
			if tc.wantReserved == "ns/high" {
				if g, ok := s.Grant(high.Gang); !ok || len(g.Workers) != 4 {
					t.Errorf("high's grant %+v, want 4 workers", g)
				}
			}
			// Queued again at once, as the controller does, no victim is
			// granted and preempted again at the same instant.
			seen := map[engine.GangKey]bool{}
			for range 3 {
				for _, p := range plan.Preemptions {
					if seen[p.Gang] {
						t.Fatalf("%s preempted twice at %v: a preemption loop", p.Gang, now)
					}
					seen[p.Gang] = true
					r := lowA
					if p.Gang == lowB.Gang {
						r = lowB
					}
					r.Queued = now
					s.Submit(r)
				}
				plan = s.Cycle(now)
			}
		})
	}
}

// The controller schedules each cycle afresh from a Snapshot. A gang that
// others were preempted for must keep its claim into the next cycle
// (Plan.Nominated → Snapshot.Nominated): otherwise the preempted
// borrower, queued again and older, is admitted ahead of it on the quota
// just freed, the lender preempts it again after its grace period, and
// so on (seen on a real node: team A's gang recreated every 2 s while
// team B never ran).
func TestNominatedGangKeepsItsClaimAcrossSnapshots(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("n", 4)}
	queues := []engine.Queue{wrappers.EngineQueue("team-a", "c", 2), wrappers.EngineQueue("team-b", "c", 2)}
	queues[1].Reclaim, queues[1].ReclaimGrace = engine.ReclaimAny, dur(0)
	a := wrappers.Gang("a", 4, 4, 0, wrappers.InQueue("team-a"))
	b := wrappers.Gang("b", 2, 2, 10, wrappers.InQueue("team-b"))
	cfg := engine.Config{StarvationBound: time.Hour}
	now := Epoch.Add(time.Hour)

	// Cycle 1: a borrows all of team-b's quota; b past its grace preempts it.
	plan := engine.Schedule(cfg, engine.Snapshot{Now: now, Nodes: nodes, Queues: queues,
		Ledger: []engine.Grant{wrappers.Grant(a, wrappers.Repeat("n", 4))}, Queue: []engine.Request{b}})
	if preempted(plan) != "ns/a" || !slices.Equal(plan.Nominated, []engine.GangKey{b.Gang}) {
		t.Fatalf("cycle 1: preempted %q, nominated %v; want ns/a preempted for b", preempted(plan), plan.Nominated)
	}
	// Cycle 2: a is queued again (older than b), the node is free.
	next := engine.Snapshot{Now: now.Add(time.Second), Nodes: nodes, Queues: queues, Queue: []engine.Request{a, b}}
	if got := reserved(engine.Schedule(cfg, next)); got != "ns/a" {
		t.Fatalf("without the carried nomination: reserved %q, want ns/a (the thrash this guards against)", got)
	}
	next.Nominated = plan.Nominated
	if got := reserved(engine.Schedule(cfg, next)); got != "ns/b" {
		t.Errorf("with it: reserved %q, want ns/b, the gang a was preempted for", got)
	}
}

// TestPreemptWithinQueueAndCohortTogether: a gang that fits within its
// queue's nominal quota once its queue's own lower-priority gangs are
// gone, in a full cohort whose other queue borrows, takes both in one
// preemption, as Kueue's candidates do (same queue and cohort together).
// Taken apart, neither fires: reclaim counts the queue's own
// lower-priority gangs in its use (so the gang "would borrow"), and
// within-queue preemption frees only the queue's own gangs, never enough.
func TestPreemptWithinQueueAndCohortTogether(t *testing.T) {
	// 40 GPUs; team-a and team-b, nominal 20 each. team-a's a-medium
	// (priority 100) holds 5; team-b holds 35 (borrowing 15).
	nodes := []engine.Node{wrappers.EngineNode("a", 40)}
	gang := func(p string, n, priority int32, queue string) engine.Request {
		r := wrappers.Gang(p, n, n, 0, wrappers.InQueue(queue))
		r.Priority = priority
		return r
	}
	queue := func(name string, within engine.ReclaimPolicy) engine.Queue {
		q := wrappers.EngineQueue(name, "cohort", 20)
		q.Reclaim, q.WithinQueue, q.ReclaimGrace = engine.ReclaimAny, within, dur(0)
		return q
	}
	cases := map[string]struct {
		within        engine.ReclaimPolicy
		wantPreempted string
	}{
		// team-b's youngest gang, b-mid (15, borrowed), and a-medium go.
		"LowerPriority: the queue's own and the borrower's together": {within: engine.ReclaimLowerPriority, wantPreempted: "ns/b-mid,ns/a-medium"},
		// Without withinQueue, a-large would borrow: nothing is preempted.
		"Never: reclaim alone does not fire": {within: engine.ReclaimNever},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := engine.NewState(engine.DefaultConfig(), nodes, []engine.Grant{
				wrappers.Grant(gang("a-medium", 5, 100, "team-a"), wrappers.Repeat("a", 5)),
				wrappers.Grant(gang("b-large", 20, 200, "team-b"), wrappers.Repeat("a", 20)),
				wrappers.Grant(gang("b-mid", 15, 100, "team-b"), wrappers.Repeat("a", 15)),
			})
			s.SetQueues([]engine.Queue{queue("team-a", tc.within), queue("team-b", tc.within)})
			w := gang("a-large", 20, 200, "team-a")
			w.Queued = Epoch.Add(time.Minute)
			s.Submit(w)
			now := Epoch.Add(2 * time.Minute)
			mustTake(t, s.Cycle(now), tc.wantPreempted, "")
			if tc.wantPreempted == "" {
				return
			}
			if got := reserved(s.Cycle(now.Add(time.Second))); got != "ns/a-large" {
				t.Fatalf("next cycle reserved %q, want ns/a-large", got)
			}
		})
	}
}
