package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Preemption to reclaim lent quota, and within a queue
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
// covers the waiting gang's quota and leaves room for its Min workers on
// the nodes (by its topology, through the same placement): a preemption
// that would not let it in would only destroy work. A preempted gang is
// released whole (ReleasePreempted, listed in Plan.Releases and
// Plan.Preemptions); the caller queues the same attempt again, like a
// gang that lost its node.
//
// Within a queue (Queue.WithinQueue), the same grace period bounds how
// long a gang waits for quota the queue's own gangs hold: past it, the
// queue's gangs of lower priority (Any: also of equal priority and a
// younger pipeline) give it back the same way, surplus first, then the
// fewest whole gangs. A gang that fits within its queue's nominal quota
// only once those are gone, and is also kept out by the cohort's
// borrowing, is reclaim's: its candidates are the borrowers and the
// queue's own gangs the policy allows, together (borrowerOrLower, as
// Kueue does); within-queue preemption alone frees only the queue's own
// use.
//
// Both count only quota the waiting gang can keep (keptLeft): its
// queue's nominal less what the cohort's other queues use beyond theirs,
// never a third queue's idle quota that the cohort lends now but that
// queue may take back the next moment. In the cycle that preempts, no
// gang of the cohort grows (grow's frozen), so the freed quota is still
// there when the next cycle's walk reaches the waiting gang.
//
// Topology (preempt_domain.go), for both: gangs chosen by quota alone
// often run in several domains and free none of them enough for a gang
// whose topology wants one. When they do not let such a gang in
// (required; or preferred, and it does not fit even spread), the same
// choice is made once per domain of its level, among the candidates
// with a worker in that domain, until the quota is covered and its Min
// workers fit there; a candidate that also runs elsewhere frees only
// its workers in the domain, but is preempted whole. The cheapest
// domain's victims are taken: the lowest highest priority of the gangs
// stopped, then the fewest GPUs (what the victims give up of the
// resources the waiting gang is short of), then the fewest gangs, then
// the first domain; if no domain's victims let it in, nothing is
// preempted. Victims chosen by quota alone that let the gang in are
// kept, so the search only adds preemptions where none was made
// before, and none for a gang without topology.
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
// grace period, then (withinQueue) quota a queue's own lower-priority
// gangs hold for its gangs past it (see above). rc is the cycle's
// reclaims; the gangs granted in this cycle are never preempted in the
// same plan.
func (s *State) preempt(plan *Plan, now time.Time, rc reclaims) map[int]bool {
	if len(s.queues) == 0 {
		return nil
	}
	// frozen are the queues quota was freed for and the rest of their
	// cohort: none of their gangs grows in this cycle, or the freed quota
	// could go to growth (a borrower the reclaim does not hold back, the
	// queue's own older gangs) instead of to the gang it was freed for.
	var frozen map[int]bool
	freedFor := func(qs *queueState) {
		if frozen == nil {
			frozen = map[int]bool{}
		}
		frozen[s.queueIdx[qs.q.Name]] = true
		for _, m := range qs.cohort {
			frozen[m] = true
		}
	}
	var reserved map[GangKey]bool
	reservedNow := func() map[GangKey]bool {
		if reserved == nil {
			reserved = map[GangKey]bool{}
			for _, rv := range plan.Reserves {
				reserved[rv.Gang] = true
			}
		}
		return reserved
	}
	var rs []*reclaimer
	seen := map[*gangReq]bool{}
	for _, byRes := range rc {
		for _, list := range byRes {
			for _, r := range list {
				if !seen[r.gr] {
					seen[r.gr] = true
					rs = append(rs, r)
				}
			}
		}
	}
	slices.SortFunc(rs, func(a, b *reclaimer) int { return compareQueue(&a.gr.req, &b.gr.req) })
	for _, r := range rs {
		grace := r.qs.q.ReclaimGrace
		if r.gr.removed || grace == nil || now.Sub(r.gr.req.Queued) < *grace {
			continue // admitted this cycle, or within its grace period
		}
		if short := s.preemptFor(plan, now, r.gr, r.qs, reservedNow(), s.borrowerOrLower(r.gr, r.qs)); len(short) > 0 {
			freedFor(r.qs)
			r.gr.nominated = true
		}
	}
	for _, r := range s.findWithinQueue(now) {
		if short := s.preemptFor(plan, now, r.gr, r.qs, reservedNow(), s.lowerInQueue(r.gr, r.qs)); len(short) > 0 {
			freedFor(r.qs)
			r.gr.nominated = true
		}
	}
	return frozen
}

