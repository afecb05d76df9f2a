package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Preemption to reclaim lent quota
//
// Reclaim at phase boundaries (queue.go, findReclaims) holds borrowers
// back while a lender's gang waits for its own nominal quota, but a
// borrowed phase that runs for days keeps the quota for days. A queue
// with a reclaimGracePeriod (Queue.ReclaimGrace) bounds that: once its
// waiting gang has been queued longer than the grace period and is still
// short of its own nominal quota, the cycle takes the quota back from the
// cohort's borrowers, after the admit walk:
//
//  1. the elastic surplus (workers above Min) of the borrowing gangs is
//     shrunk first, lowest priority and youngest pipeline first, one
//     worker at a time, until the lender's quota covers the waiting gang;
//  2. if surplus is not enough, whole borrowing gangs are preempted:
//     lowest priority first; within a priority the youngest gang that
//     alone covers what is still short, else the youngest; then any
//     chosen gang (or shrunk worker) not needed after all is given back.
//
// A borrower is a grant of another queue of the lender's cohort that
// uses more than its nominal quota of a resource the waiting gang is
// short of; a lender never preempts its own queue's gangs to reclaim,
// and LowerPriority preempts only gangs of lower priority than the
// waiting one. Nothing is preempted unless removing the chosen gangs
// covers the waiting gang's quota: a preemption that would not let it in
// would only destroy work. A preempted gang is released whole
// (ReleasePreempted, listed in Plan.Releases and Plan.Preemptions); the
// caller queues the same attempt again, like a gang that lost its node.
//
// The grace period is measured from the waiting gang's Request.Queued:
// the engine keeps no memory between cycles, and a gang that waits for
// its nominal quota has waited for it (or for nodes) since then.

// Preemption is a whole granted gang stopped to give quota back to a
// lender of its cohort. Its grant is in Plan.Releases too (reason
// ReleasePreempted).
type Preemption struct {
	Gang GangKey
	// For is the lender's waiting gang the quota goes back to.
	For GangKey
	// Queue is the victim's queue, Lender the waiting gang's.
	Queue, Lender string
	// Message says who preempted it and why, with the numbers.
	Message string
}

// ReleasePreempted: the grant was preempted to give borrowed quota back
// to its lender (Plan.Preemptions); the caller queues the same attempt
// again, its retries unspent.
const ReleasePreempted ReleaseReason = "Preempted"

// preempt reclaims lent quota for the lenders' gangs past their queue's
// grace period (see above). rc is the cycle's reclaims; reserved the
// gangs granted in this cycle (never preempted in the same plan).
func (s *State) preempt(plan *Plan, now time.Time, rc reclaims) {
	if len(rc) == 0 {
		return
	}
	var rs []*reclaimer
	seen := map[*gangReq]bool{}
	for _, byRes := range rc {
		for _, r := range byRes {
			if !seen[r.gr] {
				seen[r.gr] = true
				rs = append(rs, r)
			}
		}
	}
	slices.SortFunc(rs, func(a, b *reclaimer) int { return compareQueue(&a.gr.req, &b.gr.req) })
	var reserved map[GangKey]bool
	for _, r := range rs {
		grace := r.qs.q.ReclaimGrace
		if r.gr.removed || grace == nil || now.Sub(r.gr.req.Queued) < *grace {
			continue // admitted this cycle, or within its grace period
		}
		if reserved == nil {
			reserved = map[GangKey]bool{}
			for _, rv := range plan.Reserves {
				reserved[rv.Gang] = true
			}
		}
		s.preemptFor(plan, now, r, reserved)
	}
}

// victim is a borrowing grant and what the what-if takes of it.
type victim struct {
	g      *grantState
	shrunk int  // surplus workers shrunk
	whole  bool // preempted whole
}

