package engine

import (
	"slices"
	"time"
)

// Admission: desired first
//
// The admit pass walks the queue in order. A rigid gang (min = desired) is
// reserved whole or blocked, as always. An elastic gang is first tried at
// full width (desired, or as much of it as its quotas and queue admit).
// If that does not fit, the gang is deferred rather than admitted at min
// at once: the rest of the walk goes on, and gangs behind it that fit at
// full width take the capacity. After the walk, the deferred gangs are
// tried again in queue order, each with as many workers as fit between min
// and desired; one that does not fit even at min is blocked.
//
// Why: an elastic gang started at min runs at min's speed until capacity
// frees for it to grow, and on a busy cluster it grows late. Started at
// min ahead of a younger gang that would have run at full width, it slows
// both down (processor sharing); the simulator's policy suite showed it
// (docs/simulator.md). Starting at min only with capacity the walk would
// otherwise leave idle keeps elasticity's gain (no idle GPUs while work
// waits) without that loss.
//
// The trade-off: a deferred elastic gang can be overtaken by younger gangs
// while it is within its starvation bound, even though it would fit at
// min. Past its bound it is overtaken no more: when it is deferred it
// fences the nodes it waits for, as a blocked head does, and holds its
// quotas and queue, so the gangs behind it in the walk cannot take them;
// the deferred pass then admits it first, fence included.

// admission is the state of one cycle's admit pass.
type admission struct {
	s                *State
	now              time.Time
	plan             *Plan
	doomed           map[string]int
	reportInfeasible func(*gangReq)
	donors           []*grantState
	reserved         map[GangKey]int // gang → index in plan.Reserves
	blocked          []*gangReq
	// head is the first blocked gang; fenceHead is the starving gang
	// whose fence (fenced) applies to every other gang of the cycle: the
	// head once past its starvation bound, or a starving deferred gang.
	head, fenceHead *gangReq
	fenced          []bool
	backoff, held   []*gangReq // waiting out a backoff; of doomed pipelines
	quotaWaits      []Wait
	// quotaHeads[q] is the first gang in queue order that quota q did
	// not admit: growth behind it never takes the quota it waits for,
	// and past its starvation bound no gang behind it is admitted into
	// the quota.
	quotaHeads map[int]*gangReq
	// queueHeads[q] is the same for tenant queue q; reclaiming holds, per
	// cohort and resource, a lender's gang that waits for its own nominal
	// quota: no gang is admitted on quota borrowed of it meanwhile.
	queueHeads map[int]*gangReq
	reclaiming reclaims
	// failedMin[shape] is the smallest min of a gang of that shape that
	// found no room, reclaim included, in this cycle. Until capacity is
	// freed (only a reclaim frees it mid-cycle) a gang of the same shape
	// and at least that min cannot fit either, and one behind it has no
	// more surplus to reclaim: skip it without scanning the nodes.
	failedMin []int32 // 0: no failure yet
	// deferred are the elastic gangs that did not fit at full width, in
	// walk order.
	deferred []*gangReq
	walked   bool // the walk is over: admitDeferred runs
	// strictLanes marks, under Config.StrictFIFO, the lanes (tenant
	// queues; -1 without them) whose first gang in walk order got
	// nothing: every gang behind it in its lane waits too.
	strictLanes map[int]bool
}

func (s *State) newAdmission(now time.Time, plan *Plan, doomed map[string]int, reportInfeasible func(*gangReq)) *admission {
	return &admission{
		s: s, now: now, plan: plan, doomed: doomed, reportInfeasible: reportInfeasible,
		donors:      s.donors(),
		reserved:    map[GangKey]int{},
		quotaHeads:  map[int]*gangReq{},
		queueHeads:  map[int]*gangReq{},
		reclaiming:  s.findReclaims(now),
		failedMin:   make([]int32, len(s.shapes)),
		strictLanes: map[int]bool{},
	}
}