// findWithinQueue returns, for each queue whose withinQueue policy
// preempts, its first gang in queue order that has waited past the
// queue's grace period and that the queue's quota does not admit now.
func (s *State) findWithinQueue(now time.Time) []reclaimer {
	var out []reclaimer
	done := map[int]bool{}
	for _, gr := range s.order {
		if gr.removed || now.Before(gr.req.NotBefore) {
			continue
		}
		c := s.queueCharge(gr)
		if c.q < 0 || done[c.q] {
			continue
		}
		qs := s.queues[c.q]
		if qs.q.WithinQueue == "" || qs.q.WithinQueue == ReclaimNever || qs.q.ReclaimGrace == nil {
			continue
		}
		if now.Sub(gr.req.Queued) < *qs.q.ReclaimGrace {
			continue
		}
		if room, _ := s.queueRoom(gr, int64(gr.req.Min)); room >= int64(gr.req.Min) {
			continue // its queue admits it: it waits for nodes, not quota
		}
		ownUse := false
		for j, a := range c.amt {
			if a > 0 && qs.used[j]+int64(gr.req.Min)*a > qs.nominal[j] {
				ownUse = true
			}
		}
		if !ownUse {
			continue // the cohort's borrowing keeps it out: reclaimWithinCohort's part
		}
		done[c.q] = true
		out = append(out, reclaimer{gr: gr, qs: qs})
	}
	return out
}

// victimFilter says whether a grant may be preempted for the waiting
// gang, given the resources the gang is short of; message says why it
// was.
type victimFilter struct {
	ok      func(g *grantState, vc *queueCharge, short map[ResourceName]bool) bool
	message func(g *grantState, short map[ResourceName]bool, now time.Time) string
}

// saying is f with where added to the end of its messages ("": as they
// are).
func (f victimFilter) saying(where string) victimFilter {
	if where == "" {
		return f
	}
	message := f.message
	f.message = func(g *grantState, short map[ResourceName]bool, now time.Time) string {
		return message(g, short, now) + where
	}
	return f
}

// keptLeft is what of resource j queue qs may use now and keep: what it
// may use (queueLeft), but at most its nominal quota less its use and
// less what the cohort's other queues use beyond their own nominal.
// Preemption makes room only within it: room the cohort lends from a
// third queue's idle quota is not the lender's to keep (that queue may
// use it the next moment), so preempting for it could free quota for
// nothing.
func (s *State) keptLeft(qs *queueState, j int) int64 {
	kept := qs.nominal[j] - qs.used[j]
	for _, m := range qs.cohort {
		ms := s.queues[m]
		if ms == qs {
			continue
		}
		if k, ok := slices.BinarySearch(ms.names, qs.names[j]); ok {
			kept -= max(0, ms.used[k]-ms.nominal[k])
		}
	}
	return min(s.queueLeft(qs, j), max(0, kept))
}

