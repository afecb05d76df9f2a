package engine

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Tenant queues
//
// A queue (a TenantQueue) is a tenant's share of the cluster, a
// constraint next to node capacity and ResourceQuotas in the same
// decision: a gang is granted only if, for every resource its queue
// names, the queue's use plus the gang's Min workers stay within the
// queue's nominal quota plus what it may borrow from its cohort.
//
// A cohort is the set of queues that name it. Each member lends the part
// of its nominal quota above N − L (L its lendingLimit, or all of N) when
// it does not use it; the part below is its alone. With G = N − L, a
// member's draw on the cohort's pool is max(0, U − G), and the pool holds
// Σ L over the members. A queue may add
//
//	max(0, G − U) + max(0, Σ L − Σ max(0, U − G))
//
// capped by N + borrowingLimit − U: its own unlent quota, then the pool's
// slack. That is the same as "what the cohort borrows never exceeds what
// its members lend of their unused quota, each within its lendingLimit",
// which is what the property tests check. A queue without a cohort has
// L = 0 and may use its nominal quota only.
//
// Order across queues: the walk of a cycle takes, each time, the next
// gang of the queue with the lowest share (its dominant resource's use
// over nominal, divided by its weight); within a queue, and between
// queues of equal share, the queue order (priority, then pipeline age).
// Gangs whose queue limits nothing (no queues, or no queue named and no
// default queue) count as share 0.

// Queue is one tenant queue as the engine sees it.
type Queue struct {
	Name string
	// Cohort names the queues that lend each other unused nominal quota
	// ("": none; the queue neither borrows nor lends).
	Cohort string
	// Resources is the queue's quota per resource, in the engine's
	// resource names (a request's own name, "pods" for workers). A
	// resource not listed is not limited by the queue.
	Resources map[ResourceName]QueueQuota
	// Weight scales the queue's fair share, in milli-units (1000 is 1);
	// 0 means 1.
	Weight int64
	// Reclaim says whether the queue takes back lent quota when one of
	// its gangs waits for its nominal quota, and from whom.
	Reclaim ReclaimPolicy
	// ReclaimGrace, if set, is how long a gang of the queue waits for its
	// nominal quota, lent to the cohort, before the cohort's borrowing
	// gangs are preempted to give it back (preempt.go); nil: never, the
	// quota comes back at the borrowers' phase boundaries only.
	ReclaimGrace *time.Duration
	// WithinQueue says whether a gang of the queue waiting past
	// ReclaimGrace for the queue's own quota preempts the queue's gangs
	// of lower priority (LowerPriority), or also of equal priority and a
	// younger pipeline (Any); Never or "": no.
	WithinQueue ReclaimPolicy
}

// QueueQuota is a queue's quota of one resource, in milli-units.
type QueueQuota struct {
	Nominal int64
	// BorrowingLimit bounds what the queue may use beyond Nominal (nil:
	// as much as the cohort lends).
	BorrowingLimit *int64
	// LendingLimit bounds how much of Nominal the cohort may borrow
	// (nil: all of it).
	LendingLimit *int64
}

// ReclaimPolicy says which borrowers a queue's waiting gang holds back.
type ReclaimPolicy string

// Reclaim policies, as Kueue names them.
const (
	// ReclaimNever: the queue's gangs wait until borrowed quota comes
	// back on its own.
	ReclaimNever ReclaimPolicy = "Never"
	// ReclaimLowerPriority: borrowers of lower priority than the waiting
	// gang are held back.
	ReclaimLowerPriority ReclaimPolicy = "LowerPriority"
	// ReclaimAny: every borrower is held back.
	ReclaimAny ReclaimPolicy = "Any"
)

// DefaultQueue names the queue a Request without a Queue goes to, if it
// exists (apis/v1alpha1.DefaultQueueName).
const DefaultQueue = "default"

// queueState is one queue with dense vectors over its own resources.
type queueState struct {
	q       Queue
	names   []ResourceName // sorted
	nominal []int64
	// lend is what the cohort may borrow of nominal (0 without a cohort);
	// nominal − lend is the queue's alone.
	lend []int64
	// borrow is the borrowingLimit, -1 for none.
	borrow []int64
	// used is what the ledger's grants of the queue charge.
	used []int64
	// cohort lists the members of the queue's cohort (itself included),
	// nil without one.
	cohort []int
	weight float64
}

