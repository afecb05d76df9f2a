package engine

import (
	"cmp"
	"iter"
	"math"
	"slices"
	"time"
)

// cycle is one scheduling cycle. Its passes, in order:
//
//  0. doom: a pipeline with a queued or upcoming phase that can never fit,
//     even in the empty cluster, is reported and none of its gangs is
//     admitted (it could not finish; its capacity would be wasted);
//  1. release: drop grants whose phase ended or whose node is gone;
//     displace: move unbound workers whose node a pod no grant covers
//     took, or release their gang whole if they fit nowhere else, and
//     move workers kube-scheduler refused (displace.go);
//  2. admit: walk the queue in order and reserve each gang all at once:
//     a rigid gang whole, an elastic gang at full width if it fits there,
//     else deferred to after the walk and then given what fits between
//     min and desired (admit.go says why; one that would get less than a
//     quarter of its width lets older elastic gangs grow first),
//     reclaiming younger gangs' elastic surplus for its min if that is
//     what it takes (past its starvation bound also older gangs', no more
//     than it finds free: see reclaim); a gang that does not fit at min is
//     blocked, and the first blocked gang is the head. Gangs behind a
//     blocked head backfill while
//     the head is within its starvation bound; past it, the head fences
//     the nodes it waits for and nobody behind it may use them. A gang
//     its namespace's quotas do not admit whole waits for the quota
//     (WaitQuota), before any node is looked at: it is not the head and
//     fences nothing, but past its starvation bound it holds the quota
//     (see quota.go). Its tenant queue is checked the same way, first
//     (WaitQueue, see queue.go), and the walk takes the queues' gangs in
//     fair-share order: each time the next gang of the queue with the
//     lowest share;
//  3. grow: elastic gangs that precede every blocked gang grow toward
//     desired, oldest first, so surplus never takes what an older gang
//     waits for, and only as far as their quotas and queues admit (when
//     no gang is blocked and every one below desired is of whole-node
//     workers, youngest first: see allFillNodes);
//  4. explain: every gang still queued gets a Wait with the numbers.
func (s *State) cycle(now time.Time) Plan {
	var plan Plan
	s.cycles++
	s.releasePending(&plan)
	s.sumFree()
	s.displace(&plan)
	var infeasible []*gangReq
	reportInfeasible := func(gr *gangReq) {
		if gr.reported != s.cycles {
			gr.reported = s.cycles
			infeasible = append(infeasible, gr)
		}
	}
	// A gang that can never fit is reported in the cycle after it came,
	// wherever the walk below stops.
	for _, gr := range s.fresh {
		if !gr.removed {
			if s.class(gr); gr.infeasible != "" {
				reportInfeasible(gr)
			}
		}
	}
	s.fresh = s.fresh[:0]
	doomed := s.doomedPipelines(reportInfeasible)

	a := s.newAdmission(now, &plan, doomed, reportInfeasible)
	walk := s.newQueueWalk()
	for gr := walk.next(); gr != nil; gr = walk.next() {
		if gr.removed {
			continue
		}
		if s.cfg.SkipWaiting && a.head != nil && s.nothingFits(a.failedMin) {
			// Every queued shape has failed at its smallest size: nothing
			// further in the queue can fit this cycle. Nobody reads the
			// explanations (SkipWaiting), so stop walking.
			break
		}
		a.visit(gr)
	}
	a.admitDeferred()
	s.compactOrder()
	slices.SortFunc(infeasible, func(a, b *gangReq) int { return compareQueue(&a.req, &b.req) })
	for _, gr := range infeasible {
		plan.Infeasible = append(plan.Infeasible, Infeasible{Gang: gr.req.Gang, Message: gr.infeasible, Nodes: gr.nodeInfeasible != "" && gr.infeasible == gr.nodeInfeasible})
	}
	if a.fenced == nil {
		s.fence = nil
	}
	plan.Fence = s.fence

	// Lenders' gangs past their reclaim grace period take their quota
	// back from the cohort's borrowers, and gangs past it take their
	// queue's quota from its lower-priority gangs (preempt.go); growth
	// must then leave what was freed to them (frozen).
	frozen := s.preempt(&plan, now, a.reclaiming)
	s.grow(&plan, oldestBlocked(a.blocked), a.reserved, a.quotaHeads, a.queueHeads, a.reclaiming, frozen)
	if !s.cfg.SkipWaiting {
		s.explain(&plan, now, a.blocked, a.backoff, a.held, a.fenced != nil)
		plan.Waiting = append(plan.Waiting, a.quotaWaits...)
		plan.Queues = s.queueUsage()
	}
	plan.Recheck = s.recheck(now)
	plan.Nominated = s.nominatedKeys()
	return plan
}