// visit is the walk's step for one queued gang: skip it (infeasible,
// doomed, backing off), let it wait for its queue or quota, reserve it,
// defer it, or block it.
func (a *admission) visit(gr *gangReq) {
	s := a.s
	c := s.class(gr)
	switch {
	case gr.infeasible != "":
		a.reportInfeasible(gr)
		return
	case a.doomed[gr.req.Gang.Pipeline] > 0:
		// Another phase of its pipeline can never fit: admitting it
		// would spend capacity on work that leads nowhere.
		a.held = append(a.held, gr)
		return
	case a.now.Before(gr.req.NotBefore):
		a.backoff = append(a.backoff, gr)
		return
	case a.waitsForQuota(gr):
		return
	case a.behindStrictHead(gr):
		a.block(gr, c)
		return
	}
	if want := a.fullWidth(gr); want > gr.req.Min {
		if nodes := s.place(gr, c, want, want, a.fenceOf(gr)).nodes; nodes != nil {
			a.reserve(gr, nodes)
			return
		}
		if a.preemptsWithinQueue(gr) {
			// Not deferred (see preemptsWithinQueue): what fits now.
			if nodes := a.placeMin(gr, c, want); nodes != nil {
				a.reserve(gr, nodes)
				return
			}
		}
		a.deferGang(gr, c)
		return
	}
	if nodes := a.placeMin(gr, c, gr.req.Min); nodes != nil {
		a.reserve(gr, nodes)
		return
	}
	a.block(gr, c)
}

// admitDeferred tries the deferred gangs again, in walk order, each with
// as many workers as fit between min and desired. A gang that would start
// with less than a quarter of its width lets the older running elastic
// gangs grow first (growsFirst says why).
func (a *admission) admitDeferred() {
	s := a.s
	a.walked = true
	for _, gr := range a.deferred {
		if gr.removed {
			continue
		}
		if a.waitsForQuota(gr) {
			// What the gangs since took leaves its queue or quota short.
			continue
		}
		c := s.class(gr)
		want := a.fullWidth(gr)
		if a.growsFirst(gr, c, want) {
			s.grow(a.plan, earlier(oldestBlocked(a.blocked), gr), a.reserved, a.quotaHeads, a.queueHeads, a.reclaiming, nil)
			a.donors = slices.DeleteFunc(a.donors, a.changedThisCycle)
		}
		if nodes := a.placeMin(gr, c, want); nodes != nil {
			a.reserve(gr, nodes)
			if gr == a.fenceHead {
				// It got what it fenced: nobody waits behind the fence.
				a.fenced, a.fenceHead = nil, nil
				a.releaseHeads(gr)
			}
			continue
		}
		a.block(gr, c)
	}
}

// smallStart is the share of its width below which a deferred gang does
// not start ahead of older elastic gangs' growth: fewer than 1/smallStart
// of the workers it wants.
const smallStart = 4

// growsFirst reports whether the older running elastic gangs grow before
// deferred gang gr is placed: gr fits now at min but with fewer than a
// quarter of the want workers it is tried at.
//
// Why: a gang started at a small share of its width runs at that share's
// speed, for a long time, and holds capacity an older gang below desired
// would have grown into. On a cluster that is always short of what the
// elastic gangs desire, each such start adds one more gang sharing the
// capacity, and every one of them ends later (processor sharing): the
// policy suite's elastic-heavy workload (trains from min 1-2 to desired
// 8-16) had trains running at 2 of 16 workers for hours. Growing the older
// gangs first serves them closer to first come, first served. gr still
// gets what is left, at least its min, so no capacity idles for it; a gang
// that would start with a quarter or more (as every trace train does:
// min is half of desired) starts at once, as before.
func (a *admission) growsFirst(gr *gangReq, c *nodeClass, want int32) bool {
	if want < smallStart*gr.req.Min {
		// Even at min it has a quarter of want or more.
		return false
	}
	p := a.s.place(gr, c, want, gr.req.Min, a.fenceOf(gr))
	return p.nodes != nil && smallStart*len(p.nodes) < int(want)
}

// earlier is whichever of x and y comes first in queue order (nil: none).
func earlier(x, y *gangReq) *gangReq {
	if x == nil || (y != nil && compareQueue(&y.req, &x.req) < 0) {
		return y
	}
	return x
}

// waitsForQuota reports whether gr's tenant queue or its namespace's
// quotas do not admit its min workers now; it then waits for them, not for
// nodes, so it is neither the head nor a reason to fence nodes.
func (a *admission) waitsForQuota(gr *gangReq) bool {
	if w, ok := a.s.queueWait(gr, a.now, a.queueHeads, a.reclaiming); ok {
		a.quotaWaits = append(a.quotaWaits, w)
		return true
	}
	if w, ok := a.s.quotaWait(gr, a.now, a.quotaHeads); ok {
		a.quotaWaits = append(a.quotaWaits, w)
		return true
	}
	return false
}

