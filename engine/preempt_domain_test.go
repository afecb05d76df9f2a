package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// twoRacks is racks r1 (r1a, r1b) and r2 (r2a, r2b) of block b1, 8 GPUs a
// node, with used[i] GPUs of node i taken by pods no grant covers.
func twoRacks(used ...int64) []engine.Node { return racks(used...)[:4] }

// borrower is a rigid gang of team-a with n one-GPU workers on node,
// created age minutes after Epoch.
func borrower(p string, n int, age int, node string) engine.Grant {
	return wrappers.Grant(wrappers.Gang(p, int32(n), int32(n), age, wrappers.InQueue("team-a")), wrappers.Repeat(node, n))
}

// TestPreemptFreesOneDomain: team-b (nominal 8) reclaims past its grace
// period for b, a gang of 8 workers whose topology wants one rack;
// team-a's borrowing gangs run in both racks. Chosen by quota alone the
// victims are the youngest, one in each rack, and b would still fit in
// no rack: the engine preempts the gangs of one rack instead, the
// cheapest, and b runs there in the next cycle.
func TestPreemptFreesOneDomain(t *testing.T) {
	// Pods hold 4 GPUs of every node; a1 (oldest) … a4 (youngest) hold
	// the rest: team-a uses 16 of its nominal 8.
	spread := func() []engine.Grant {
		return []engine.Grant{borrower("a1", 4, 0, "r1a"), borrower("a2", 4, 1, "r2a"), borrower("a3", 4, 2, "r1b"), borrower("a4", 4, 3, "r2b")}
	}
	cases := map[string]struct {
		used          []int64
		ledger        []engine.Grant
		nominalA      int64 // team-a's nominal quota
		nominalB      int64 // team-b's: 8 if 0
		min           int32
		required      bool
		wantPreempted string
		wantShrunk    string
		wantRack      string // where b runs in the next cycle; "": nothing happens
	}{
		"required: the victims of one rack, the first of two that cost the same": {
			used: []int64{4, 4, 4, 4}, ledger: spread(), nominalA: 8, min: 8, required: true,
			wantPreempted: "ns/a3,ns/a1", wantRack: "r1",
		},
		"required: the rack whose victims are of lower priority, though r1 comes first": {
			used: []int64{4, 4, 4, 4}, nominalA: 8, min: 8, required: true,
			ledger: func() []engine.Grant {
				l := spread()
				l[0].Priority = 1 // a1, in r1
				return l
			}(),
			wantPreempted: "ns/a4,ns/a2", wantRack: "r2",
		},
		// team-a borrows 4 (14 of 10): a3 alone covers the quota, but r1
		// then has room for 4. Freeing r1 takes a3 and a1 (8 GPUs); r2,
		// with 2 GPUs free, a4 and a2 (6 GPUs).
		"required: among equal priorities, the rack that preempts the fewest GPUs": {
			used: []int64{4, 4, 3, 5}, nominalA: 10, min: 8, required: true,
			ledger:        []engine.Grant{borrower("a1", 4, 0, "r1a"), borrower("a2", 3, 1, "r2a"), borrower("a3", 4, 2, "r1b"), borrower("a4", 3, 3, "r2b")},
			wantPreempted: "ns/a4,ns/a2", wantRack: "r2",
		},
		"required: priority before GPUs, the rack of lower priority though it preempts more": {
			used: []int64{4, 4, 3, 5}, nominalA: 10, min: 8, required: true,
			ledger: func() []engine.Grant {
				l := []engine.Grant{borrower("a1", 4, 0, "r1a"), borrower("a2", 3, 1, "r2a"), borrower("a3", 4, 2, "r1b"), borrower("a4", 3, 3, "r2b")}
				l[1].Priority, l[3].Priority = 1, 1 // a2 and a4, in r2
				return l
			}(),
			wantPreempted: "ns/a3,ns/a1", wantRack: "r1",
		},
		// team-a borrows 6 (16 of 10). Shrinking a2 (1..8, 4 workers on
		// each r2 node) by 7 covers it and, with r2b's free GPU, frees r2;
		// freeing r1 would stop a3 and a1.
		"required: shrinking surplus in one rack before stopping gangs in the other": {
			used: []int64{4, 4, 4, 3}, nominalA: 10, min: 8, required: true,
			ledger: []engine.Grant{
				borrower("a1", 4, 0, "r1a"), borrower("a3", 4, 2, "r1b"),
				wrappers.Grant(wrappers.Gang("a2", 1, 8, 1, wrappers.InQueue("team-a")), append(wrappers.Repeat("r2a", 4), wrappers.Repeat("r2b", 4)...)),
			},
			wantShrunk: "ns/a2-7", wantRack: "r2",
		},
		// With a3 gone the cluster has room for 6 of b's 8 workers: even
		// spread, preferred does not fit. It is given the same one-rack
		// search.
		"preferred that does not fit even spread: one rack is freed": {
			used: []int64{4, 4, 3, 5}, nominalA: 10, min: 8,
			ledger:        []engine.Grant{borrower("a1", 4, 0, "r1a"), borrower("a2", 3, 1, "r2a"), borrower("a3", 4, 2, "r1b"), borrower("a4", 3, 3, "r2b")},
			wantPreempted: "ns/a4,ns/a2", wantRack: "r2",
		},
		// Pods hold 8 GPUs of each rack: freeing one rack covers team-b's
		// quota, but no rack can hold 12 while they run.
		"required: no rack can be freed enough, nothing is preempted": {
			used: []int64{4, 4, 4, 4}, ledger: spread(), nominalA: 8, nominalB: 12, min: 12, required: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := engine.NewState(engine.Config{StarvationBound: time.Hour}, twoRacks(tc.used...), tc.ledger)
			nominalB := tc.nominalB
			if nominalB == 0 {
				nominalB = 8
			}
			qb := wrappers.EngineQueue("team-b", "research", nominalB)
			qb.Reclaim, qb.ReclaimGrace = engine.ReclaimAny, dur(5*time.Minute)
			s.SetQueues([]engine.Queue{wrappers.EngineQueue("team-a", "research", tc.nominalA), qb})
			b := wrappers.Gang("b", tc.min, tc.min, 10, wrappers.InQueue("team-b"), wrappers.Topo(rack, tc.required))
			s.Submit(b)
			now := Epoch.Add(15 * time.Minute)
			plan := s.Cycle(now)
			mustTake(t, plan, tc.wantPreempted, tc.wantShrunk)
			if tc.wantRack == "" {
				if len(plan.Releases) != 0 || len(plan.Shrinks) != 0 {
					t.Fatalf("released %+v, shrunk %+v: want nothing taken", plan.Releases, plan.Shrinks)
				}
				return
			}
			for _, p := range plan.Preemptions {
				if want := "to make room for it in example.com/rack " + tc.wantRack; !strings.HasSuffix(p.Message, want) {
					t.Errorf("%s's message %q, want it to end %q", p.Gang, p.Message, want)
				}
			}
			// The victims are queued again at once, as the controller does;
			// b, nominated, runs in the rack freed for it.
			for _, p := range plan.Preemptions {
				g := ledgerRequest(tc.ledger, p.Gang)
				g.Queued = now
				s.Submit(g)
			}
			next := s.Cycle(now.Add(time.Second))
			if got := distinct(racksOf(t, next, "b")); !cmp.Equal(got, map[string]int{tc.wantRack: int(tc.min)}) {
				t.Errorf("next cycle placed b in %v, want all %d in %s", got, tc.min, tc.wantRack)
			}
			if got := preempted(next); got != "" {
				t.Errorf("next cycle preempted %q, want nothing", got)
			}
		})
	}
}

