package engine

import (
	"fmt"
	"slices"
	"strings"
)

// Topology-aware placement
//
// A gang with a Topology is placed by domain in the same pass that checks
// capacity: each node's room (in whole workers, as in place.go) is summed
// per domain, so a domain "fits" only if its nodes hold every worker
// (fragmentation-aware, never a sum of GPUs). Units are slices: a slice
// is SliceSize workers (1 without slices) that must share one domain of
// the slice level, so a slice-level domain of room R holds R/SliceSize
// slices, and a domain of the gang's level holds the sum over its
// slice-level domains.
//
//   - Required: the domain of Level that holds the gang with the least
//     room to spare (best fit, as for nodes); the gang waits if none does.
//     With Near, only the earlier phase's domain is a candidate.
//   - Preferred: the earlier phase's domain if it holds the gang; else one
//     domain (best fit); else the domain one level up that holds it with
//     the least to spare, and within it, or in the whole cluster if no
//     such domain exists, the largest domains first with best fit for the
//     remainder (fewest domains). A growing elastic grant fills its own
//     domain first.
//
// Within a chosen domain, its slice-level domains and then their nodes
// are packed the same way (best fit, else largest first), and the
// workers of one slice are emitted consecutively, so worker indices
// i*SliceSize … (i+1)*SliceSize-1 share a domain.

// domGroup is the positions (in nodeClass.nodes) of the class's nodes in
// one domain of one level.
type domGroup struct {
	dom int32
	pos []int32
}

// internDomains sets n.dom: the interned domain of each level ( -1 where
// the node's path has an empty value at that level or above).
func (s *State) internDomains(n *nodeState) {
	if len(n.node.Domain) == 0 {
		return
	}
	if s.domIdx == nil {
		s.domIdx = map[string]int32{}
	}
	n.dom = make([]int32, len(n.node.Domain))
	missing := false
	for l, v := range n.node.Domain {
		if missing = missing || v == ""; missing {
			n.dom[l] = -1
			continue
		}
		key := strings.Join(n.node.Domain[:l+1], "\x00")
		id, ok := s.domIdx[key]
		if !ok {
			id = int32(len(s.domNames))
			s.domIdx[key] = id
			s.domNames = append(s.domNames, v)
		}
		n.dom[l] = id
	}
}

// domOf is node i's domain at level l (-1: none).
func (s *State) domOf(i int32, l int) int32 {
	d := s.nodes[i].dom
	if l < 0 || l >= len(d) {
		return -1
	}
	return d[l]
}

// groupsOf groups the class's nodes by their domain at level l, in the
// order of each domain's first node (name order); cached on the class.
func (s *State) groupsOf(c *nodeClass, l int) []domGroup {
	if g, ok := c.groups[l]; ok {
		return g
	}
	var out []domGroup
	at := map[int32]int{}
	for pos, i := range c.nodes {
		d := s.domOf(i, l)
		if d < 0 {
			continue
		}
		k, ok := at[d]
		if !ok {
			k = len(out)
			at[d] = k
			out = append(out, domGroup{dom: d})
		}
		out[k].pos = append(out[k].pos, int32(pos))
	}
	if c.groups == nil {
		c.groups = map[int][]domGroup{}
	}
	c.groups[l] = out
	return out
}

// topoKey is the part of a gang's shape its Topology adds: gangs that
// differ in it fit differently. Near counts only when required (it then
// decides which domain is a candidate at all).
func topoKey(t *Topology) string {
	if t == nil {
		return ""
	}
	k := fmt.Sprintf("topo:%d:%t:%d:%d;", t.Level, t.Required, t.SliceSize, t.SliceLevel)
	if t.Required && len(t.Near) > 0 {
		k += "near:" + strings.Join(t.Near, ",") + ";"
	}
	return k
}

// sliceOf is the gang's slice size (1 without slices) and slice level.
func sliceOf(t *Topology) (int32, int) {
	if t.SliceSize <= 1 {
		return 1, t.Level
	}
	return t.SliceSize, max(t.SliceLevel, t.Level)
}

// topoDomain is one candidate domain of the gang's level: one of its
// nodes (for the domains above it) and its slice-level groups (indices
// into topoLayout.groups).
type topoDomain struct {
	dom    int32
	node   int32
	groups []int
}

// topoLayout is a class's nodes grouped by slice level and by the gang's
// level; it depends only on the nodes, so the class caches it.
type topoLayout struct {
	groups []domGroup
	doms   []topoDomain
}

// topoView is what placeTopo computed of one gang on the current rooms.
type topoView struct {
	*topoLayout
	size    int32
	gslices []int64 // slices per group
	slices  []int64 // slices per domain
}