// queueCharge is what one worker of a gang charges to its queue.
type queueCharge struct {
	// q is the queue's index in State.queues; noQueue when none limits
	// the gang, missingQueue when it names a queue that does not exist.
	q   int
	amt []int64 // per queue resource (aligned with queueState.names)
}

const (
	noQueue      = -1
	missingQueue = -2
)

// SetQueues replaces the tenant queues. The ledger's grants are charged
// to them at once.
func (s *State) SetQueues(queues []Queue) {
	sorted := slices.Clone(queues)
	slices.SortFunc(sorted, func(a, b Queue) int { return strings.Compare(a.Name, b.Name) })
	s.queues = s.queues[:0]
	s.queueIdx = map[string]int{}
	cohorts := map[string][]int{}
	for _, q := range sorted {
		if _, dup := s.queueIdx[q.Name]; dup {
			continue
		}
		qs := &queueState{q: q, names: sortedNames(quotaNames(q.Resources)), weight: 1}
		if q.Weight > 0 {
			qs.weight = float64(q.Weight) / 1000
		}
		for _, n := range qs.names {
			r := q.Resources[n]
			lend, borrow := int64(0), int64(0)
			if q.Cohort != "" {
				lend, borrow = r.Nominal, -1
				if r.LendingLimit != nil {
					lend = min(max(*r.LendingLimit, 0), r.Nominal)
				}
				if r.BorrowingLimit != nil {
					borrow = max(*r.BorrowingLimit, 0)
				}
			}
			qs.nominal = append(qs.nominal, r.Nominal)
			qs.lend = append(qs.lend, lend)
			qs.borrow = append(qs.borrow, borrow)
		}
		qs.used = make([]int64, len(qs.names))
		s.queueIdx[q.Name] = len(s.queues)
		if q.Cohort != "" {
			cohorts[q.Cohort] = append(cohorts[q.Cohort], len(s.queues))
		}
		s.queues = append(s.queues, qs)
	}
	for _, qs := range s.queues {
		if qs.q.Cohort != "" {
			qs.cohort = cohorts[qs.q.Cohort]
		}
	}
	// Queues are limits like quotas: their version invalidates the
	// charges and never-fits verdicts cached on gangs.
	s.quotasVersion++
	for _, key := range s.grantKeys() {
		g := s.grants[key]
		s.chargeQueue(&g.gangReq, int64(len(g.workers)))
	}
}

func quotaNames(rs map[ResourceName]QueueQuota) ResourceList {
	out := make(ResourceList, len(rs))
	for n := range rs {
		out[n] = 0
	}
	return out
}

// queueName is the queue a request goes to: its own, or the default one.
func queueName(r *Request) string {
	if r.Queue != "" {
		return r.Queue
	}
	return DefaultQueue
}

// queueCharge returns what one worker of gr charges to its queue (cached
// per queue set).
func (s *State) queueCharge(gr *gangReq) *queueCharge {
	if gr.queueVersion == s.quotasVersion+1 {
		return &gr.queue
	}
	gr.queue = queueCharge{q: noQueue}
	if i, ok := s.queueIdx[queueName(&gr.req)]; ok {
		qs := s.queues[i]
		gr.queue = queueCharge{q: i, amt: make([]int64, len(qs.names))}
		for j, n := range qs.names {
			gr.queue.amt[j] = workerQueueUse(&gr.req, n)
		}
	} else if gr.req.Queue != "" {
		// A queue named but not there: the gang waits for it (it may be
		// created), rather than run unlimited.
		gr.queue.q = missingQueue
	}
	gr.queueVersion = s.quotasVersion + 1
	return &gr.queue
}

// workerQueueUse is what one worker of r charges to a queue resource.
func workerQueueUse(r *Request, name ResourceName) int64 {
	if name == "pods" {
		return Milli(1)
	}
	return r.Footprint[name]
}

// chargeQueue adds (k > 0) or removes (k < 0) k workers of gr to its queue.
func (s *State) chargeQueue(gr *gangReq, k int64) {
	if len(s.queues) == 0 || k == 0 {
		return
	}
	c := s.queueCharge(gr)
	if c.q < 0 {
		return
	}
	qs := s.queues[c.q]
	for j, a := range c.amt {
		qs.used[j] += k * a
	}
}

