package engine

// Placement heuristic
//
// A gang of k workers goes onto as few nodes as possible, and leaves whole
// (empty) nodes for the large gangs that need them:
//
//  1. If one node can hold all k, use the node with the SMALLEST room that
//     still holds k (best fit). A partly used node has less room than an
//     empty one, so small gangs fill holes instead of breaking whole nodes.
//  2. Otherwise take nodes with the MOST room first (fewest nodes for the
//     gang, which is what a ring all-reduce wants), and for the remainder
//     that is left once it is smaller than the biggest room, go back to
//     best fit.
//
// Room is counted in whole workers (the minimum over resources of free /
// per-worker need), so any mix of resources works. Whether a gang fits at
// all is exact: k workers fit iff the rooms of the allowed nodes sum to at
// least k, because workers of one gang are identical.

// maxRoom bounds a node's room in workers (a worker with no requests fits
// anywhere any number of times).
const maxRoom = 1 << 30

// placement is the outcome of one placement attempt.
type placement struct {
	// nodes[i] is the node index of the i-th placed worker.
	nodes []int32
	// total is the sum of rooms over the allowed nodes (capped per node).
	total int64
}

// place tries to place up to want workers of gr, and at least atLeast, on
// the class's nodes that are not fenced. It does not change the State.
func (s *State) place(gr *gangReq, c *nodeClass, want, atLeast int32, fenced []bool) placement {
	if want <= 0 || !s.mayFit(gr, atLeast) {
		return placement{}
	}
	if gr.req.Topology != nil {
		return s.placeTopo(gr, c, want, atLeast, fenced)
	}
	caps := s.capBuf[:0]
	var total int64
	best := -1 // position in c.nodes of the best single node
	var bestCap int64
	limit := int64(want)
	blocked := s.portBlocked(gr)
	for pos, i := range c.nodes {
		if fenced != nil && fenced[i] {
			caps = append(caps, 0)
			continue
		}
		// Room is counted uncapped so best fit can tell a snug node from
		// a roomy one; caps and the total are capped at want.
		room := capOf(s.nodes[i].free, gr.fp, maxRoom)
		if blocked != nil {
			room = portRoom(gr, blocked, i, room)
		}
		k := min(room, limit)
		caps = append(caps, int32(k))
		total += k
		if room >= limit && (best < 0 || snugger(room, bestCap, gr.req.Spread)) {
			best, bestCap = pos, room
		}
	}
	s.capBuf = caps
	p := placement{total: total}
	if total < int64(atLeast) {
		return p
	}
	n := want
	if total < int64(want) {
		n = int32(total)
	}
	p.nodes = make([]int32, 0, n)
	switch {
	case best >= 0:
		for range n {
			p.nodes = append(p.nodes, c.nodes[best])
		}
	case n == int32(total):
		// Everything that fits is needed: take every room.
		for pos, k := range caps {
			for range k {
				p.nodes = append(p.nodes, c.nodes[pos])
			}
		}
	default:
		p.nodes = s.packLargestFirst(c, caps, n, p.nodes)
	}
	return p
}

// snugger reports whether a node with room r beats the best so far, of
// room best, for a gang one node can hold: the smaller room (best fit),
// or with spread (Request.Spread) the larger.
func snugger(r, best int64, spread bool) bool {
	if spread {
		return r > best
	}
	return r < best
}

// packLargestFirst places n workers when no single node holds them all:
// largest rooms first, best fit for the remainder. caps are all < n here.
func (s *State) packLargestFirst(c *nodeClass, caps []int32, n int32, out []int32) []int32 {
	// Bucket positions by room: rooms are small integers (< n), so a
	// counting sort beats a comparison sort and keeps name order within a
	// bucket, which makes the result deterministic.
	buckets := make([][]int32, n)
	for pos, k := range caps {
		if k > 0 {
			buckets[k] = append(buckets[k], int32(pos))
		}
	}
	next := make([]int, n) // next unused entry per bucket
	top := n - 1
	remaining := n
	for remaining > 0 {
		// Best fit: the smallest room that holds the whole remainder.
		picked := int32(-1)
		for k := remaining; k < n; k++ {
			if next[k] < len(buckets[k]) {
				picked = k
				break
			}
		}
		take := remaining
		if picked < 0 {
			for top > 0 && next[top] >= len(buckets[top]) {
				top--
			}
			picked = top
			take = picked
		}
		pos := buckets[picked][next[picked]]
		next[picked]++
		for range take {
			out = append(out, c.nodes[pos])
		}
		remaining -= take
	}
	return out
}

// mayFit is a cheap necessary condition: the cluster's total free capacity
// holds atLeast workers. Once the cluster is full it rejects a gang in
// O(resources) instead of a scan of every node.
func (s *State) mayFit(gr *gangReq, atLeast int32) bool {
	for _, f := range gr.fp {
		if s.totalFree[f.dim] < int64(atLeast)*f.amt {
			return false
		}
	}
	return true
}

// take charges workers on nodes to a grant (new or growing).
func (s *State) take(g *grantState, nodes []int32) {
	for _, i := range nodes {
		n := s.nodes[i]
		n.grantCount++
		for _, f := range g.fp {
			n.free[f.dim] -= f.amt
			s.totalFree[f.dim] -= f.amt
		}
	}
	g.workers = append(g.workers, nodes...)
	s.charge(&g.gangReq, int64(len(nodes)))
}

// give returns the top k workers of a grant to their nodes.
func (s *State) give(g *grantState, k int) []int32 {
	removed := s.unreserve(g, k)
	for _, w := range removed {
		if w < 0 {
			continue
		}
		for _, f := range g.fp {
			s.totalFree[f.dim] += f.amt
		}
	}
	return removed
}