// layoutOf groups the class's nodes for a gang of level l and slice
// level sl (cached on the class).
func (s *State) layoutOf(c *nodeClass, l, sl int) *topoLayout {
	key := [2]int{l, sl}
	if lay, ok := c.layouts[key]; ok {
		return lay
	}
	lay := &topoLayout{groups: s.groupsOf(c, sl)}
	at := map[int32]int{}
	for gi, g := range lay.groups {
		node := c.nodes[g.pos[0]]
		d := s.domOf(node, l)
		k, ok := at[d]
		if !ok {
			k = len(lay.doms)
			at[d] = k
			lay.doms = append(lay.doms, topoDomain{dom: d, node: node})
		}
		lay.doms[k].groups = append(lay.doms[k].groups, gi)
	}
	if c.layouts == nil {
		c.layouts = map[[2]int]*topoLayout{}
	}
	c.layouts[key] = lay
	return lay
}

// viewTopo sums rooms (caps, per position of c.nodes) into slices per
// slice-level group and per domain of the gang's level.
func (s *State) viewTopo(gr *gangReq, c *nodeClass, caps []int32) topoView {
	t := gr.req.Topology
	size, sl := sliceOf(t)
	v := topoView{topoLayout: s.layoutOf(c, t.Level, sl), size: size}
	v.gslices = grow64(&s.topoBufG, len(v.groups))
	v.slices = grow64(&s.topoBufD, len(v.doms))
	for gi, g := range v.groups {
		var room int64
		for _, pos := range g.pos {
			room += int64(caps[pos])
		}
		v.gslices[gi] = room / int64(size)
	}
	for k, d := range v.doms {
		var n int64
		for _, gi := range d.groups {
			n += v.gslices[gi]
		}
		v.slices[k] = n
	}
	return v
}

// grow64 returns (*buf)[:n], zeroed, growing the buffer if needed.
func grow64(buf *[]int64, n int) []int64 {
	if cap(*buf) < n {
		*buf = make([]int64, n)
	}
	b := (*buf)[:n]
	clear(b)
	return b
}

// placeTopo is place for a gang with a Topology.
func (s *State) placeTopo(gr *gangReq, c *nodeClass, want, atLeast int32, fenced []bool) placement {
	t := gr.req.Topology
	if t.Level < 0 || (t.SliceSize > 1 && t.SliceLevel < 0) {
		return placement{}
	}
	size, _ := sliceOf(t)
	wantS, atLeastS := int64(want/size), int64((atLeast+size-1)/size)
	if wantS == 0 || wantS < atLeastS || !s.mayFit(gr, int32(atLeastS)*size) {
		return placement{}
	}
	caps := s.roomCaps(gr, c, want, fenced)
	v := s.viewTopo(gr, c, caps)
	takes, total := s.chooseDomains(gr, &v, wantS, atLeastS)
	p := placement{total: total * int64(size)}
	if takes == nil {
		return p
	}
	p.nodes = make([]int32, 0, want)
	for k, n := range takes {
		if n > 0 {
			p.nodes = s.fillDomain(c, caps, &v, v.doms[k], n, p.nodes)
		}
	}
	return p
}

// roomCaps is each class position's room in workers (capped at want), 0
// where fenced.
func (s *State) roomCaps(gr *gangReq, c *nodeClass, want int32, fenced []bool) []int32 {
	caps := s.capBuf[:0]
	blocked := s.portBlocked(gr)
	for _, i := range c.nodes {
		if fenced != nil && fenced[i] {
			caps = append(caps, 0)
			continue
		}
		room := capOf(s.nodes[i].free, gr.fp, int64(want))
		if blocked != nil {
			room = portRoom(gr, blocked, i, room)
		}
		caps = append(caps, int32(room))
	}
	s.capBuf = caps
	return caps
}

// chooseDomains picks how many slices each of v.doms takes (nil: the gang
// does not fit) and reports the slices the rule could use at most.
func (s *State) chooseDomains(gr *gangReq, v *topoView, wantS, atLeastS int64) ([]int64, int64) {
	t := gr.req.Topology
	// Uncapped, so best fit can tell a snug domain from a roomy one; a
	// scratch buffer, changed freely here.
	counts := v.slices
	var total, largest int64
	for _, n := range counts {
		total += min(n, wantS)
		largest = max(largest, n)
	}
	anchor := s.anchorDomain(gr, v)
	if t.Required {
		if anchor >= 0 {
			for k := range counts {
				if k != anchor {
					counts[k] = 0
				}
			}
			largest = counts[anchor]
		} else if anchor == -2 {
			return nil, 0
		}
		if largest < atLeastS {
			return nil, largest
		}
		return packItems(counts, min(wantS, largest), true), largest
	}
	if total < atLeastS {
		return nil, total
	}
	n := min(wantS, total)
	if anchor >= 0 && (counts[anchor] >= n || s.growing(gr)) {
		takes := make([]int64, len(counts))
		takes[anchor] = min(counts[anchor], n)
		if rest := n - takes[anchor]; rest > 0 {
			counts[anchor] = 0
			for k, x := range packItems(counts, rest, false) {
				takes[k] += x
			}
		}
		return takes, total
	}
	return s.packPreferred(gr, v, counts, n), total
}