// cohortBorrower: a grant of another queue of qs's cohort that uses more
// than its nominal quota of a resource gr is short of, and, for
// LowerPriority, of lower priority than gr.
func (s *State) cohortBorrower(gr *gangReq, qs *queueState) victimFilter {
	return victimFilter{
		ok: func(g *grantState, vc *queueCharge, short map[ResourceName]bool) bool {
			if vc.q == s.queueIdx[qs.q.Name] {
				return false // the lender's own
			}
			vq := s.queues[vc.q]
			if vq.q.Cohort != qs.q.Cohort {
				return false
			}
			if qs.q.Reclaim == ReclaimLowerPriority && g.req.Priority >= gr.req.Priority {
				return false
			}
			for j, n := range vq.names {
				if short[n] && vc.amt[j] > 0 && vq.used[j] > vq.nominal[j] {
					return true
				}
			}
			return false
		},
		message: func(g *grantState, short map[ResourceName]bool, now time.Time) string {
			return s.preemptMessage(g, s.queues[s.queueCharge(&g.gangReq).q], gr, qs, short, now)
		},
	}
}

// lowerInQueue: a grant of qs itself, holding a resource gr is short of,
// that qs's withinQueue policy lets gr preempt (withinQueueAllows).
func (s *State) lowerInQueue(gr *gangReq, qs *queueState) victimFilter {
	return victimFilter{
		ok: func(g *grantState, vc *queueCharge, short map[ResourceName]bool) bool {
			if vc.q != s.queueIdx[qs.q.Name] {
				return false
			}
			if !withinQueueAllows(qs.q.WithinQueue, &gr.req, &g.req) {
				return false
			}
			for j, n := range qs.names {
				if short[n] && vc.amt[j] > 0 {
					return true
				}
			}
			return false
		},
		message: func(g *grantState, short map[ResourceName]bool, now time.Time) string {
			return s.withinQueueMessage(g, gr, qs, short, now)
		},
	}
}

// victim is a grant the what-if may take and what it takes of it.
type victim struct {
	g      *grantState
	shrunk int  // surplus workers shrunk
	whole  bool // preempted whole
}

// preemptFor frees quota of qs for the waiting gang gr from the grants
// filter allows: surplus first, then whole gangs, and only if that lets
// gr in. It returns the resources gr was short of if it preempted or
// shrank anything.
func (s *State) preemptFor(plan *Plan, now time.Time, gr *gangReq, qs *queueState, reserved map[GangKey]bool, filter victimFilter) map[ResourceName]bool {
	w := &whatIf{s: s, gr: gr, qs: qs, charge: s.queueCharge(gr)}
	if w.covered() {
		return nil
	}
	short := w.shortResources()
	w.cands = s.preemptionCandidates(reserved, filter, short)
	taken, quotaOK := w.byQuota()
	if taken == nil && quotaOK && byDomain(gr) {
		var where string
		taken, where = w.inOneDomain(short)
		filter = filter.saying(where)
	}
	if len(taken) == 0 {
		return nil
	}
	for _, t := range taken {
		if t.whole {
			s.preemptWhole(plan, now, t.v.g, gr, qs, filter, short)
		} else {
			s.shrinkFor(plan, t.v.g, gr, t.shrunk)
		}
	}
	s.sumFree()
	return short
}

// byQuota chooses by quota alone: surplus first, then the fewest whole
// gangs, wherever they run. It returns what it would take, if gr then
// fits on the nodes too (else nil), and whether the quota could be
// covered at all. The what-if is left undone.
func (w *whatIf) byQuota() (taken []takenVictim, quotaOK bool) {
	if !w.trial() {
		return nil, false // even every candidate together would not let it in
	}
	// Worth it on the nodes too: with what is taken gone, the gang must
	// fit. Else it would stay queued, a gang behind it would backfill
	// what was freed (the victim itself, queued again), and the same
	// preemption repeat every cycle.
	if w.s.fitsWithout(w.gr, w.cands, nil) {
		taken = w.taken()
	}
	w.undo()
	return taken, true
}

// trial takes from the candidates what lets gr in (letsIn): surplus
// first, then whole gangs, then gives back what turns out not to be
// needed. False, with everything given back, if even all of them would
// not let it in.
func (w *whatIf) trial() bool {
	shrinks := w.shrinkSurplus()
	wholes, ok := w.takeWholeGangs()
	if !ok {
		w.undo()
		return false
	}
	w.giveBackUnneeded(wholes, shrinks)
	return true
}