// pool is a cohort's lendable quota of one resource and what its members
// draw on it.
func (s *State) pool(qs *queueState, name ResourceName) (capacity, drawn int64) {
	for _, m := range qs.cohort {
		ms := s.queues[m]
		j, ok := slices.BinarySearch(ms.names, name)
		if !ok {
			continue
		}
		capacity += ms.lend[j]
		drawn += max(0, ms.used[j]-(ms.nominal[j]-ms.lend[j]))
	}
	return capacity, drawn
}

// queueLeft is how much more of resource j the queue may use now: its
// own unlent quota, then the cohort pool's slack, within its borrowing
// limit.
func (s *State) queueLeft(qs *queueState, j int) int64 {
	guaranteed := qs.nominal[j] - qs.lend[j]
	left := max(0, guaranteed-qs.used[j])
	if qs.cohort != nil {
		capacity, drawn := s.pool(qs, qs.names[j])
		left += max(0, capacity-drawn)
	}
	if qs.borrow[j] >= 0 {
		left = min(left, max(0, qs.nominal[j]+qs.borrow[j]-qs.used[j]))
	}
	return left
}

// queueMax is the most of resource j the queue could ever hold: its
// nominal quota plus all its cohort lends, within its borrowing limit.
func (s *State) queueMax(qs *queueState, j int) int64 {
	most := qs.nominal[j]
	if qs.cohort != nil {
		capacity, _ := s.pool(qs, qs.names[j])
		most += capacity - qs.lend[j]
	}
	if qs.borrow[j] >= 0 {
		most = min(most, qs.nominal[j]+qs.borrow[j])
	}
	return most
}

// wouldBorrow reports whether admitting gr at min would take its queue
// above its nominal quota of some resource (onto what its cohort lends).
func (s *State) wouldBorrow(gr *gangReq) bool {
	if len(s.queues) == 0 {
		return false
	}
	c := s.queueCharge(gr)
	if c.q < 0 {
		return false
	}
	qs := s.queues[c.q]
	for j, amt := range c.amt {
		if qs.used[j]+int64(gr.req.Min)*amt > qs.nominal[j] {
			return true
		}
	}
	return false
}

// queueShortfall is the resource that keeps a gang's queue from
// admitting it, with the numbers.
type queueShortfall struct {
	qs         *queueState
	j          int
	left, need int64
}

// queueRoom is how many more workers of gr its queue admits (capped at
// limit), and, when that is fewer than limit, the first resource short.
func (s *State) queueRoom(gr *gangReq, limit int64) (int64, *queueShortfall) {
	if len(s.queues) == 0 {
		return limit, nil
	}
	c := s.queueCharge(gr)
	if c.q < 0 {
		return limit, nil
	}
	qs := s.queues[c.q]
	room := limit
	var short *queueShortfall
	for j, a := range c.amt {
		if a == 0 {
			continue
		}
		left := s.queueLeft(qs, j)
		if k := left / a; k < limit {
			room = min(room, k)
			if short == nil {
				short = &queueShortfall{qs: qs, j: j, left: left, need: limit * a}
			}
		}
	}
	return room, short
}

// queueInfeasibility says why gr's queue could never admit its Min
// workers at once (more than nominal plus all it may borrow), or "".
func (s *State) queueInfeasibility(gr *gangReq) string {
	if len(s.queues) == 0 {
		return ""
	}
	c := s.queueCharge(gr)
	if c.q < 0 {
		return ""
	}
	qs := s.queues[c.q]
	for j, a := range c.amt {
		need := int64(gr.req.Min) * a
		most := s.queueMax(qs, j)
		if need <= most {
			continue
		}
		n := qs.names[j]
		how := "its nominal quota"
		switch {
		case qs.cohort != nil && qs.borrow[j] >= 0:
			how = fmt.Sprintf("nominal %s, borrowingLimit %s", FormatAmount(n, qs.nominal[j]), FormatAmount(n, qs.borrow[j]))
		case qs.cohort != nil:
			how = fmt.Sprintf("nominal %s and all its cohort %s lends", FormatAmount(n, qs.nominal[j]), qs.q.Cohort)
		}
		return fmt.Sprintf("queue %s can hold at most %s %s (%s); the gang needs %s at once",
			qs.q.Name, FormatAmount(n, most), n, how, FormatAmount(n, need))
	}
	return ""
}

