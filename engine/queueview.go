package engine

import (
	"cmp"
	"slices"
	"time"
)

// QueuedGang is one waiting gang as `phasegang queue` lists it: its
// place in its queue's order and what it waits for.
type QueuedGang struct {
	Request Request
	// Queue is the tenant queue whose order Position counts ("" when no
	// tenant queue exists: the whole cluster's order).
	Queue string
	// Position is 1 for the queue's head.
	Position int
	// AdmitNow says the cycle would grant it now; Wait is nil then.
	AdmitNow bool
	Wait     *Wait
}

// QueueView is the queue as the next cycle sees it.
type QueueView struct {
	// Gangs are the waiting gangs, by queue name, then position.
	Gangs []QueuedGang
	// Preemptions are what the cycle preempts now.
	Preemptions []Preemption
	// PreemptedNext are the running gangs that would be preempted if
	// every waiting lender's reclaim grace period ended now: what goes
	// first when one does.
	PreemptedNext []Preemption
	// Queues is each tenant queue's use after the cycle.
	Queues []QueueUsage
}

// ViewQueue runs the cycle on snap without keeping anything (Schedule is
// pure) and reports every waiting gang in its queue's order with the
// cycle's reason, then runs it once more with every reclaim grace period
// over to show which running gangs a preemption would take next. The
// order within a queue is the one the cycle walks: priority, then the
// pipeline's age; across queues there is no fixed order (fair share
// picks the next queue as gangs run), so positions count within a queue.
func ViewQueue(cfg Config, snap Snapshot) QueueView {
	plan := Schedule(cfg, snap)
	v := QueueView{Preemptions: plan.Preemptions, Queues: plan.Queues}
	v.Gangs = orderWaiting(snap, plan)
	if graceful := graceOver(snap.Queues); graceful != nil {
		ahead := snap
		ahead.Queues = graceful
		v.PreemptedNext = Schedule(cfg, ahead).Preemptions
	}
	return v
}

// orderWaiting lists snap's queued gangs (those not granted already) by
// queue, then queue order, with the plan's Wait for each.
func orderWaiting(snap Snapshot, plan Plan) []QueuedGang {
	granted := map[GangKey]bool{}
	for _, g := range snap.Ledger {
		granted[g.Gang] = true
	}
	admit := map[GangKey]bool{}
	for _, r := range plan.Reserves {
		admit[r.Gang] = true
	}
	waits := map[GangKey]*Wait{}
	for i := range plan.Waiting {
		waits[plan.Waiting[i].Gang] = &plan.Waiting[i]
	}
	var out []QueuedGang
	for _, r := range snap.Queue {
		if granted[r.Gang] {
			continue
		}
		q := ""
		if len(snap.Queues) > 0 {
			q = queueName(&r)
		}
		out = append(out, QueuedGang{Request: r, Queue: q, AdmitNow: admit[r.Gang], Wait: waits[r.Gang]})
	}
	slices.SortStableFunc(out, func(a, b QueuedGang) int {
		return cmp.Or(cmp.Compare(a.Queue, b.Queue), compareQueue(&a.Request, &b.Request))
	})
	for i := range out {
		if i > 0 && out[i-1].Queue == out[i].Queue {
			out[i].Position = out[i-1].Position + 1
		} else {
			out[i].Position = 1
		}
	}
	return out
}

// graceOver returns queues with every set reclaim grace period at zero,
// or nil if no queue would ever preempt.
func graceOver(queues []Queue) []Queue {
	var out []Queue
	any := false
	zero := time.Duration(0)
	for _, q := range queues {
		if q.ReclaimGrace != nil && q.Reclaim != "" && q.Reclaim != ReclaimNever {
			q.ReclaimGrace = &zero
			any = true
		}
		out = append(out, q)
	}
	if !any {
		return nil
	}
	return out
}