// packPreferred places n slices over domains with counts: one domain if
// one holds them; else within the tightest domain of the nearest level
// above that holds them all; else across the cluster, fewest domains.
func (s *State) packPreferred(gr *gangReq, v *topoView, counts []int64, n int64) []int64 {
	if slices.Max(counts) >= n {
		return packItems(counts, n, false)
	}
	level := gr.req.Topology.Level
	for up := level - 1; up >= 0; up-- {
		sums := map[int32]int64{}
		for k, d := range v.doms {
			sums[s.upDomain(d, up)] += counts[k]
		}
		best, bestSum := int32(-1), int64(0)
		for _, d := range v.doms {
			a := s.upDomain(d, up)
			if sum := sums[a]; a >= 0 && sum >= n && (best < 0 || sum < bestSum) {
				best, bestSum = a, sum
			}
		}
		if best < 0 {
			continue
		}
		within := slices.Clone(counts)
		for k, d := range v.doms {
			if s.upDomain(d, up) != best {
				within[k] = 0
			}
		}
		return packItems(within, n, false)
	}
	return packItems(counts, n, false)
}

// upDomain is the domain at level up above domain d.
func (s *State) upDomain(d topoDomain, up int) int32 { return s.domOf(d.node, up) }

// growing reports whether gr is a granted gang being grown (or its
// displaced workers moved): it fills its own domain first.
func (s *State) growing(gr *gangReq) bool {
	g, ok := s.grants[gr.req.Gang]
	return ok && &g.gangReq == gr
}

// anchorDomain is the index in v.doms of the domain the gang should go
// into: its own grant's (growth, moves), else the one holding most of the
// Near nodes. -1: none; -2: required, and that domain has no room at all
// (or left the class).
func (s *State) anchorDomain(gr *gangReq, v *topoView) int {
	t := gr.req.Topology
	var nodes []int32
	if g, ok := s.grants[gr.req.Gang]; ok && &g.gangReq == gr {
		nodes = g.workers
	} else {
		for _, name := range t.Near {
			if i, ok := s.nodeIdx[name]; ok {
				nodes = append(nodes, int32(i))
			}
		}
	}
	dom := s.majorityDomain(nodes, t.Level)
	if dom < 0 {
		if t.Required && len(t.Near) > 0 {
			return -2
		}
		return -1
	}
	for k, d := range v.doms {
		if d.dom == dom {
			return k
		}
	}
	if t.Required {
		return -2
	}
	return -1
}

// majorityDomain is the domain at level l holding most of nodes (ties: the
// first met), -1 if none has one.
func (s *State) majorityDomain(nodes []int32, l int) int32 {
	count := map[int32]int{}
	best, bestN := int32(-1), 0
	for _, i := range nodes {
		if i < 0 {
			continue
		}
		d := s.domOf(i, l)
		if d < 0 {
			continue
		}
		count[d]++
		if count[d] > bestN {
			best, bestN = d, count[d]
		}
	}
	return best
}

// fillDomain places n slices in domain d: over its slice-level groups,
// then each group's workers over its nodes, a slice's workers together.
func (s *State) fillDomain(c *nodeClass, caps []int32, v *topoView, d topoDomain, n int64, out []int32) []int32 {
	gcounts := make([]int64, len(d.groups))
	for j, gi := range d.groups {
		gcounts[j] = v.gslices[gi]
	}
	for j, k := range packItems(gcounts, n, false) {
		if k == 0 {
			continue
		}
		g := v.groups[d.groups[j]]
		ncaps := make([]int64, len(g.pos))
		for x, pos := range g.pos {
			ncaps[x] = int64(caps[pos])
		}
		for x, w := range packItems(ncaps, k*int64(v.size), false) {
			pos := g.pos[x]
			for range w {
				out = append(out, c.nodes[pos])
			}
			caps[pos] -= int32(w)
		}
	}
	return out
}

