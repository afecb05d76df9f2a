package engine

import (
	"testing"
	"time"
)

// ViewQueue lists the waiting gangs by queue and position within it (the
// cycle's Wait beside each) and, within a lender's grace period, which
// running borrower a preemption would take first, without preempting
// anything now.
func TestViewQueue(t *testing.T) {
	nodes := []Node{gpuNode("a", 8), gpuNode("b", 8)}
	queues := []Queue{gpuQueue("team-a", "research", 8), lender(ReclaimAny, dur(time.Hour))}
	ledger := []Grant{
		grantIn(inQueue("team-a", "a-old", 8, 8, 0), "a", 8),
		grantIn(inQueue("team-a", "a-mid", 4, 4, 1), "b", 4),
		grantIn(inQueue("team-a", "a-young", 4, 4, 2), "b", 4),
	}
	queue := []Request{
		inQueue("team-b", "b-young", 4, 4, 12), inQueue("team-a", "a-next", 4, 4, 3), inQueue("team-b", "b", 4, 4, 10),
	}
	v := ViewQueue(DefaultConfig(), Snapshot{Now: t0.Add(15 * time.Minute), Nodes: nodes, Ledger: ledger, Queue: queue, Queues: queues})

	want := []struct {
		pipeline, queue string
		position        int
		reason          WaitReason
	}{
		{"ns/a-next", "team-a", 1, WaitQueue},
		{"ns/b", "team-b", 1, WaitQueue},
		{"ns/b-young", "team-b", 2, WaitQueue},
	}
	if len(v.Gangs) != len(want) {
		t.Fatalf("%d gangs listed, want %d: %+v", len(v.Gangs), len(want), v.Gangs)
	}
	for i, w := range want {
		g := v.Gangs[i]
		if g.Request.Gang.Pipeline != w.pipeline || g.Queue != w.queue || g.Position != w.position || g.AdmitNow {
			t.Errorf("line %d: %s in %q at %d (admit now %v), want %s in %q at %d", i, g.Request.Gang.Pipeline, g.Queue, g.Position, g.AdmitNow, w.pipeline, w.queue, w.position)
			continue
		}
		if g.Wait == nil || g.Wait.Reason != w.reason {
			t.Errorf("%s waits for %+v, want reason %s", w.pipeline, g.Wait, w.reason)
		}
	}
	if len(v.Preemptions) != 0 {
		t.Errorf("within the grace period the cycle preempted %+v", v.Preemptions)
	}
	if len(v.PreemptedNext) != 1 || v.PreemptedNext[0].Gang.Pipeline != "ns/a-young" || v.PreemptedNext[0].For.Pipeline != "ns/b" {
		t.Errorf("preempted next: %+v, want team-a's youngest borrower, for ns/b", v.PreemptedNext)
	}

	// Without queues: one order over the whole cluster, and no preview.
	v = ViewQueue(DefaultConfig(), Snapshot{Now: t0, Nodes: nodes[:1], Queue: []Request{req("y", 4, 4, 2), req("x", 16, 16, 1), req("z", 2, 2, 3)}})
	if len(v.Gangs) != 3 || v.Gangs[0].Request.Gang.Pipeline != "ns/x" || v.Gangs[2].Position != 3 || v.Gangs[0].Queue != "" {
		t.Fatalf("cluster order: %+v", v.Gangs)
	}
	if !v.Gangs[1].AdmitNow || v.Gangs[1].Wait != nil {
		t.Errorf("ns/y fits now and should be marked so: %+v", v.Gangs[1])
	}
	if v.PreemptedNext != nil {
		t.Errorf("no queue preempts, yet a preview: %+v", v.PreemptedNext)
	}
}