// QueueShortfall is the queue a waiting gang waits for, with the numbers.
type QueueShortfall struct {
	Queue, Cohort string
	// Missing: the gang names a queue that does not exist.
	Missing  bool
	Resource ResourceName
	// Left is what the queue may add now (its unused nominal quota and
	// what its cohort lends, within its borrowing limit); Need is what
	// the gang's Min workers charge at once; Nominal and Used are the
	// queue's.
	Left, Need, Nominal, Used int64
	// HeldFor, if set, is an older gang of the queue that waits for the
	// queue's quota and has waited past the starvation bound: nothing
	// behind it in the queue is admitted.
	HeldFor *GangKey
	// ReclaimFor, if set, is a gang of another queue of the cohort that
	// waits for its own nominal quota, which this queue's cohort has
	// borrowed: nothing is admitted on borrowed quota until it is back.
	ReclaimFor *GangKey
	// ReclaimQueue is ReclaimFor's queue.
	ReclaimQueue string
	// Reclaiming: the gang waits for its queue's own nominal quota, which
	// the cohort borrowed, and its queue's policy takes it back: no other
	// queue's gang is admitted on it until it is back.
	Reclaiming bool
}

func (q *queueShortfall) export() *QueueShortfall {
	return &QueueShortfall{
		Queue: q.qs.q.Name, Cohort: q.qs.q.Cohort, Resource: q.qs.names[q.j],
		Left: q.left, Need: q.need, Nominal: q.qs.nominal[q.j], Used: q.qs.used[q.j],
	}
}

func (q *QueueShortfall) message() string {
	n := q.Resource
	switch {
	case q.Missing:
		return fmt.Sprintf("queue %s does not exist; the gang waits until a TenantQueue of that name is created", q.Queue)
	case q.HeldFor != nil:
		return fmt.Sprintf("queue %s is held for %s, which has waited past its starvation bound",
			q.Queue, q.HeldFor.Pipeline+"/"+q.HeldFor.Phase)
	case q.ReclaimFor != nil:
		return fmt.Sprintf("queue %s would borrow %s of cohort %s, which queue %s is reclaiming for %s (it waits for its nominal quota); the gang needs %s, %s of its nominal %s in use",
			q.Queue, n, q.Cohort, q.ReclaimQueue, q.ReclaimFor.Pipeline+"/"+q.ReclaimFor.Phase,
			FormatAmount(n, q.Need), FormatAmount(n, q.Used), FormatAmount(n, q.Nominal))
	case q.Cohort != "":
		msg := fmt.Sprintf("queue %s allows %s more %s (nominal %s, %s in use, with what cohort %s lends now); the gang needs %s",
			q.Queue, FormatAmount(n, q.Left), n, FormatAmount(n, q.Nominal), FormatAmount(n, q.Used), q.Cohort, FormatAmount(n, q.Need))
		if q.Reclaiming {
			msg += "; reclaiming the nominal quota the cohort borrowed: no other queue's gang is admitted on it until it is back"
		}
		return msg
	}
	return fmt.Sprintf("queue %s allows %s more %s (nominal %s, %s in use); the gang needs %s",
		q.Queue, FormatAmount(n, q.Left), n, FormatAmount(n, q.Nominal), FormatAmount(n, q.Used), FormatAmount(n, q.Need))
}

// share is the queue's fair-sharing share: its dominant resource's use
// over nominal, divided by its weight. A queue with no nominal quota of a
// resource it uses has an infinite share: it is entitled to nothing.
func (qs *queueState) share() float64 {
	var dom float64
	for j, u := range qs.used {
		if u <= 0 {
			continue
		}
		if qs.nominal[j] <= 0 {
			return math.Inf(1)
		}
		dom = max(dom, float64(u)/float64(qs.nominal[j]))
	}
	return dom / qs.weight
}

// queueWalk yields a cycle's queued gangs in order across queues: each
// time the next gang of the queue with the lowest share, ties (and gangs
// no queue limits, share 0) in queue order. Without queues it is the
// queue order itself.
type queueWalk struct {
	s *State
	// order is the whole queue, without queues.
	order []*gangReq
	pos   int
	// buckets hold each queue's gangs in queue order; bucket i+1 is
	// queue i's, bucket 0 the gangs no queue limits.
	buckets [][]*gangReq
	cursor  []int
}

func (s *State) newQueueWalk() *queueWalk {
	w := &queueWalk{s: s}
	if len(s.queues) == 0 {
		w.order = s.order
		return w
	}
	w.buckets = make([][]*gangReq, len(s.queues)+1)
	w.cursor = make([]int, len(s.queues)+1)
	for _, gr := range s.order {
		if gr.removed {
			continue
		}
		b := s.queueCharge(gr).q + 1
		if b < 0 {
			b = 0 // a missing queue: it waits, in queue order
		}
		w.buckets[b] = append(w.buckets[b], gr)
	}
	return w
}