// packItems splits n units over items of capacity caps: the item with the
// least room that holds all that is left (best fit), else the largest,
// again until all are placed; one: a single item (best fit, else the
// largest). It assumes the caps sum to at least n.
func packItems(caps []int64, n int64, one bool) []int64 {
	// An item taken whole (largest first) has takes > 0: it is used.
	takes := make([]int64, len(caps))
	for n > 0 {
		best, largest := -1, -1
		for i, c := range caps {
			if takes[i] > 0 || c <= 0 {
				continue
			}
			if c >= n && (best < 0 || c < caps[best]) {
				best = i
			}
			if largest < 0 || c > caps[largest] {
				largest = i
			}
		}
		switch {
		case best >= 0:
			takes[best] += n
			return takes
		case largest < 0 || one:
			return takes
		}
		takes[largest] += caps[largest]
		n -= caps[largest]
	}
	return takes
}

// topoInfeasibility says why a gang's Topology can never be met, even on
// the empty cluster, or "" if it can: "no rack holds 16; the largest 12".
func (s *State) topoInfeasibility(gr *gangReq, c *nodeClass) string {
	t := gr.req.Topology
	if t.Level < 0 {
		return fmt.Sprintf("its topology level %s is not one of the cluster's topology levels", t.LevelName)
	}
	if t.SliceSize > 1 && t.SliceLevel < 0 {
		return fmt.Sprintf("its slice level %s is not one of the cluster's topology levels", t.SliceLevelName)
	}
	need := gr.req.Min
	caps := make([]int32, len(c.nodes))
	for pos, i := range c.nodes {
		caps[pos] = int32(portRoom(gr, nil, i, capOf(s.nodes[i].alloc, gr.fp, int64(need))))
	}
	v := s.viewTopo(gr, c, caps)
	if len(v.doms) == 0 {
		return fmt.Sprintf("none of the %d matching nodes has a value for the topology level %s (or a level above it)", len(c.nodes), t.LevelName)
	}
	k, held := bestDomain(v.slices, nil)
	what := fmt.Sprintf("%d workers of %s", need, FormatResources(s.resourceList(gr.fp)))
	if v.size > 1 {
		what += fmt.Sprintf(" in slices of %d, each within one %s", v.size, sliceName(t))
	}
	switch {
	case t.Required && held*int64(v.size) < int64(need):
		return fmt.Sprintf("needs %s in one %s, but no %s holds them even empty: the largest, %s, holds %d",
			what, t.LevelName, t.LevelName, s.domNames[v.doms[k].dom], held*int64(v.size))
	case !t.Required && v.size > 1:
		var total int64
		for _, n := range v.slices {
			total += n
		}
		if total*int64(v.size) < int64(need) {
			return fmt.Sprintf("needs %s, but the matching nodes hold %d such workers even empty", what, total*int64(v.size))
		}
	}
	return ""
}

func sliceName(t *Topology) string {
	if t.SliceLevel > t.Level {
		return t.SliceLevelName
	}
	return t.LevelName
}

// bestDomain is the index of the domain with the most slices (the first
// among equals) and its slices; only is the one candidate, if not nil.
func bestDomain(slices []int64, only *int) (int, int64) {
	if only != nil {
		return *only, slices[*only]
	}
	best := 0
	for k, n := range slices {
		if n > slices[best] {
			best = k
		}
	}
	return best, slices[best]
}

// topoWait explains a waiting gang's topology with the current rooms: the
// level that is short and its best domain's numbers ("" when topology is
// not what holds it).
func (s *State) topoWait(gr *gangReq, c *nodeClass) string {
	t := gr.req.Topology
	if t == nil || t.Level < 0 || len(c.nodes) == 0 {
		return ""
	}
	caps := s.roomCaps(gr, c, gr.req.Min, nil)
	v := s.viewTopo(gr, c, caps)
	if len(v.doms) == 0 {
		return ""
	}
	var only *int
	if t.Required {
		if a := s.anchorDomain(gr, &v); a >= 0 {
			only = &a
		} else if a == -2 {
			return fmt.Sprintf("waits for the %s its earlier phase ran in, which has no room for it now", t.LevelName)
		}
	}
	k, held := bestDomain(v.slices, only)
	room := held * int64(v.size)
	slice := ""
	if v.size > 1 {
		slice = fmt.Sprintf(" (in slices of %d within one %s)", v.size, sliceName(t))
	}
	switch {
	case only != nil:
		return fmt.Sprintf("%s %s (where its earlier phase ran) has room for %d of its %d workers now%s",
			t.LevelName, s.domNames[v.doms[k].dom], room, gr.req.Min, slice)
	case t.Required:
		return fmt.Sprintf("no %s has room for all %d workers now; the best, %s, has room for %d%s",
			t.LevelName, gr.req.Min, s.domNames[v.doms[k].dom], room, slice)
	case v.size > 1:
		var total int64
		for _, n := range v.slices {
			total += n
		}
		return fmt.Sprintf("room for %d of its %d workers now%s; the best %s, %s, has room for %d",
			total*int64(v.size), gr.req.Min, slice, t.LevelName, s.domNames[v.doms[k].dom], room)
	}
	return ""
}
