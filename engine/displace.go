package engine

import (
	"fmt"
	"slices"
	"strings"
)

// Races with pods phasegang does not manage
//
// A grant is a promise the cluster does not know about: between the grant
// and kube-scheduler binding the pinned pods, another pod can land on a
// granted node (kube-scheduler places it there, or it names the node in
// spec.nodeName). The snapshot shows it: the node's Used plus its grants
// exceed its Allocatable. Its unbound workers then wait forever, or until
// the start timeout, with the gang half bound.
//
// So each cycle, right after the releases, displace:
//
//  1. lifts, on every node whose pods that stay (Used minus Leaving) and
//     grants exceed its allocatable, just enough unbound workers to make it
//     fit again: the youngest (or lowest-priority) gang's first, highest
//     index first. Bound workers hold their capacity for real and are never
//     lifted, so a started gang is never touched;
//  2. re-places each gang's lifted workers on nodes that fit, oldest gang
//     first, all of a gang's or none: the rest of the gang keeps its nodes
//     and pods;
//  3. releases a gang whose lifted workers do not all fit (ReleaseDisplaced):
//     the caller queues the same attempt again, as for a lost node;
//  4. moves each worker kube-scheduler refused (Grant.Refused) to another
//     node that fits it on free capacity, unless pods being deleted hold
//     what it needs on its own node (it binds once they are gone); one
//     that fits nowhere, or was moved for a refusal before, stays and is
//     reported (Plan.Refused).
//
// Overcommit caused only by leaving pods (an ended gang's pods still
// terminating) is waited out: moving would chase capacity that comes back
// by itself.

// liftedWorker is a worker taken off a node that can no longer hold it.
type liftedWorker struct {
	index int32
	from  int32 // node index
}

// displacement is one gang's workers lifted in this cycle, and why.
type displacement struct {
	g       *grantState
	workers []liftedWorker
	why     string // the first node's story
}

// displace runs the steps above; it leaves totalFree current.
func (s *State) displace(plan *Plan) {
	if len(s.movable) == 0 {
		return
	}
	ds := s.liftDisplaced()
	if len(ds) > 0 {
		s.sumFree()
	}
	for _, d := range ds {
		if !s.moveLifted(d, plan) {
			s.releaseDisplaced(d, plan)
		}
	}
	if s.moveRefused(plan) || len(ds) > 0 {
		s.sumFree()
	}
}

// liftDisplaced takes unbound workers off overcommitted nodes (step 1) and
// returns them by gang, oldest gang first.
func (s *State) liftDisplaced() []*displacement {
	type cand struct {
		g     *grantState
		index int32
	}
	byNode := map[int32][]cand{}
	for _, g := range s.movableGrants() {
		for idx := range g.unbound {
			if n := g.workers[idx]; n >= 0 {
				byNode[n] = append(byNode[n], cand{g, idx})
			}
		}
	}
	nodes := make([]int32, 0, len(byNode))
	for i := range byNode {
		nodes = append(nodes, i)
	}
	slices.Sort(nodes)
	byGang := map[*grantState]*displacement{}
	var out []*displacement
	for _, i := range nodes {
		n := s.nodes[i]
		cs := byNode[i]
		short := s.shortfall(n)
		clash := slices.ContainsFunc(cs, func(c cand) bool { return anyConflict(c.g.ports, n.ports) })
		if short == nil && !clash {
			continue
		}
		why := displacedWhy(n, short)
		if short == nil {
			var taken []HostPort
			for _, c := range cs {
				for _, p := range n.ports {
					if anyConflict(c.g.ports, []HostPort{p}) && !slices.Contains(taken, p) {
						taken = append(taken, p)
					}
				}
			}
			why = fmt.Sprintf("node %s can no longer hold its reserved workers: a pod phasegang does not manage binds host port %s there", n.node.Name, portsText(normalizePorts(taken)))
		}
		slices.SortFunc(cs, func(a, b cand) int {
			if c := compareQueue(&b.g.req, &a.g.req); c != 0 {
				return c // youngest or lowest-priority gang first
			}
			return int(b.index - a.index)
		})
		for _, c := range cs {
			// A worker whose host port another pod binds there cannot
			// bind at all; the others go only while the node is short.
			if !anyConflict(c.g.ports, n.ports) && (!overcommitted(n) || !relieves(n, c.g.fp)) {
				continue
			}
			s.liftWorker(c.g, c.index)
			d := byGang[c.g]
			if d == nil {
				d = &displacement{g: c.g, why: why}
				byGang[c.g] = d
				out = append(out, d)
			}
			d.workers = append(d.workers, liftedWorker{index: c.index, from: i})
		}
	}
	slices.SortFunc(out, func(a, b *displacement) int { return compareQueue(&a.g.req, &b.g.req) })
	for _, d := range out {
		slices.SortFunc(d.workers, func(a, b liftedWorker) int { return int(a.index - b.index) })
	}
	return out
}