// ledgerRequest is the request of gang key's grant in ledger.
func ledgerRequest(ledger []engine.Grant, key engine.GangKey) engine.Request {
	for _, g := range ledger {
		if g.Gang == key {
			return g.Request
		}
	}
	panic("no grant of " + key.Pipeline)
}

// TestPreemptWithinQueueFreesOneDomain: the same search serves a gang
// preempting its own queue's lower-priority gangs (withinQueue).
func TestPreemptWithinQueueFreesOneDomain(t *testing.T) {
	// team-a's 16 GPUs are held by l1 … l4 (youngest), one per node.
	ledger := []engine.Grant{borrower("l1", 4, 0, "r1a"), borrower("l2", 4, 1, "r2a"), borrower("l3", 4, 2, "r1b"), borrower("l4", 4, 3, "r2b")}
	s := engine.NewState(engine.Config{StarvationBound: time.Hour}, twoRacks(4, 4, 4, 4), ledger)
	q := wrappers.EngineQueue("team-a", "", 16)
	q.WithinQueue, q.ReclaimGrace = engine.ReclaimLowerPriority, dur(0)
	s.SetQueues([]engine.Queue{q})
	high := wrappers.Gang("high", 8, 8, 10, wrappers.InQueue("team-a"), wrappers.Topo(rack, true))
	high.Priority = 5
	s.Submit(high)
	now := Epoch.Add(15 * time.Minute)
	plan := s.Cycle(now)
	if got := preempted(plan); got != "ns/l3,ns/l1" {
		t.Fatalf("preempted %q, want r1's ns/l3,ns/l1 (by quota alone: l4 and l3, one in each rack)", got)
	}
	for _, p := range plan.Preemptions {
		if !strings.HasPrefix(p.Message, "preempted within queue team-a") || !strings.HasSuffix(p.Message, "to make room for it in example.com/rack r1") {
			t.Errorf("%s's message %q", p.Gang, p.Message)
		}
	}
	if got := distinct(racksOf(t, s.Cycle(now.Add(time.Second)), "high")); !cmp.Equal(got, map[string]int{"r1": 8}) {
		t.Errorf("next cycle placed high in %v, want all 8 in r1", got)
	}
}