// preemptsWithinQueue reports whether gr's queue preempts its own gangs
// for gr in this cycle (withinQueue, gr queued past the grace period):
// such an elastic gang that does not fit at full width is not deferred
// but placed at once with what fits between min and that width. Deferred,
// the gangs behind it in the walk, its queue's lower-priority ones among
// them, would take the nodes and quota it fits in at min, and the
// preemption after the walk would then free its queue's quota by taking
// its older lower-priority gangs (the gangs granted in this cycle are
// never preempted in it): the victim, queued again, would be granted
// ahead of the deferred gang in the next cycle and preempted once more, a
// loop (TestPreemptWithinQueueNotDeferred). Past the grace period the
// gang is overtaken no more by the gangs it may preempt, as a starving
// gang is not past its starvation bound.
func (a *admission) preemptsWithinQueue(gr *gangReq) bool {
	s := a.s
	if len(s.queues) == 0 {
		return false
	}
	c := s.queueCharge(gr)
	if c.q < 0 {
		return false
	}
	q := s.queues[c.q].q
	return q.WithinQueue != "" && q.WithinQueue != ReclaimNever && q.ReclaimGrace != nil && a.now.Sub(gr.req.Queued) >= *q.ReclaimGrace
}

// fullWidth is the size gr is tried at first: desired, or as much of it as
// its quotas and queue admit (never below min, which they admit already).
func (a *admission) fullWidth(gr *gangReq) int32 {
	if gr.req.Desired == gr.req.Min {
		return gr.req.Min
	}
	return max(gr.req.Min, a.s.growthRoom(gr, gr.req.Desired, a.quotaHeads, a.queueHeads, a.reclaiming))
}

// fenceOf is the fence gr must keep off: the starving gang's, unless gr is
// that gang.
func (a *admission) fenceOf(gr *gangReq) []bool {
	if a.fenceHead == nil || gr == a.fenceHead {
		return nil
	}
	return a.fenced
}

// placeMin places up to want workers of gr and at least its min,
// reclaiming younger gangs' elastic surplus for the min if that is what
// it takes (and, past gr's starvation bound, some of older gangs': see
// State.reclaim). nil: it does not fit.
func (a *admission) placeMin(gr *gangReq, c *nodeClass, want int32) []int32 {
	s := a.s
	fence := a.fenceOf(gr)
	if m := a.failedMin[gr.shape]; m != 0 && gr.req.Min >= m && (fence != nil || a.fenced == nil) {
		// A gang of its shape found no room at that size, and gr sees no
		// more nodes than it did (the fence's owner sees its fence too).
		return nil
	}
	nodes := s.place(gr, c, want, gr.req.Min, fence).nodes
	if nodes == nil && len(a.donors) > 0 {
		if nodes = s.reclaim(gr, c, fence, a.donors, a.plan, a.starving(gr)); nodes != nil {
			clear(a.failedMin)
			a.refreshDonors()
		}
	}
	if nodes == nil {
		a.failedMin[gr.shape] = gr.req.Min
	}
	return nodes
}

// refreshDonors lists the grants with elastic surplus again after a
// reclaim, leaving out the gangs reserved in this cycle: their plan entry
// is a Reserve, which a Shrink in the same plan would contradict (their
// surplus can be reclaimed from the next cycle on).
func (a *admission) refreshDonors() {
	a.donors = slices.DeleteFunc(a.s.donors(), a.changedThisCycle)
}

// changedThisCycle reports whether g was reserved or grown in this
// cycle's plan: a Shrink of it in the same plan would contradict that
// entry (its surplus can be reclaimed from the next cycle on). Deferred
// gangs that let older gangs grow first (growsFirst) grow them mid-walk,
// before a later gang's reclaim looks for donors.
func (a *admission) changedThisCycle(g *grantState) bool {
	if _, now := a.reserved[g.req.Gang]; now {
		return true
	}
	return slices.ContainsFunc(a.plan.Grows, func(r Reservation) bool { return r.Gang == g.req.Gang })
}