// moveLifted re-places a gang's lifted workers, all or none (step 2).
func (s *State) moveLifted(d *displacement, plan *Plan) bool {
	k := int32(len(d.workers))
	p := s.place(&d.g.gangReq, s.class(&d.g.gangReq), k, k, nil)
	if p.nodes == nil {
		return false
	}
	mv := Move{Gang: d.g.req.Gang, Reason: MoveDisplaced}
	for j, w := range d.workers {
		s.putWorker(d.g, w.index, p.nodes[j])
		delete(d.g.refused, w.index)
		mv.Workers = append(mv.Workers, MovedWorker{Index: w.index, From: s.nodes[w.from].node.Name, To: s.nodes[p.nodes[j]].node.Name})
	}
	mv.Message = d.why + "; moved " + movedText(mv.Workers)
	plan.Moves = append(plan.Moves, mv)
	return true
}

// releaseDisplaced drops a gang whose lifted workers fit nowhere (step 3).
func (s *State) releaseDisplaced(d *displacement, plan *Plan) {
	key := d.g.req.Gang
	s.unreserve(d.g, len(d.g.workers)) // lifted workers are at -1: skipped
	s.dropGrant(key)
	idx := make([]int32, len(d.workers))
	for i, w := range d.workers {
		idx[i] = w.index
	}
	plan.Releases = append(plan.Releases, Release{Gang: key, Reason: ReleaseDisplaced,
		Message: fmt.Sprintf("%s; no other node fits %s %s", d.why, plural(len(idx), "worker", "workers"), indexList(idx))})
	s.sumFree()
}

// moveRefused moves the workers kube-scheduler refused (step 4) and
// reports whether it moved any.
func (s *State) moveRefused(plan *Plan) bool {
	moved := false
	for _, g := range s.movableGrants() {
		if len(g.refused) == 0 {
			continue
		}
		idxs := make([]int32, 0, len(g.refused))
		for idx := range g.refused {
			idxs = append(idxs, idx)
		}
		slices.Sort(idxs)
		for _, idx := range idxs {
			from := g.workers[idx]
			if from < 0 || !g.unbound[idx] || s.waitsForLeaving(s.nodes[from], g.fp) {
				continue
			}
			rf := g.refused[idx]
			why := fmt.Sprintf("%s%s (%s)", RefusedMovePrefix(idx), s.nodes[from].node.Name, rf.Message)
			if rf.Moved >= maxRefusedMoves {
				plan.Refused = append(plan.Refused, Refusal{Gang: g.req.Gang, Index: idx, Node: s.nodes[from].node.Name,
					Message: why + "; it was moved for a refusal before, so it stays reserved there"})
				continue
			}
			mask := make([]bool, len(s.nodes))
			mask[from] = true
			p := s.place(&g.gangReq, s.class(&g.gangReq), 1, 1, mask)
			if p.nodes == nil {
				plan.Refused = append(plan.Refused, Refusal{Gang: g.req.Gang, Index: idx, Node: s.nodes[from].node.Name,
					Message: why + "; no other node fits it now, so it stays reserved there"})
				continue
			}
			s.liftWorker(g, idx)
			s.putWorker(g, idx, p.nodes[0])
			delete(g.refused, idx)
			w := MovedWorker{Index: idx, From: s.nodes[from].node.Name, To: s.nodes[p.nodes[0]].node.Name}
			plan.Moves = append(plan.Moves, Move{Gang: g.req.Gang, Reason: MoveRefused, Workers: []MovedWorker{w},
				Message: why + "; moved " + movedText([]MovedWorker{w})})
			moved = true
		}
	}
	return moved
}