// next returns the next gang, or nil at the end.
func (w *queueWalk) next() *gangReq {
	if w.buckets == nil {
		if w.pos >= len(w.order) {
			return nil
		}
		w.pos++
		return w.order[w.pos-1]
	}
	best, bestShare := -1, 0.0
	for b, list := range w.buckets {
		if w.cursor[b] >= len(list) {
			continue
		}
		sh := 0.0
		if b > 0 {
			sh = w.s.queues[b-1].share()
		}
		if best < 0 || cmp.Or(cmp.Compare(sh, bestShare), compareQueue(&list[w.cursor[b]].req, &w.buckets[best][w.cursor[best]].req)) < 0 {
			best, bestShare = b, sh
		}
	}
	if best < 0 {
		return nil
	}
	w.cursor[best]++
	return w.buckets[best][w.cursor[best]-1]
}

// reclaims holds, per cohort and resource, each lender's gang that waits
// for its own nominal quota while the cohort has borrowed it (one per
// queue, the first in queue order): no other queue of the cohort is
// admitted on borrowed quota of that resource until it is back (reclaim
// at phase boundaries). Every lender keeps its claim: with one claim per
// resource, two queues that each wait for quota the other borrowed would
// see only one of them held back, and the other's borrowing could take
// back what a preemption freed.
type reclaims map[string]map[ResourceName][]*reclaimer

type reclaimer struct {
	gr *gangReq
	qs *queueState
	// lowerHeld is set for a LowerPriority reclaimer past its grace
	// period (its preemption runs in this cycle, after the walk): the
	// queues of the cohort holding a grant of lower priority than gr that
	// charges the reclaimed resource, gangs the preemption may take.
	// heldForReclaim holds their borrowers back whatever the priority
	// (see there).
	lowerHeld map[int]bool
}

// findReclaims looks for queued gangs that their queue's nominal quota
// would admit but that the cohort's borrowing keeps out, of queues whose
// policy reclaims. The first such gang in queue order claims each
// resource it is short of. A gang that gangs were preempted for keeps
// its claim while the quota is free, until it is admitted: else a
// borrower's requeued gang, older or of a queue with a lower share,
// could take the freed quota back in the next cycle's walk, and the
// preemption repeat forever.
func (s *State) findReclaims(now time.Time) reclaims {
	var out reclaims
	if len(s.queues) == 0 {
		return nil
	}
	kept := map[keptKey]int64{}
	for _, gr := range s.order {
		if gr.removed || now.Before(gr.req.NotBefore) {
			continue
		}
		c := s.queueCharge(gr)
		if c.q < 0 {
			continue
		}
		qs := s.queues[c.q]
		if qs.cohort == nil || qs.q.Reclaim == "" || qs.q.Reclaim == ReclaimNever {
			continue
		}
		for j, a := range c.amt {
			need := int64(gr.req.Min) * a
			if a == 0 || (s.queueLeft(qs, j) >= need && !gr.nominated) {
				continue // not short (nor preempted for)
			}
			n := qs.names[j]
			byRes := out[qs.q.Cohort]
			if slices.ContainsFunc(byRes[n], func(r *reclaimer) bool { return r.qs == qs }) {
				continue // the queue's first such gang reclaims for it
			}
			if qs.used[j]+need > qs.nominal[j] && s.keptOwn(gr, qs, j, kept)+need > qs.nominal[j] {
				continue // short of more than its own
			}
			if out == nil {
				out = reclaims{}
			}
			if byRes == nil {
				byRes = map[ResourceName][]*reclaimer{}
				out[qs.q.Cohort] = byRes
			}
			r := &reclaimer{gr: gr, qs: qs}
			if qs.q.Reclaim == ReclaimLowerPriority && qs.q.ReclaimGrace != nil && now.Sub(gr.req.Queued) >= *qs.q.ReclaimGrace {
				r.lowerHeld = s.lowerHeld(gr, qs, n)
			}
			byRes[n] = append(byRes[n], r)
		}
	}
	return out
}