// reserve grants gr on nodes (one entry per worker).
func (a *admission) reserve(gr *gangReq, nodes []int32) {
	s := a.s
	g := &grantState{gangReq: *gr}
	g.removed = false
	s.take(g, nodes)
	s.addGrant(g)
	s.dequeue(gr)
	a.reserved[gr.req.Gang] = len(a.plan.Reserves)
	a.plan.Reserves = append(a.plan.Reserves, Reservation{Gang: gr.req.Gang, Workers: s.workerPlacements(0, nodes)})
}

// deferGang defers an elastic gang that did not fit at full width. Past
// its starvation bound it first fences the nodes it waits for and holds
// its queue and quotas, so that nobody behind it takes them before the
// deferred pass comes back to it.
func (a *admission) deferGang(gr *gangReq, c *nodeClass) {
	if a.fenceHead == nil && a.mayFence(gr) {
		a.fenced, a.fenceHead = a.s.fenceFor(gr, c), gr
		a.holdHeads(gr)
	}
	a.deferred = append(a.deferred, gr)
}

// block records that gr does not fit even at min; the first blocked gang
// is the head, and past its starvation bound it fences the nodes it waits
// for (unless a starving deferred gang already does).
func (a *admission) block(gr *gangReq, c *nodeClass) {
	a.blocked = append(a.blocked, gr)
	if a.s.cfg.StrictFIFO {
		a.strictLanes[a.laneOf(gr)] = true
	}
	if a.head != nil {
		return
	}
	a.head = gr
	// After the walk no gang fences: the gangs behind it were visited
	// already, and some of them may sit on the nodes it would fence. A
	// starving deferred gang fenced when it was deferred.
	if a.fenceHead == nil && !a.walked && a.mayFence(gr) {
		a.fenced, a.fenceHead = a.s.fenceFor(gr, c), gr
	}
}

// behindStrictHead reports whether, under Config.StrictFIFO, a gang ahead
// of gr in its lane got nothing this cycle: then gr does not try.
func (a *admission) behindStrictHead(gr *gangReq) bool {
	return a.s.cfg.StrictFIFO && a.strictLanes[a.laneOf(gr)]
}

// laneOf is the strict-FIFO lane of gr: its tenant queue, or -1 when there
// are none (the whole queue is one lane).
func (a *admission) laneOf(gr *gangReq) int {
	if len(a.s.queues) == 0 {
		return -1
	}
	return a.s.queueCharge(gr).q
}

func (a *admission) starving(gr *gangReq) bool {
	return a.now.Sub(gr.req.Queued) >= a.s.cfg.StarvationBound
}

// mayFence reports whether gr, past its starvation bound, fences the
// nodes it waits for. A gang that would run on quota its cohort lends
// does not: the bound promises a gang its queue's entitlement, not
// borrowed room, and a borrower fencing the cluster would hold back the
// queues that lend it (as in Kueue, borrowing is best effort; a gang
// within its nominal quota gets its room by reclaim or by the fence).
func (a *admission) mayFence(gr *gangReq) bool {
	return a.starving(gr) && !a.s.wouldBorrow(gr)
}

// holdHeads makes gr the head of each quota and queue it charges that has
// none yet: past gr's starvation bound, no gang behind it is admitted into
// them (quotaWait, queueWait) and none grows into them.
func (a *admission) holdHeads(gr *gangReq) {
	for _, c := range a.s.charges(gr) {
		if a.quotaHeads[c.q] == nil {
			a.quotaHeads[c.q] = gr
		}
	}
	if len(a.s.queues) > 0 {
		if q := a.s.queueCharge(gr).q; q >= 0 && a.queueHeads[q] == nil {
			a.queueHeads[q] = gr
		}
	}
}

// releaseHeads undoes holdHeads once gr is admitted.
func (a *admission) releaseHeads(gr *gangReq) {
	for q, h := range a.quotaHeads {
		if h == gr {
			delete(a.quotaHeads, q)
		}
	}
	for q, h := range a.queueHeads {
		if h == gr {
			delete(a.queueHeads, q)
		}
	}
}

// oldestBlocked is the blocked gang first in queue order (nil: none).
// Deferred gangs are blocked after the walk, so blocked is not always in
// queue order.
func oldestBlocked(blocked []*gangReq) *gangReq {
	if len(blocked) == 0 {
		return nil
	}
	return slices.MinFunc(blocked, func(x, y *gangReq) int { return compareQueue(&x.req, &y.req) })
}