// preemptFor reclaims for one waiting gang.
func (s *State) preemptFor(plan *Plan, now time.Time, r *reclaimer, reserved map[GangKey]bool) {
	gr, qs := r.gr, r.qs
	c := s.queueCharge(gr)
	covered := func() bool {
		for j, a := range c.amt {
			if a > 0 && s.queueLeft(qs, j) < int64(gr.req.Min)*a {
				return false
			}
		}
		return true
	}
	if covered() {
		return
	}
	// The resources the gang is short of, by name.
	short := map[ResourceName]bool{}
	for j, a := range c.amt {
		if a > 0 && s.queueLeft(qs, j) < int64(gr.req.Min)*a {
			short[qs.names[j]] = true
		}
	}
	var cands []*victim
	for _, key := range s.grantKeys() {
		g := s.grants[key]
		if reserved[key] {
			continue
		}
		if _, releasing := s.pendingRelease[key]; releasing {
			continue
		}
		vc := s.queueCharge(&g.gangReq)
		if vc.q < 0 || vc.q == s.queueIdx[qs.q.Name] {
			continue // not limited by a queue, or the lender's own
		}
		vq := s.queues[vc.q]
		if vq.q.Cohort != qs.q.Cohort {
			continue
		}
		if qs.q.Reclaim == ReclaimLowerPriority && g.req.Priority >= gr.req.Priority {
			continue
		}
		borrows := false
		for j, n := range vq.names {
			if short[n] && vc.amt[j] > 0 && vq.used[j] > vq.nominal[j] {
				borrows = true
			}
		}
		if borrows {
			cands = append(cands, &victim{g: g})
		}
	}
	// Lowest priority first, youngest pipeline first among equals.
	slices.SortFunc(cands, func(a, b *victim) int { return compareQueue(&b.g.req, &a.g.req) })
	// takeOne / putOne change only the queues' use: a what-if.
	shrinkOne := func(v *victim) { v.shrunk++; s.chargeQueue(&v.g.gangReq, -1) }
	unshrinkOne := func(v *victim) { v.shrunk--; s.chargeQueue(&v.g.gangReq, 1) }
	rest := func(v *victim) int64 { return int64(len(v.g.workers) - v.shrunk) }
	takeWhole := func(v *victim) { v.whole = true; s.chargeQueue(&v.g.gangReq, -rest(v)) }
	putWhole := func(v *victim) { v.whole = false; s.chargeQueue(&v.g.gangReq, rest(v)) }
	undo := func() {
		for _, v := range cands {
			if v.whole {
				putWhole(v)
			}
			for v.shrunk > 0 {
				unshrinkOne(v)
			}
		}
	}

	// 1. Elastic surplus, one worker at a time.
	var shrinks []*victim // in the order taken, one entry per worker
	for _, v := range cands {
		for !covered() && int32(len(v.g.workers)-v.shrunk) > v.g.req.Min {
			shrinkOne(v)
			shrinks = append(shrinks, v)
		}
	}
	// 2. Whole gangs.
	var wholes []*victim
	for !covered() {
		var pick *victim
		for _, v := range cands {
			if v.whole {
				continue
			}
			if pick != nil && v.g.req.Priority != pick.g.req.Priority {
				break // only the lowest priority left
			}
			if pick == nil {
				pick = v // the youngest of the lowest priority
			}
			takeWhole(v)
			alone := covered()
			putWhole(v)
			if alone {
				pick = v
				break
			}
		}
		if pick == nil {
			undo() // even every borrower together would not let it in
			return
		}
		takeWhole(pick)
		wholes = append(wholes, pick)
	}
	// Give back what turned out not to be needed: later choices first.
	for i := len(wholes) - 1; i >= 0; i-- {
		v := wholes[i]
		putWhole(v)
		if !covered() {
			takeWhole(v)
		}
	}
	for i := len(shrinks) - 1; i >= 0; i-- {
		v := shrinks[i]
		if v.whole || v.shrunk == 0 {
			continue
		}
		unshrinkOne(v)
		if !covered() {
			shrinkOne(v)
		}
	}
	// Apply: undo the what-if, then release and shrink for real.
	type taken struct {
		v      *victim
		shrunk int
		whole  bool
	}
	var apply []taken
	for _, v := range cands {
		if v.whole || v.shrunk > 0 {
			apply = append(apply, taken{v, v.shrunk, v.whole})
		}
	}
	undo()
	for _, t := range apply {
		g := t.v.g
		key := g.req.Gang
		if t.whole {
			vq := s.queues[s.queueCharge(&g.gangReq).q]
			msg := s.preemptMessage(g, vq, gr, qs, short, now)
			s.unreserve(g, len(g.workers))
			s.dropGrant(key)
			plan.Releases = append(plan.Releases, Release{Gang: key, Reason: ReleasePreempted, Message: msg})
			plan.Preemptions = append(plan.Preemptions, Preemption{Gang: key, For: gr.req.Gang, Queue: vq.q.Name, Lender: qs.q.Name, Message: msg})
			continue
		}
		first := len(g.workers) - t.shrunk
		removed := s.give(g, t.shrunk)
		sh := Shrink{Gang: key, For: gr.req.Gang}
		for j := len(removed) - 1; j >= 0; j-- {
			if removed[j] >= 0 {
				sh.Workers = append(sh.Workers, WorkerPlacement{Index: int32(first + j), Node: s.nodes[removed[j]].node.Name})
			}
		}
		plan.Shrinks = append(plan.Shrinks, sh)
	}
	s.sumFree()
}

// preemptMessage says who preempts g and why, with the numbers: the
// lender's queue and waiting gang, how long it waited against its grace
// period, and what g's queue borrows of the first resource it is short of.
func (s *State) preemptMessage(g *grantState, vq *queueState, gr *gangReq, qs *queueState, short map[ResourceName]bool, now time.Time) string {
	names := make([]ResourceName, 0, len(short))
	for n := range short {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b ResourceName) int { return cmp.Compare(a, b) })
	held := ""
	vc := s.queueCharge(&g.gangReq)
	for _, n := range names {
		if j, ok := slices.BinarySearch(vq.names, n); ok && vc.amt[j] > 0 {
			held = fmt.Sprintf("; its %d workers held %s %s, queue %s used %s of its nominal %s",
				len(g.workers), FormatAmount(n, int64(len(g.workers))*vc.amt[j]), n,
				vq.q.Name, FormatAmount(n, vq.used[j]), FormatAmount(n, vq.nominal[j]))
			break
		}
	}
	res := make([]string, len(names))
	for i, n := range names {
		res[i] = string(n)
	}
	return fmt.Sprintf("preempted: queue %s reclaims the %s its cohort %s borrowed for %s, which waited %s for its nominal quota (reclaimGracePeriod %s)%s",
		qs.q.Name, strings.Join(res, ", "), qs.q.Cohort, gr.req.Gang.Pipeline+"/"+gr.req.Gang.Phase,
		now.Sub(gr.req.Queued).Round(time.Second), *qs.q.ReclaimGrace, held)
}