// lowerHeld returns the queues of lender qs's cohort, other than qs,
// that hold a grant of lower priority than gr charging resource n: what
// a LowerPriority preemption for gr may take (cohortBorrower), once the
// queue borrows.
func (s *State) lowerHeld(gr *gangReq, qs *queueState, n ResourceName) map[int]bool {
	var out map[int]bool
	self := s.queueIdx[qs.q.Name]
	for key, g := range s.grants {
		if g.req.Priority >= gr.req.Priority {
			continue
		}
		if _, releasing := s.pendingRelease[key]; releasing {
			continue
		}
		vc := s.queueCharge(&g.gangReq)
		if vc.q < 0 || vc.q == self || out[vc.q] {
			continue
		}
		vq := s.queues[vc.q]
		if vq.q.Cohort != qs.q.Cohort {
			continue
		}
		if j, ok := slices.BinarySearch(vq.names, n); ok && vc.amt[j] > 0 {
			if out == nil {
				out = map[int]bool{}
			}
			out[vc.q] = true
		}
	}
	return out
}

// heldForReclaim reports the reclaimer that keeps k more workers of gr
// off borrowed quota: gr's queue is in a reclaiming cohort, another queue
// reclaims a resource gr would take beyond its own nominal quota, and the
// reclaimer's policy covers gr (Any, or LowerPriority and gr's priority
// is lower).
//
// A LowerPriority reclaimer past its grace period also holds back gangs
// of its priority or above whose queue holds a gang of lower priority
// (reclaimer.lowerHeld). The walk runs before the preemption, and a gang
// granted in a cycle is never preempted in it: quota the walk lent such a
// gang, the same cycle's preemption would take back from its queue's
// lower-priority gang instead, one that was within its queue's nominal
// quota until then. The reclaim would then take back more than the queue
// had borrowed when the cycle began, swapping one of its gangs for
// another (a preemption within the queue that its withinQueue policy
// never made), and preempt a whole gang where what the cohort borrowed
// before (elastic surplus) might have covered it. Within the grace
// period nothing is preempted, and equal priorities borrow as before.
func (s *State) heldForReclaim(gr *gangReq, k int64, rc reclaims) (*reclaimer, int) {
	if len(rc) == 0 {
		return nil, 0
	}
	c := s.queueCharge(gr)
	if c.q < 0 {
		return nil, 0
	}
	qs := s.queues[c.q]
	byRes := rc[qs.q.Cohort]
	if byRes == nil {
		return nil, 0
	}
	for j, a := range c.amt {
		if a == 0 || qs.used[j]+k*a <= qs.nominal[j] {
			continue
		}
		for _, r := range byRes[qs.names[j]] {
			if r.qs == qs || (r.qs.q.Reclaim == ReclaimLowerPriority && gr.req.Priority >= r.gr.req.Priority && !r.lowerHeld[c.q]) {
				continue
			}
			return r, j
		}
	}
	return nil, 0
}

// queueWait checks gr against its queue before placement: it returns the
// Wait when the queue does not exist, does not admit gr's Min workers
// now, is held for an older gang past its starvation bound, or would
// lend gr quota that a lender is reclaiming. A gang its queue does not
// admit becomes the queue's head if it has none.
func (s *State) queueWait(gr *gangReq, now time.Time, heads map[int]*gangReq, rc reclaims) (Wait, bool) {
	if len(s.queues) == 0 {
		return Wait{}, false
	}
	c := s.queueCharge(gr)
	if c.q == noQueue {
		return Wait{}, false
	}
	w := Wait{Gang: gr.req.Gang, Reason: WaitQueue, Min: gr.req.Min, Footprint: gr.req.Footprint}
	if c.q == missingQueue {
		w.Queue = &QueueShortfall{Queue: gr.req.Queue, Missing: true}
		return w, true
	}
	qs := s.queues[c.q]
	if h := heads[c.q]; h != nil && h != gr && now.Sub(h.req.Queued) >= s.cfg.StarvationBound && !s.wouldBorrow(h) {
		held := h.req.Gang
		w.Queue = &QueueShortfall{Queue: qs.q.Name, Cohort: qs.q.Cohort, HeldFor: &held}
		return w, true
	}
	if r, j := s.heldForReclaim(gr, int64(gr.req.Min), rc); r != nil {
		key := r.gr.req.Gang
		w.Queue = &QueueShortfall{
			Queue: qs.q.Name, Cohort: qs.q.Cohort, Resource: qs.names[j],
			Need: int64(gr.req.Min) * c.amt[j], Nominal: qs.nominal[j], Used: qs.used[j],
			ReclaimFor: &key, ReclaimQueue: r.qs.q.Name,
		}
		return w, true
	}
	room, short := s.queueRoom(gr, int64(gr.req.Min))
	if room >= int64(gr.req.Min) {
		return Wait{}, false
	}
	if heads[c.q] == nil {
		heads[c.q] = gr
	}
	w.Queue = short.export()
	if byRes := rc[qs.q.Cohort]; byRes != nil {
		if slices.ContainsFunc(byRes[w.Queue.Resource], func(r *reclaimer) bool { return r.gr == gr }) {
			w.Queue.Reclaiming = true
		}
	}
	return w, true
}