// preemptionCandidates are the grants filter allows as victims for a gang
// short of short, lowest priority first and youngest pipeline first among
// equals. Reserved gangs, gangs already being released and gangs no queue
// limits are never candidates.
func (s *State) preemptionCandidates(reserved map[GangKey]bool, filter victimFilter, short map[ResourceName]bool) []*victim {
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
		if vc.q < 0 {
			continue // not limited by a queue
		}
		if filter.ok(g, vc, short) {
			cands = append(cands, &victim{g: g})
		}
	}
	slices.SortFunc(cands, func(a, b *victim) int { return compareQueue(&b.g.req, &a.g.req) })
	return cands
}

// whatIf is preemptFor's trial: it takes surplus workers and whole gangs
// from the candidates by changing only the queues' use, so that each
// choice can be tested (covered) and given back (undo) before anything is
// released for real.
type whatIf struct {
	s      *State
	gr     *gangReq     // the waiting gang
	qs     *queueState  // the queue whose quota it needs
	charge *queueCharge // what gr charges qs
	cands  []*victim
	// outside, when set, confines the what-if to one topology domain:
	// it fences every node but the domain's, and gr is let in only once
	// its Min workers also fit there (preempt_domain.go).
	outside []bool
}

// shortOf reports whether, with its current use, qs keeps too little of
// resource j for gr's Min workers at a each.
func (w *whatIf) shortOf(j int, a int64) bool {
	return a > 0 && w.s.keptLeft(w.qs, j) < int64(w.gr.req.Min)*a
}

// covered reports whether gr is short of nothing.
func (w *whatIf) covered() bool {
	for j, a := range w.charge.amt {
		if w.shortOf(j, a) {
			return false
		}
	}
	return true
}

// letsIn reports whether what is taken lets gr in: its quota is
// covered and, confined to one domain, its Min workers fit there.
func (w *whatIf) letsIn() bool {
	return w.covered() && (w.outside == nil || w.s.fitsWithout(w.gr, w.cands, w.outside))
}

// shortResources are the resources gr is short of, by name.
func (w *whatIf) shortResources() map[ResourceName]bool {
	short := map[ResourceName]bool{}
	for j, a := range w.charge.amt {
		if w.shortOf(j, a) {
			short[w.qs.names[j]] = true
		}
	}
	return short
}

func (w *whatIf) shrinkOne(v *victim)   { v.shrunk++; w.s.chargeQueue(&v.g.gangReq, -1) }
func (w *whatIf) unshrinkOne(v *victim) { v.shrunk--; w.s.chargeQueue(&v.g.gangReq, 1) }
func (w *whatIf) takeWhole(v *victim)   { v.whole = true; w.s.chargeQueue(&v.g.gangReq, -v.rest()) }
func (w *whatIf) putWhole(v *victim)    { v.whole = false; w.s.chargeQueue(&v.g.gangReq, v.rest()) }

// rest is the number of v's workers not shrunk.
func (v *victim) rest() int64 { return int64(len(v.g.workers) - v.shrunk) }

// undo gives back everything taken, leaving the queues' use as it was.
func (w *whatIf) undo() {
	for _, v := range w.cands {
		if v.whole {
			w.putWhole(v)
		}
		for v.shrunk > 0 {
			w.unshrinkOne(v)
		}
	}
}

// shrinkSurplus takes elastic surplus, one worker at a time, until gr is
// let in. It returns the victims in the order taken, one entry per worker.
func (w *whatIf) shrinkSurplus() []*victim {
	var shrinks []*victim
	for _, v := range w.cands {
		for !w.letsIn() && int32(len(v.g.workers)-v.shrunk) > v.g.req.Min {
			w.shrinkOne(v)
			shrinks = append(shrinks, v)
		}
	}
	return shrinks
}

