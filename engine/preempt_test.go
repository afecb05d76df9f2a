package engine

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// lender is team-b of cohort research, nominal 8, reclaiming with
// policy and grace.
func lender(policy ReclaimPolicy, grace *time.Duration) Queue {
	q := gpuQueue("team-b", "research", 8)
	q.Reclaim, q.ReclaimGrace = policy, grace
	return q
}

func dur(d time.Duration) *time.Duration { return &d }

// grantIn is a grant of r with n workers on node.
func grantIn(r Request, node string, n int) Grant {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = node
	}
	return Grant{Request: r, Workers: ws}
}

func preempted(plan Plan) string {
	var got []string
	for _, p := range plan.Preemptions {
		got = append(got, p.Gang.Pipeline)
	}
	return strings.Join(got, ",")
}

func shrunk(plan Plan) string {
	var got []string
	for _, s := range plan.Shrinks {
		got = append(got, s.Gang.Pipeline+"-"+string(rune('0'+len(s.Workers))))
	}
	return strings.Join(got, ",")
}

func TestPreemptReclaimsPastGrace(t *testing.T) {
	nodes := []Node{gpuNode("a", 8), gpuNode("b", 8)}
	// team-a holds all 16 GPUs: 8 of its own and 8 borrowed of team-b.
	ledger := func() []Grant {
		return []Grant{
			grantIn(inQueue("team-a", "a-old", 8, 8, 0), "a", 8),
			grantIn(inQueue("team-a", "a-mid", 4, 4, 1), "b", 4),
			grantIn(inQueue("team-a", "a-young", 4, 4, 2), "b", 4),
		}
	}
	waiting := func(min int32) Request {
		r := inQueue("team-b", "b", min, min, 10)
		return r
	}
	cases := map[string]struct {
		queue         Queue
		ledger        []Grant
		min           int32
		priority      int32
		now           time.Duration // since t0
		wantPreempted string
		wantShrunk    string
	}{
		"within the grace period: nothing is preempted": {
			queue: lender(ReclaimAny, dur(5*time.Minute)), min: 4, now: 14 * time.Minute,
		},
		"no grace period: reclaim at phase boundaries only": {
			queue: lender(ReclaimAny, nil), min: 4, now: 10 * time.Hour,
		},
		"policy Never: nothing is preempted": {
			queue: lender(ReclaimNever, dur(0)), min: 4, now: 10 * time.Hour,
		},
		"past the grace period: the youngest gang that covers the shortfall": {
			queue: lender(ReclaimAny, dur(5*time.Minute)), min: 4, now: 15 * time.Minute,
			wantPreempted: "ns/a-young",
		},
		"fewest gangs: one gang that covers it alone beats two younger": {
			queue: lender(ReclaimAny, dur(0)), min: 6, now: 10 * time.Minute,
			wantPreempted: "ns/a-old",
		},
		"lowest priority first, whatever the age": {
			queue: lender(ReclaimAny, dur(0)), min: 4, now: 10 * time.Minute,
			ledger: func() []Grant {
				l := ledger()
				l[2].Priority = 5 // a-young outranks a-mid
				return l
			}(),
			wantPreempted: "ns/a-mid",
		},
		"elastic surplus is shrunk before any gang is preempted": {
			queue: lender(ReclaimAny, dur(0)), min: 2, now: 10 * time.Minute,
			ledger: func() []Grant {
				l := ledger()
				l[2] = grantIn(inQueue("team-a", "a-young", 2, 4, 2), "b", 4)
				return l
			}(),
			wantShrunk: "ns/a-young-2",
		},
		"LowerPriority: borrowers of equal priority are not preempted": {
			queue: lender(ReclaimLowerPriority, dur(0)), min: 4, now: 10 * time.Minute,
		},
		"LowerPriority: the lower-priority borrower is": {
			queue: lender(ReclaimLowerPriority, dur(0)), min: 4, now: 10 * time.Minute, priority: 1,
			wantPreempted: "ns/a-young",
		},
		"LowerPriority: nothing if the lower-priority borrowers cannot cover it": {
			queue: lender(ReclaimLowerPriority, dur(0)), min: 6, now: 10 * time.Minute, priority: 1,
			ledger: func() []Grant {
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
			s := NewState(Config{StarvationBound: time.Hour}, nodes, l)
			s.SetQueues([]Queue{gpuQueue("team-a", "research", 8), tc.queue})
			w := waiting(tc.min)
			w.Priority = tc.priority
			s.Submit(w)
			now := t0.Add(tc.now)
			plan := s.Cycle(now)
			if got := preempted(plan); got != tc.wantPreempted {
				t.Fatalf("preempted %q, want %q", got, tc.wantPreempted)
			}
			if got := shrunk(plan); got != tc.wantShrunk {
				t.Fatalf("shrunk %q, want %q", got, tc.wantShrunk)
			}
			for _, p := range plan.Preemptions {
				i := slices.IndexFunc(plan.Releases, func(r Release) bool { return r.Gang == p.Gang })
				if i < 0 || plan.Releases[i].Reason != ReleasePreempted || plan.Releases[i].Message != p.Message {
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
	nodes := []Node{gpuNode("a", 8), gpuNode("b", 8)}
	s := NewState(Config{StarvationBound: time.Hour}, nodes, []Grant{
		grantIn(inQueue("team-a", "a-old", 8, 8, 0), "a", 8),
		grantIn(inQueue("team-a", "a-young", 8, 8, 2), "b", 8),
	})
	s.SetQueues([]Queue{gpuQueue("team-a", "research", 8), lender(ReclaimAny, dur(90*time.Second))})
	s.Submit(inQueue("team-b", "eval", 4, 4, 10))
	plan := s.Cycle(t0.Add(20 * time.Minute))
	want := "preempted: queue team-b reclaims the nvidia.com/gpu its cohort research borrowed for ns/eval/train, which waited 10m0s for its nominal quota (reclaimGracePeriod 1m30s); its 8 workers held 8 nvidia.com/gpu, queue team-a used 16 of its nominal 8"
	if len(plan.Preemptions) != 1 || plan.Preemptions[0].Message != want {
		t.Fatalf("preemptions %+v\nwant message %q", plan.Preemptions, want)
	}
	if plan.Preemptions[0].Gang.Pipeline != "ns/a-young" {
		t.Fatalf("preempted %s, want the youngest, ns/a-young", plan.Preemptions[0].Gang)
	}
}