// behindQueueHead reports whether g's queue has a waiting head ahead of g
// in queue order.
func (s *State) behindQueueHead(g *gangReq, heads map[int]*gangReq) bool {
	c := s.queueCharge(g)
	if c.q < 0 {
		return false
	}
	h := heads[c.q]
	return h != nil && compareQueue(&h.req, &g.req) < 0
}

// QueueUsage is one queue's figures after a cycle.
type QueueUsage struct {
	Name string
	// Nominal, Used and Borrowed (use beyond nominal) per resource the
	// queue names.
	Nominal, Used, Borrowed ResourceList
	// Admitted counts the queue's gangs holding a grant; Pending its
	// gangs waiting for a first grant.
	Admitted, Pending int
}

// queueUsage reports every queue's figures, in name order.
func (s *State) queueUsage() []QueueUsage {
	if len(s.queues) == 0 {
		return nil
	}
	out := make([]QueueUsage, len(s.queues))
	for i, qs := range s.queues {
		u := QueueUsage{Name: qs.q.Name, Nominal: ResourceList{}, Used: ResourceList{}, Borrowed: ResourceList{}}
		for j, n := range qs.names {
			u.Nominal[n] = qs.nominal[j]
			u.Used[n] = qs.used[j]
			if b := qs.used[j] - qs.nominal[j]; b > 0 {
				u.Borrowed[n] = b
			}
		}
		out[i] = u
	}
	for _, g := range s.grants {
		if c := s.queueCharge(&g.gangReq); c.q >= 0 {
			out[c.q].Admitted++
		}
	}
	for _, gr := range s.queue {
		if c := s.queueCharge(gr); c.q >= 0 {
			out[c.q].Pending++
		}
	}
	return out
}

// QueueUsed returns, per queue, what its grants charge per resource; for
// tests and the simulator's checks.
func (s *State) QueueUsed() map[string]ResourceList {
	out := map[string]ResourceList{}
	for _, qs := range s.queues {
		rl := ResourceList{}
		for j, n := range qs.names {
			rl[n] = qs.used[j]
		}
		out[qs.q.Name] = rl
	}
	return out
}

// keptOwn is what of resource j queue qs uses that its withinQueue
// policy may not preempt for gr: all of its use without one; else less
// its gangs withinQueueAllows gr to preempt. A gang that would fit within
// its queue's nominal quota once those are preempted reclaims from the
// cohort's borrowers too, in the same preemption (borrowerOrLower), as
// Kueue's do. It walks the grants, so findReclaims asks only for a gang
// its queue's whole use would keep out, and under LowerPriority, where
// the answer depends on gr's priority alone, keeps it per priority in
// memo for the cycle.
func (s *State) keptOwn(gr *gangReq, qs *queueState, j int, memo map[keptKey]int64) int64 {
	kept := qs.used[j]
	if qs.q.WithinQueue == "" || qs.q.WithinQueue == ReclaimNever {
		return kept
	}
	self := s.queueIdx[qs.q.Name]
	key := keptKey{q: self, j: j, priority: gr.req.Priority}
	if v, ok := memo[key]; ok && qs.q.WithinQueue == ReclaimLowerPriority {
		return v
	}
	for gk, g := range s.grants {
		if _, releasing := s.pendingRelease[gk]; releasing {
			continue
		}
		if vc := s.queueCharge(&g.gangReq); vc.q == self && withinQueueAllows(qs.q.WithinQueue, &gr.req, &g.req) {
			kept -= int64(len(g.workers)) * vc.amt[j]
		}
	}
	if qs.q.WithinQueue == ReclaimLowerPriority {
		memo[key] = kept
	}
	return kept
}

// keptKey is keptOwn's memo key: a queue, a resource of it, a priority.
type keptKey struct {
	q, j     int
	priority int32
}
