package engine_test

import (
	"testing"
	"time"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// ViewQueue lists the waiting gangs by queue and position within it (the
// cycle's Wait beside each) and, within a lender's grace period, which
// running borrower a preemption would take first, without preempting
// anything now.
func TestViewQueue(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)}
	queues := []engine.Queue{wrappers.EngineQueue("team-a", "research", 8), lender(engine.ReclaimAny, dur(time.Hour))}
	ledger := []engine.Grant{
		wrappers.Grant(wrappers.Gang("a-old", 8, 8, 0, wrappers.InQueue("team-a")), wrappers.Repeat("a", 8)),
		wrappers.Grant(wrappers.Gang("a-mid", 4, 4, 1, wrappers.InQueue("team-a")), wrappers.Repeat("b", 4)),
		wrappers.Grant(wrappers.Gang("a-young", 4, 4, 2, wrappers.InQueue("team-a")), wrappers.Repeat("b", 4)),
	}
	queue := []engine.Request{
		wrappers.Gang("b-young", 4, 4, 12, wrappers.InQueue("team-b")), wrappers.Gang("a-next", 4, 4, 3, wrappers.InQueue("team-a")), wrappers.Gang("b", 4, 4, 10, wrappers.InQueue("team-b")),
	}
	v := engine.ViewQueue(engine.DefaultConfig(), engine.Snapshot{Now: Epoch.Add(15 * time.Minute), Nodes: nodes, Ledger: ledger, Queue: queue, Queues: queues})

	want := []struct {
		pipeline, queue string
		position        int
		reason          engine.WaitReason
	}{
		{"ns/a-next", "team-a", 1, engine.WaitQueue},
		{"ns/b", "team-b", 1, engine.WaitQueue},
		{"ns/b-young", "team-b", 2, engine.WaitQueue},
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
	v = engine.ViewQueue(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes[:1], Queue: []engine.Request{wrappers.Gang("y", 4, 4, 2), wrappers.Gang("x", 16, 16, 1), wrappers.Gang("z", 2, 2, 3)}})
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
