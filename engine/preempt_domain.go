package engine

import (
	"fmt"
	"math"
	"slices"
)

// Preemption that frees one topology domain (see "Topology" at the top
// of preempt.go): when the victims chosen by quota alone would not let a
// gang with a topology in, the same choice is made once per domain of
// its level, among the candidates running there, until its quota is
// covered and its Min workers fit in that domain; the cheapest domain's
// victims are taken.

// byDomain reports whether victims may be sought in one domain for gr
// once those chosen by quota alone do not let it in: it has a topology
// at one of the cluster's levels. A required gang must run in one
// domain; a preferred one that does not fit even spread is given the
// same search, since one domain is where its placement puts it first.
func byDomain(gr *gangReq) bool {
	t := gr.req.Topology
	return t != nil && t.Level >= 0
}

// domainVictims is what freeing one domain would take, and its cost.
type domainVictims struct {
	dom   int32
	taken []takenVictim
	cost  victimCost
}

// victimCost is what taking a set of victims costs (cheaper compares).
type victimCost struct {
	// priority is the highest priority among the gangs preempted whole;
	// math.MinInt32 when only surplus is shrunk (no gang stops).
	priority int32
	// amount is what the victims give up of each resource gr is short
	// of, in name order: a whole gang all its workers', a shrunk one its
	// shrunk workers'.
	amount []int64
	// gangs is the number of gangs preempted whole.
	gangs int
}

// cheaper reports whether c costs less than d: the lower highest
// priority first, then the smaller amount (fewest GPUs), then fewer
// gangs; on a tie the domain met first (name order) stays. Priority
// comes first because it does within a domain too: the engine preempts
// a lower-priority gang before a higher one whatever their sizes
// (pickWhole), and comparing domains by size first would stop a
// higher-priority gang where a lower-priority set in another domain
// would do. Among equal priorities the fewest GPUs lose the least work.
func (c victimCost) cheaper(d victimCost) bool {
	if c.priority != d.priority {
		return c.priority < d.priority
	}
	if r := slices.Compare(c.amount, d.amount); r != 0 {
		return r < 0
	}
	return c.gangs < d.gangs
}

// inOneDomain chooses, for each domain of gr's level, from the
// candidates (w.cands, in candidate order) with a worker there, and
// returns the cheapest domain's choice and a sentence the victims'
// messages end with; nil if no domain's candidates let gr in. The
// what-if is left undone, its candidates as they were.
func (w *whatIf) inOneDomain(short map[ResourceName]bool) ([]takenVictim, string) {
	s, t := w.s, w.gr.req.Topology
	all := w.cands
	defer func() { w.cands, w.outside = all, nil }()
	c := s.class(w.gr)
	w.outside = make([]bool, len(s.nodes))
	for i := range w.outside {
		w.outside[i] = true
	}
	names := make([]ResourceName, 0, len(short))
	for n := range short {
		names = append(names, n)
	}
	slices.Sort(names)
	var best *domainVictims
	for _, d := range s.groupsOf(c, t.Level) {
		if dv, ok := w.freeDomain(all, c, d, names); ok && (best == nil || dv.cost.cheaper(best.cost)) {
			best = &dv
		}
	}
	if best == nil {
		return nil, ""
	}
	return best.taken, fmt.Sprintf("; to make room for it in %s %s", t.LevelName, s.domNames[best.dom])
}

// freeDomain is the what-if confined to domain d (the positions of its
// nodes in c.nodes): the candidates among all with a worker in it,
// taken as byQuota takes them, until gr's quota is covered and its Min
// workers fit in d. A candidate that also runs elsewhere frees only its
// workers in d for gr, but is preempted whole. False if even all of
// them would not let gr in.
func (w *whatIf) freeDomain(all []*victim, c *nodeClass, d domGroup, names []ResourceName) (domainVictims, bool) {
	w.cands = w.s.victimsIn(all, w.gr.req.Topology.Level, d.dom)
	if len(w.cands) == 0 {
		return domainVictims{}, false
	}
	for _, pos := range d.pos {
		w.outside[c.nodes[pos]] = false
	}
	defer func() {
		for _, pos := range d.pos {
			w.outside[c.nodes[pos]] = true
		}
	}()
	// Taking every candidate whole frees the most quota and room: if
	// that does not let gr in, no choice among them does.
	if !w.allLetIn() || !w.trial() {
		return domainVictims{}, false
	}
	dv := domainVictims{dom: d.dom, taken: w.taken()}
	w.undo()
	dv.cost = w.s.costOf(dv.taken, names)
	return dv, true
}

// allLetIn reports whether taking every candidate whole lets gr in.
func (w *whatIf) allLetIn() bool {
	for _, v := range w.cands {
		w.takeWhole(v)
	}
	ok := w.letsIn()
	w.undo()
	return ok
}

// victimsIn are the candidates with a worker in domain dom of level l,
// in candidate order.
func (s *State) victimsIn(cands []*victim, l int, dom int32) []*victim {
	var out []*victim
	for _, v := range cands {
		if slices.ContainsFunc(v.g.workers, func(i int32) bool { return i >= 0 && s.domOf(i, l) == dom }) {
			out = append(out, v)
		}
	}
	return out
}

// costOf is what taking taken costs; names are the resources the
// waiting gang is short of, in name order.
func (s *State) costOf(taken []takenVictim, names []ResourceName) victimCost {
	c := victimCost{priority: math.MinInt32, amount: make([]int64, len(names))}
	for _, t := range taken {
		n := int64(t.shrunk)
		if t.whole {
			n = int64(len(t.v.g.workers))
			c.gangs++
			c.priority = max(c.priority, t.v.g.req.Priority)
		}
		vc := s.queueCharge(&t.v.g.gangReq)
		vq := s.queues[vc.q]
		for k, name := range names {
			if j, ok := slices.BinarySearch(vq.names, name); ok {
				c.amount[k] += n * vc.amt[j]
			}
		}
	}
	return c
}