// maxRefusedMoves bounds the moves of one refused worker (see
// RefusedWorker.Moved).
const maxRefusedMoves = 1

// RefusedMovePrefix begins the Message of a Move (and a Refusal) for
// worker index refused by kube-scheduler, followed by the node's name; a
// caller that keeps the messages (the status history) counts a worker's
// moves with it.
func RefusedMovePrefix(index int32) string {
	return fmt.Sprintf("kube-scheduler refused worker %d on node ", index)
}

// movableGrants lists the grants with unbound workers in queue order.
func (s *State) movableGrants() []*grantState {
	out := make([]*grantState, 0, len(s.movable))
	for _, g := range s.movable {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *grantState) int { return compareQueue(&a.req, &b.req) })
	return out
}

// liftWorker takes worker idx of g off its node; it sits at -1 until
// putWorker places it or the grant is released.
func (s *State) liftWorker(g *grantState, idx int32) {
	n := s.nodes[g.workers[idx]]
	n.grantCount--
	for _, f := range g.fp {
		n.free[f.dim] += f.amt
	}
	g.workers[idx] = -1
}

// putWorker places a lifted worker on node i.
func (s *State) putWorker(g *grantState, idx, i int32) {
	n := s.nodes[i]
	n.grantCount++
	for _, f := range g.fp {
		n.free[f.dim] -= f.amt
		s.totalFree[f.dim] -= f.amt
	}
	g.workers[idx] = i
}

// overcommitted reports whether the pods that stay on a node and its
// grants exceed its allocatable.
func overcommitted(n *nodeState) bool {
	for d := range n.free {
		if n.free[d]+n.leaving[d] < 0 {
			return true
		}
	}
	return false
}

// relieves reports whether lifting a worker of footprint fp lessens the
// node's overcommit (it needs a resource the node is short of).
func relieves(n *nodeState, fp []dimAmt) bool {
	for _, f := range fp {
		if n.free[f.dim]+n.leaving[f.dim] < 0 {
			return true
		}
	}
	return false
}

// waitsForLeaving reports whether pods being deleted on the node hold a
// resource a worker of footprint fp needs: a refusal there is most likely
// theirs, and ends with them.
func (s *State) waitsForLeaving(n *nodeState, fp []dimAmt) bool {
	for _, f := range fp {
		if n.leaving[f.dim] > 0 {
			return true
		}
	}
	return false
}

// shortfall is how much an overcommitted node lacks, or nil.
func (s *State) shortfall(n *nodeState) ResourceList {
	var out ResourceList
	for d := range n.free {
		if v := n.free[d] + n.leaving[d]; v < 0 {
			if out == nil {
				out = ResourceList{}
			}
			out[s.dimNames[d]] = -v
		}
	}
	return out
}

// displacedWhy tells why a node's unbound workers were lifted, naming the
// node, the likeliest taker and the numbers.
func displacedWhy(n *nodeState, short ResourceList) string {
	who := "pods phasegang does not manage took"
	if n.node.LastPod != "" {
		who = "pod " + n.node.LastPod + ", which phasegang does not manage, took"
	}
	return fmt.Sprintf("node %s can no longer hold its reserved workers: %s the capacity (short by %s)", n.node.Name, who, strings.Trim(FormatResources(short), "{}"))
}

// movedText renders moves as "worker 3 to b, worker 4 to c".
func movedText(ws []MovedWorker) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = fmt.Sprintf("worker %d to %s", w.Index, w.To)
	}
	return strings.Join(parts, ", ")
}

func indexList(idx []int32) string {
	parts := make([]string, len(idx))
	for i, v := range idx {
		parts[i] = itoa(v)
	}
	return strings.Join(parts, ", ")
}