// takeWholeGangs takes whole gangs until gr is let in, in the order
// taken; false if even all of them would not let it in.
func (w *whatIf) takeWholeGangs() ([]*victim, bool) {
	var wholes []*victim
	for !w.letsIn() {
		pick := w.pickWhole()
		if pick == nil {
			return wholes, false
		}
		w.takeWhole(pick)
		wholes = append(wholes, pick)
	}
	return wholes, true
}

// pickWhole is the next gang to take whole: among the lowest priority
// left, the first (youngest) that lets gr in alone, else the youngest.
func (w *whatIf) pickWhole() *victim {
	var pick *victim
	for _, v := range w.cands {
		if v.whole {
			continue
		}
		if pick != nil && v.g.req.Priority != pick.g.req.Priority {
			break // only the lowest priority left
		}
		if pick == nil {
			pick = v // the youngest of the lowest priority
		}
		w.takeWhole(v)
		alone := w.letsIn()
		w.putWhole(v)
		if alone {
			return v
		}
	}
	return pick
}

// giveBackUnneeded gives back what turned out not to be needed: later
// choices first.
func (w *whatIf) giveBackUnneeded(wholes, shrinks []*victim) {
	for i := len(wholes) - 1; i >= 0; i-- {
		v := wholes[i]
		w.putWhole(v)
		if !w.letsIn() {
			w.takeWhole(v)
		}
	}
	for i := len(shrinks) - 1; i >= 0; i-- {
		v := shrinks[i]
		if v.whole || v.shrunk == 0 {
			continue
		}
		w.unshrinkOne(v)
		if !w.letsIn() {
			w.shrinkOne(v)
		}
	}
}

// takenVictim is what the what-if took of one victim, kept to be applied
// for real after the what-if is undone.
type takenVictim struct {
	v      *victim
	shrunk int
	whole  bool
}

// taken lists what the what-if took, in candidate order.
func (w *whatIf) taken() []takenVictim {
	var taken []takenVictim
	for _, v := range w.cands {
		if v.whole || v.shrunk > 0 {
			taken = append(taken, takenVictim{v, v.shrunk, v.whole})
		}
	}
	return taken
}

// preemptWhole releases the grant g for gr for real and records the
// release and the preemption in plan.
func (s *State) preemptWhole(plan *Plan, now time.Time, g *grantState, gr *gangReq, qs *queueState, filter victimFilter, short map[ResourceName]bool) {
	key := g.req.Gang
	vq := s.queues[s.queueCharge(&g.gangReq).q]
	msg := filter.message(g, short, now)
	s.unreserve(g, len(g.workers))
	s.dropGrant(key)
	plan.Releases = append(plan.Releases, Release{Gang: key, Reason: ReleasePreempted, Message: msg})
	plan.Preemptions = append(plan.Preemptions, Preemption{Gang: key, For: gr.req.Gang, Queue: vq.q.Name, Lender: qs.q.Name, Message: msg})
}

// shrinkFor takes g's n highest workers for gr for real and records the
// shrink, highest index first, in plan.
func (s *State) shrinkFor(plan *Plan, g *grantState, gr *gangReq, n int) {
	first := len(g.workers) - n
	removed := s.give(g, n)
	sh := Shrink{Gang: g.req.Gang, For: gr.req.Gang}
	for j := len(removed) - 1; j >= 0; j-- {
		if removed[j] >= 0 {
			sh.Workers = append(sh.Workers, WorkerPlacement{Index: int32(first + j), Node: s.nodes[removed[j]].node.Name})
		}
	}
	plan.Shrinks = append(plan.Shrinks, sh)
}