// recheck is the earliest instant after now at which the passing of time
// alone can change a decision for a gang still queued: its retry backoff
// ends (NotBefore), it reaches the starvation bound (it may fence or hold
// its quota), or it has waited its queue's reclaimGracePeriod (it may
// preempt). Zero when no such instant is ahead. The simulator wakes
// itself then; without it a decision waits for the next unrelated event.
func (s *State) recheck(now time.Time) time.Time {
	var at time.Time
	consider := func(t time.Time) {
		if t.After(now) && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	for _, gr := range s.order {
		if gr.removed {
			continue
		}
		consider(gr.req.NotBefore)
		consider(gr.req.Queued.Add(s.cfg.StarvationBound))
		if c := s.queueCharge(gr); c.q >= 0 {
			if grace := s.queues[c.q].q.ReclaimGrace; grace != nil {
				consider(gr.req.Queued.Add(*grace))
			}
		}
	}
	return at
}

// compactOrder drops the gangs that left the queue from order, keeping
// it in queue order (the walk may visit it in another).
func (s *State) compactOrder() {
	kept := s.order[:0]
	for _, gr := range s.order {
		if !gr.removed {
			kept = append(kept, gr)
		}
	}
	clear(s.order[len(kept):])
	s.order = kept
}

// doomedPipelines reports the upcoming phases that can never fit and
// returns, per pipeline, how many of its queued or upcoming gangs can
// never fit (none: absent). A queued gang that can never fit dooms its
// pipeline too: its siblings (parallel phases of the DAG) do not run
// either.
//
// The counts are kept as gangs come and go (countDoom, uncountDoom), each
// with its verdict cached per node set, so a cycle costs nothing for the
// pipelines that can finish: walking every queued and upcoming gang each
// cycle was most of the simulator's time on the Philly trace. Only a
// change of the node set or the quotas recounts them all.
func (s *State) doomedPipelines(report func(*gangReq)) map[string]int {
	if !s.doomCurrent() {
		s.recountDoom()
	}
	for pipeline := range s.doomCount {
		for _, gr := range s.upcoming[pipeline] {
			if gr.doomCounted {
				report(gr)
			}
		}
	}
	return s.doomCount
}

// doomCurrent reports whether doomCount holds for the current node set and
// quotas (the two things a never-fits verdict depends on).
func (s *State) doomCurrent() bool {
	return s.doomNodes == s.nodesVersion && s.doomQuotas == s.quotasVersion
}

// recountDoom rebuilds doomCount for the current node set and quotas.
func (s *State) recountDoom() {
	clear(s.doomCount)
	s.doomNodes, s.doomQuotas = s.nodesVersion, s.quotasVersion
	for _, gr := range s.queue {
		gr.doomCounted = false
		s.countDoom(gr)
	}
	for _, grs := range s.upcoming {
		for _, gr := range grs {
			gr.doomCounted = false
			s.countDoom(gr)
		}
	}
}

// countDoom counts a gang that joins the queue or the upcoming phases if
// it can never fit. Between a node or quota change and the next recount
// it leaves the counting to recountDoom.
func (s *State) countDoom(gr *gangReq) {
	if !s.doomCurrent() {
		return
	}
	if s.class(gr); gr.infeasible != "" && !gr.doomCounted {
		gr.doomCounted = true
		s.doomCount[gr.req.Gang.Pipeline]++
	}
}

// uncountDoom forgets a gang that leaves the queue or the upcoming phases.
func (s *State) uncountDoom(gr *gangReq) {
	if !gr.doomCounted {
		return
	}
	gr.doomCounted = false
	p := gr.req.Gang.Pipeline
	if s.doomCount[p]--; s.doomCount[p] <= 0 {
		delete(s.doomCount, p)
	}
}

// nothingFits reports whether every shape with queued gangs has failed, in
// this cycle, at a size no larger than the smallest ever queued with it.
func (s *State) nothingFits(failedMin []int32) bool {
	for shape, n := range s.shapeQueued {
		if n > 0 && (failedMin[shape] == 0 || failedMin[shape] > s.shapeMinMin[shape]) {
			return false
		}
	}
	return true
}

// donors lists the grants with elastic surplus (workers above min), the
// youngest (or lowest-priority) first: the order in which surplus is
// reclaimed.
func (s *State) donors() []*grantState {
	var out []*grantState
	for _, g := range s.elastic {
		if int32(len(g.workers)) > g.req.Min {
			if _, releasing := s.pendingRelease[g.req.Gang]; !releasing {
				out = append(out, g)
			}
		}
	}
	slices.SortFunc(out, func(a, b *grantState) int { return compareQueue(&b.req, &a.req) })
	return out
}

// releasePending drops the grants marked for release, in key order.
func (s *State) releasePending(plan *Plan) {
	keys := make([]GangKey, 0, len(s.pendingRelease))
	for k := range s.pendingRelease {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	for _, k := range keys {
		pr := s.pendingRelease[k]
		if g, ok := s.grants[k]; ok {
			s.unreserve(g, len(g.workers))
			s.dropGrant(k)
			plan.Releases = append(plan.Releases, Release{Gang: k, Reason: pr.reason, Message: pr.message})
		}
		delete(s.pendingRelease, k)
	}
}

// sumFree sets totalFree to the cluster's free capacity (negative free,
// from an overcommitted ledger, counts as zero).
func (s *State) sumFree() {
	if cap(s.totalFree) < len(s.dimNames) {
		s.totalFree = make([]int64, len(s.dimNames))
	}
	s.totalFree = s.totalFree[:len(s.dimNames)]
	clear(s.totalFree)
	for _, n := range s.nodes {
		for d, v := range n.free {
			if v > 0 {
				s.totalFree[d] += v
			}
		}
	}
}

func (s *State) workerPlacements(first int, nodes []int32) []WorkerPlacement {
	out := make([]WorkerPlacement, len(nodes))
	for i, n := range nodes {
		out[i] = WorkerPlacement{Index: int32(first + i), Node: s.nodes[n].node.Name}
	}
	return out
}

// grow extends elastic grants toward desired. Only gangs that precede
// limit in queue order grow (nil: every gang): the cycle passes the oldest
// blocked gang, since growth must never take capacity an older or
// higher-priority waiting gang needs; admitDeferred also passes the
// deferred gang it is about to place (growsFirst).
//
// frozen are the tenant queues a preemption freed quota for in this
// cycle: none of their gangs grows in it, so the quota is still there
// when the next cycle's walk comes to the gang it was freed for.
func (s *State) grow(plan *Plan, limit *gangReq, reserved map[GangKey]int, quotaHeads, queueHeads map[int]*gangReq, rc reclaims, frozen map[int]bool) {
	var cands []*grantState
	for _, g := range s.elastic {
		if int32(len(g.workers)) < g.req.Desired && (limit == nil || compareQueue(&g.req, &limit.req) < 0) {
			cands = append(cands, g)
		}
	}
	slices.SortFunc(cands, func(a, b *grantState) int { return compareQueue(&a.req, &b.req) })
	if limit == nil && s.allFillNodes(cands) {
		slices.Reverse(cands)
	}
	for g := range s.growOrder(cands) {
		if len(frozen) > 0 && frozen[s.queueCharge(&g.gangReq).q] {
			continue
		}
		first := len(g.workers)
		want := s.growthRoom(&g.gangReq, g.req.Desired-int32(first), quotaHeads, queueHeads, rc)
		p := s.place(&g.gangReq, s.class(&g.gangReq), want, 1, nil)
		if p.nodes == nil {
			continue
		}
		s.take(g, p.nodes)
		added := s.workerPlacements(first, p.nodes)
		if i, ok := reserved[g.req.Gang]; ok {
			plan.Reserves[i].Workers = append(plan.Reserves[i].Workers, added...)
		} else if i := slices.IndexFunc(plan.Grows, func(r Reservation) bool { return r.Gang == g.req.Gang }); i >= 0 {
			// It grew earlier in the cycle too (admitDeferred): one entry.
			plan.Grows[i].Workers = append(plan.Grows[i].Workers, added...)
		} else {
			plan.Grows = append(plan.Grows, Reservation{Gang: g.req.Gang, Workers: added})
		}
	}
}

// allFillNodes reports whether every growth candidate is a gang of
// whole-node workers (fillsNodes). grow then grows them youngest first
// when no queued gang is blocked: nothing waits for the capacity, so the
// only question is which running gang gets it, and of gangs of
// whole-node workers the youngest has run the least of its phase. Fed
// first, it ends closer to the older ones; fed last, it runs on alone
// while the nodes the others free idle (a gang cannot grow past desired).
// On the wave burst (docs/simulator.md, "Youngest first once nothing
// waits") the last wave's trains end together and the makespan falls
// 1.034 → 1.029 × LB. Gangs of smaller workers keep oldest first: where
// their phases' lengths differ, as on the traces, the youngest is no
// guide to what is left, and the tail got longer (p99 +9% on
// elastic-heavy).
func (s *State) allFillNodes(cands []*grantState) bool {
	for _, g := range cands {
		if !s.fillsNodes(&g.gangReq) {
			return false
		}
	}
	return true
}

// fillsNodes reports whether one worker of gr fills any node of its class
// it fits on: no node could ever hold two. It depends only on the nodes'
// allocatable, so the class keeps the answer per footprint (the classes
// are rebuilt when the nodes change); grow asks it every cycle.
func (s *State) fillsNodes(gr *gangReq) bool {
	c := s.class(gr)
	if fills, ok := c.fills[gr.fpKey]; ok {
		return fills
	}
	fills := len(c.nodes) > 0
	for _, i := range c.nodes {
		n := s.nodes[i]
		two := true
		for _, f := range gr.fp {
			two = two && n.alloc[f.dim]/f.amt >= 2
		}
		if two {
			fills = false
			break
		}
	}
	if c.fills == nil {
		c.fills = map[string]bool{}
	}
	c.fills[gr.fpKey] = fills
	return fills
}

// growOrder yields the candidates (in queue order) in the order they
// grow: without tenant queues, queue order; with them, each time the
// next candidate of the queue with the lowest fair-sharing share, as the
// admission walk takes queued gangs, so what the cohort lends goes first
// to the queue furthest below its share and not to whichever queue holds
// the oldest gang. Shares are read as each candidate is taken: growing
// one gang raises its queue's share before the next is chosen.
func (s *State) growOrder(cands []*grantState) iter.Seq[*grantState] {
	return func(yield func(*grantState) bool) {
		if len(s.queues) == 0 {
			for _, g := range cands {
				if !yield(g) {
					return
				}
			}
			return
		}
		left := slices.Clone(cands)
		for len(left) > 0 {
			best, bestShare := 0, math.Inf(1)
			for i, g := range left {
				sh := 0.0
				if q := s.queueCharge(&g.gangReq).q; q >= 0 {
					sh = s.queues[q].share()
				}
				if i == 0 || sh < bestShare {
					best, bestShare = i, sh
				}
			}
			g := left[best]
			left = slices.Delete(left, best, best+1)
			if !yield(g) {
				return
			}
		}
	}
}

// growthRoom is how many of want more workers of g its quotas and tenant
// queue admit: none if an older gang waits for one of them, and none on
// quota a lender of its cohort is reclaiming.
func (s *State) growthRoom(g *gangReq, want int32, quotaHeads, queueHeads map[int]*gangReq, rc reclaims) int32 {
	if len(s.quotas) > 0 {
		if s.behindQuotaHead(g, quotaHeads) {
			return 0
		}
		room, _ := s.quotaRoom(g, int64(want))
		want = int32(room)
	}
	if len(s.queues) > 0 {
		if s.behindQueueHead(g, queueHeads) {
			return 0
		}
		room, _ := s.queueRoom(g, int64(want))
		for room > 0 {
			if r, _ := s.heldForReclaim(g, room, rc); r == nil {
				break
			}
			room--
		}
		want = int32(room)
	}
	return want
}

// surplusWorker is one worker above min of an elastic grant.
type surplusWorker struct {
	g     *grantState
	index int // worker index in g.workers
}

// reclaim tries to make room for gr by shrinking the elastic surplus of
// gangs behind it in queue order: the youngest (or lowest-priority) gang's
// highest-index workers go first. It shrinks only if that lets gr fit, and
// then as little as needed. It returns gr's placement, or nil.
//
// A starving gr (past its starvation bound) may also take surplus from
// gangs ahead of it of no higher priority, after the younger gangs'
// surplus, but no more of their workers than it finds room for workers of
// its own free now (none free: none taken). Why: a starving gang fences
// the nodes it waits for, and what frees there idles until its min fits,
// while the older gangs whose surplus it waits behind may keep it for
// their whole run; the fence then idles capacity and holds back every
// younger gang without bringing the head's start closer (docs/simulator.md,
// "Why phasegang loses", cause C). The cap keeps this to a gang that
// waits beside idle capacity, so it puts that capacity to work rather
// than reshuffling a full cluster; an older gang only ever loses surplus,
// never its min, and grows back (oldest first) as capacity frees.
func (s *State) reclaim(gr *gangReq, c *nodeClass, fence []bool, all []*grantState, plan *Plan, starving bool) []int32 {
	donors, behind, older := s.reclaimDonors(gr, c, fence, all, starving)
	if len(donors) == 0 {
		return nil
	}
	cands := surplusOf(donors, behind, older)
	if len(cands) == 0 {
		return nil
	}
	try := func(n int) placement {
		s.adjust(cands[:n], +1)
		p := s.place(gr, c, gr.req.Min, gr.req.Min, fence)
		s.adjust(cands[:n], -1)
		return p
	}
	if try(len(cands)).nodes == nil {
		return nil
	}
	n := shortestFit(len(cands), func(n int) bool { return try(n).nodes != nil })
	p := try(n)
	s.shrinkDonors(plan, gr, donors, cands[:n])
	return p.nodes
}

// reclaimDonors are the gangs gr may take surplus from, youngest first:
// the first behind of them are the gangs behind gr; a starving gr may
// also take up to older surplus workers from the gangs ahead of it of no
// higher priority, which follow.
func (s *State) reclaimDonors(gr *gangReq, c *nodeClass, fence []bool, all []*grantState, starving bool) (donors []*grantState, behind, older int) {
	// Donors are youngest first; those behind gr are a prefix.
	for behind < len(all) && compareQueue(&all[behind].req, &gr.req) > 0 {
		behind++
	}
	donors = all[:behind]
	if !starving {
		return donors, behind, 0
	}
	// gr did not fit, so fewer than min workers are free for it.
	if older = int(s.place(gr, c, gr.req.Min, 1, fence).total); older > 0 {
		donors = slices.Clone(donors)
		for _, g := range all[behind:] {
			if g.req.Priority <= gr.req.Priority {
				donors = append(donors, g)
			}
		}
	}
	return donors, behind, older
}

// surplusOf lists the donors' placed surplus workers, highest index first
// within each donor: every one of the first behind donors', then at most
// older of the rest's.
func surplusOf(donors []*grantState, behind, older int) []surplusWorker {
	var cands []surplusWorker
	for j, g := range donors {
		if j >= behind && older == 0 {
			break
		}
		for i := len(g.workers) - 1; i >= int(g.req.Min); i-- {
			if g.workers[i] >= 0 {
				if j >= behind {
					if older == 0 {
						break
					}
					older--
				}
				cands = append(cands, surplusWorker{g: g, index: i})
			}
		}
	}
	return cands
}

// shortestFit is the least n in [1, upTo] for which fits(n), given
// fits(upTo). Freeing more never hurts, so it is found by binary search.
func shortestFit(upTo int, fits func(n int) bool) int {
	lo, hi := 1, upTo
	for lo < hi {
		mid := (lo + hi) / 2
		if fits(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// shrinkDonors takes the surplus workers taken from the donors for gr for
// real, one Shrink per donor in plan, highest index first.
func (s *State) shrinkDonors(plan *Plan, gr *gangReq, donors []*grantState, taken []surplusWorker) {
	shrunk := map[*grantState]int{}
	for _, w := range taken {
		shrunk[w.g]++
	}
	for _, g := range donors {
		k := shrunk[g]
		if k == 0 {
			continue
		}
		removed := s.give(g, k)
		sh := Shrink{Gang: g.req.Gang, For: gr.req.Gang}
		for j := len(removed) - 1; j >= 0; j-- {
			sh.Workers = append(sh.Workers, WorkerPlacement{Index: int32(len(g.workers) + j), Node: s.nodes[removed[j]].node.Name})
		}
		plan.Shrinks = append(plan.Shrinks, sh)
	}
}

// adjust frees (+1) or re-charges (-1) the capacity of surplus workers,
// for a what-if placement.
func (s *State) adjust(ws []surplusWorker, sign int64) {
	for _, w := range ws {
		n := s.nodes[w.g.workers[w.index]]
		for _, f := range w.g.fp {
			n.free[f.dim] += sign * f.amt
			s.totalFree[f.dim] += sign * f.amt
		}
	}
}

// fenceFor picks the nodes a starving head waits for, and returns the mask
// of fenced node indices. The previous cycle's fence is kept while it is
// still valid, so the set does not wander and the head's wait is bounded
// by the longest phase running on it.
// fenceCand is a node a starving head might fence: the head's workers it
// has room for now, and could ever hold (at most the head's min).
type fenceCand struct {
	i         int32
	now, ever int64
}

// inFenceDomain keeps, for a head whose topology is required, only the
// candidates in the one domain of its level it should drain: the domain
// its earlier phase ran in (sameDomainAs), else, of the domains that could
// ever hold it, the one with the most room now (ties: most room ever,
// then the first). Fencing nodes of several domains would hold capacity
// the head can never use together. Others keep every candidate.
func (s *State) inFenceDomain(head *gangReq, cands []fenceCand) []fenceCand {
	t := head.req.Topology
	if t == nil || !t.Required || t.Level < 0 {
		return cands
	}
	now, ever := map[int32]int64{}, map[int32]int64{}
	var doms []int32
	for _, c := range cands {
		d := s.domOf(c.i, t.Level)
		if _, seen := ever[d]; !seen && d >= 0 {
			doms = append(doms, d)
		}
		now[d] += c.now
		ever[d] += c.ever
	}
	best := int32(-1)
	if len(t.Near) > 0 {
		best = s.majorityDomain(s.nodeIndexes(t.Near), t.Level)
	} else {
		for _, d := range doms {
			if ever[d] >= int64(head.req.Min) && (best < 0 || cmp.Or(cmp.Compare(now[d], now[best]), cmp.Compare(ever[d], ever[best])) > 0) {
				best = d
			}
		}
	}
	if best < 0 {
		return cands
	}
	return slices.DeleteFunc(cands, func(c fenceCand) bool { return s.domOf(c.i, t.Level) != best })
}

// nodeIndexes are the indexes of the named nodes the State has.
func (s *State) nodeIndexes(names []string) []int32 {
	out := make([]int32, 0, len(names))
	for _, name := range names {
		if i, ok := s.nodeIdx[name]; ok {
			out = append(out, int32(i))
		}
	}
	return out
}

func (s *State) fenceFor(head *gangReq, c *nodeClass) []bool {
	potential := func(i int32) int64 {
		n := s.nodes[i]
		k := int64(head.req.Min)
		for _, f := range head.fp {
			k = min(k, (n.alloc[f.dim]-n.used[f.dim])/f.amt)
		}
		return max(portRoom(head, nil, i, k), 0)
	}
	inClass := make([]bool, len(s.nodes))
	for _, i := range c.nodes {
		inClass[i] = true
	}
	var chosen []int32
	blocked := s.portBlocked(head)
	if s.fence != nil && s.fence.Head == head.req.Gang {
		var sum int64
		for _, name := range s.fence.Nodes {
			i, ok := s.nodeIdx[name]
			if !ok || !inClass[i] {
				sum = -1
				break
			}
			chosen = append(chosen, int32(i))
			sum += potential(int32(i))
		}
		if sum < int64(head.req.Min) {
			chosen = nil
		}
	}
	if chosen == nil {
		// Nodes with the most room now drain soonest; ties by how much
		// they could ever hold, then by name. A head that must run in one
		// domain drains one domain.
		cands := make([]fenceCand, 0, len(c.nodes))
		for _, i := range c.nodes {
			if ever := potential(i); ever > 0 {
				cands = append(cands, fenceCand{i: i, now: portRoom(head, blocked, i, capOf(s.nodes[i].free, head.fp, int64(head.req.Min))), ever: ever})
			}
		}
		cands = s.inFenceDomain(head, cands)
		slices.SortFunc(cands, func(a, b fenceCand) int {
			return cmp.Or(cmp.Compare(b.now, a.now), cmp.Compare(b.ever, a.ever), cmp.Compare(a.i, b.i))
		})
		var sum int64
		for _, cd := range cands {
			if sum >= int64(head.req.Min) {
				break
			}
			chosen = append(chosen, cd.i)
			sum += cd.ever
		}
	}
	mask := make([]bool, len(s.nodes))
	f := &Fence{Head: head.req.Gang}
	slices.Sort(chosen)
	for _, i := range chosen {
		mask[i] = true
		f.Nodes = append(f.Nodes, s.nodes[i].node.Name)
	}
	s.fence = f
	return mask
}

// orderQueue names the tenant queue whose order a gang's Wait.Ahead
// counts: its own when queues exist, "" (the whole cluster) when none do.
// Across queues the order is by fair share and shifts as gangs run, so a
// count across them would promise a place the gang does not have.
func (s *State) orderQueue(gr *gangReq) string {
	if len(s.queues) == 0 {
		return ""
	}
	return queueName(&gr.req)
}

// explain builds a Wait for every gang that is still queued.
func (s *State) explain(plan *Plan, now time.Time, blocked, backoff, held []*gangReq, starving bool) {
	type stats struct {
		fit, largest int64
		nodes        int
	}
	cache := map[string]stats{}
	aheadIn := map[string]int{}
	for _, gr := range blocked {
		queue := s.orderQueue(gr)
		ahead := aheadIn[queue]
		aheadIn[queue]++
		c := s.class(gr)
		key := gr.classKey + "\x00" + gr.fpKey + "\x00" + itoa(gr.req.Min)
		st, ok := cache[key]
		if !ok {
			blocked := s.portBlocked(gr)
			for _, i := range c.nodes {
				k := portRoom(gr, blocked, i, capOf(s.nodes[i].free, gr.fp, int64(gr.req.Min)))
				if k > 0 {
					st.fit += k
					st.nodes++
					st.largest = max(st.largest, k)
				}
			}
			cache[key] = st
		}
		w := Wait{
			Gang: gr.req.Gang, Reason: WaitCapacity, Ahead: ahead, AheadIn: queue,
			Min: gr.req.Min, Footprint: gr.req.Footprint,
			FitNow: int32(min(st.fit, int64(gr.req.Min))), NodesWithRoom: st.nodes, LargestBlock: int32(st.largest),
			MatchingNodes: len(c.nodes), Topology: s.topoWait(gr, c),
		}
		if gr == blocked[0] {
			w.Starving = starving
		} else if starving && st.fit >= int64(gr.req.Min) {
			w.Reason = WaitBehindHead
		}
		plan.Waiting = append(plan.Waiting, w)
	}
	for _, gr := range backoff {
		plan.Waiting = append(plan.Waiting, Wait{
			Gang: gr.req.Gang, Reason: WaitBackoff, Min: gr.req.Min, Footprint: gr.req.Footprint,
			MatchingNodes: len(s.class(gr).nodes), NotBefore: gr.req.NotBefore,
		})
	}
	for _, gr := range held {
		plan.Waiting = append(plan.Waiting, Wait{
			Gang: gr.req.Gang, Reason: WaitPipelineCannotFinish, Min: gr.req.Min, Footprint: gr.req.Footprint,
			MatchingNodes: len(s.class(gr).nodes),
		})
	}
}

// nominatedKeys lists the queued gangs that gangs were preempted for, in
// queue order (Plan.Nominated).
func (s *State) nominatedKeys() []GangKey {
	var out []GangKey
	for _, gr := range s.order {
		if gr.nominated && !gr.removed {
			out = append(out, gr.req.Gang)
		}
	}
	return out
}