// fitsWithout reports whether gr's Min workers fit on the nodes not
// fenced once the victims' workers are gone (whole victims all of them,
// shrunk ones their highest indices): a what-if, the nodes are left as
// they were.
func (s *State) fitsWithout(gr *gangReq, victims []*victim, fenced []bool) bool {
	var freed []surplusWorker
	for _, v := range victims {
		from := len(v.g.workers) - v.shrunk
		if v.whole {
			from = 0
		}
		for i := from; i < len(v.g.workers); i++ {
			if v.g.workers[i] >= 0 {
				freed = append(freed, surplusWorker{g: v.g, index: i})
			}
		}
	}
	s.adjust(freed, +1)
	p := s.place(gr, s.class(gr), gr.req.Min, gr.req.Min, fenced)
	s.adjust(freed, -1)
	return p.nodes != nil
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

// withinQueueMessage says which gang of g's own queue preempts it and
// why: its priority against g's, how long it waited for the queue's
// quota against the grace period, and what g held.
func (s *State) withinQueueMessage(g *grantState, gr *gangReq, qs *queueState, short map[ResourceName]bool, now time.Time) string {
	held := ""
	vc := s.queueCharge(&g.gangReq)
	for j, n := range qs.names {
		if short[n] && vc.amt[j] > 0 {
			held = fmt.Sprintf("; its %d workers held %s %s, queue %s used %s of its nominal %s",
				len(g.workers), FormatAmount(n, int64(len(g.workers))*vc.amt[j]), n,
				qs.q.Name, FormatAmount(n, qs.used[j]), FormatAmount(n, qs.nominal[j]))
			break
		}
	}
	why := fmt.Sprintf("priority %d over its %d", gr.req.Priority, g.req.Priority)
	if gr.req.Priority == g.req.Priority {
		why = fmt.Sprintf("equal priority %d and an older pipeline", gr.req.Priority)
	}
	return fmt.Sprintf("preempted within queue %s (withinQueue %s) for %s, %s, which waited %s for the queue's quota (reclaimGracePeriod %s)%s",
		qs.q.Name, qs.q.WithinQueue, gr.req.Gang.Pipeline+"/"+gr.req.Gang.Phase, why,
		now.Sub(gr.req.Queued).Round(time.Second), *qs.q.ReclaimGrace, held)
}

// withinQueueAllows reports whether a withinQueue policy lets gang w
// preempt gang g of its own queue: g is of lower priority (LowerPriority),
// or also of equal priority and a younger pipeline (Any). Never an older
// gang of equal priority: queue order puts it ahead of w, and preempting
// it would only swap who waits.
func withinQueueAllows(policy ReclaimPolicy, w, g *Request) bool {
	switch policy {
	case ReclaimLowerPriority:
		return g.Priority < w.Priority
	case ReclaimAny:
		return g.Priority < w.Priority || (g.Priority == w.Priority && compareQueue(w, g) < 0)
	}
	return false
}

// borrowerOrLower is reclaim's filter: the cohort's borrowers and, if
// qs's withinQueue policy preempts, its own gangs that policy allows, as
// candidates of one preemption. Kueue's preemption takes both kinds
// together; taken apart, neither fires when the cohort is full and the
// queue's own lower-priority gangs hold part of its nominal quota
// (TestPreemptWithinQueueAndCohortTogether).
func (s *State) borrowerOrLower(gr *gangReq, qs *queueState) victimFilter {
	b := s.cohortBorrower(gr, qs)
	if qs.q.WithinQueue == "" || qs.q.WithinQueue == ReclaimNever {
		return b
	}
	l := s.lowerInQueue(gr, qs)
	return victimFilter{
		ok: func(g *grantState, vc *queueCharge, short map[ResourceName]bool) bool {
			return b.ok(g, vc, short) || l.ok(g, vc, short)
		},
		message: func(g *grantState, short map[ResourceName]bool, now time.Time) string {
			if s.queueCharge(&g.gangReq).q == s.queueIdx[qs.q.Name] {
				return l.message(g, short, now)
			}
			return b.message(g, short, now)
		},
	}
}
