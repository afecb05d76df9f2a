package engine

import (
	"slices"
	"time"
)

// State is the engine's incremental view of one cluster: its nodes, their
// free capacity, the ledger of grants and the queue of waiting gangs. The
// simulator keeps one State for a whole run; Schedule builds a fresh one
// from a Snapshot for callers that rebuild every cycle.
//
// A State is not safe for concurrent use.
type State struct {
	cfg Config

	// Resource names are interned to dense indices so capacity checks are
	// slice walks, not map lookups: the hot loop runs nodes × gangs times.
	dims     map[ResourceName]int
	dimNames []ResourceName

	nodes   []*nodeState // in name order; removed nodes are dropped
	nodeIdx map[string]int

	grants map[GangKey]*grantState
	// elastic holds the grants with desired > min: the only ones that can
	// grow or give surplus, so those passes never walk every grant.
	elastic map[GangKey]*grantState
	// movable holds the grants with unbound workers: the only ones a
	// pod phasegang does not manage can displace (displace.go).
	movable map[GangKey]*grantState
	// portGrants holds the grants whose workers bind host ports: a gang
	// with host ports is kept off their nodes where the ports conflict.
	portGrants map[GangKey]*grantState
	queue      map[GangKey]*gangReq
	// shapes interns gangReq.shapeKey to a small integer per shape;
	// shapeQueued counts the queued gangs of each shape and shapeMinMin is
	// the smallest min ever queued with it: together they tell when no
	// queued gang can fit any more, so a cycle can stop walking the queue.
	shapes      map[string]int32
	shapeQueued []int
	shapeMinMin []int32
	// fresh holds gangs submitted since the last cycle, so a gang that can
	// never fit is reported at once even if the walk stops before it.
	fresh []*gangReq
	// cycles counts cycles (to report a gang once per cycle).
	cycles int
	// order holds the queue in queue order, kept sorted on insert so a
	// cycle does not sort thousands of gangs again; entries that left the
	// queue are marked removed and compacted by the next cycle.
	order []*gangReq

	// upcoming holds, per pipeline, the phases it will queue later (see
	// Expect); a pipeline with one that can never fit runs nothing.
	upcoming map[string][]*gangReq
	// doomCount counts, per pipeline, its queued and upcoming gangs that
	// can never fit on the node set and quotas of doomNodes and
	// doomQuotas (nodesVersion, quotasVersion; see doomedPipelines).
	doomCount             map[string]int
	doomNodes, doomQuotas int

	// pendingRelease holds grants to release in the next cycle, with why.
	pendingRelease map[GangKey]pendingRelease

	// classes caches, per distinct Constraints, the nodes that pass them.
	// Nodes change rarely; gangs share a handful of constraint sets.
	classes map[string]*nodeClass
	// nodesVersion changes whenever the node set does, invalidating the
	// class and infeasibility cached on queued gangs.
	nodesVersion int

	fence *Fence

	// quotas are the namespaces' ResourceQuotas (SetQuotas), in
	// namespace and name order; quotaNS indexes them by namespace, and
	// quotasVersion changes with every SetQuotas, invalidating the
	// charges and verdicts cached on gangs.
	quotas        []*quotaState
	quotaNS       map[string][]int
	quotasVersion int

	// queues are the tenant queues (SetQueues), in name order; queueIdx
	// indexes them by name. SetQueues changes quotasVersion too: queues
	// are limits like quotas, for the caches that depend on them.
	queues   []*queueState
	queueIdx map[string]int

	// totalFree is the cluster's free capacity per dim during a cycle: a
	// quick test that rejects gangs once the cluster is full.
	totalFree []int64

	// scratch buffers reused across placements to keep the hot path
	// allocation-free.
	capBuf []int32

	// domIdx interns topology domains (a node's Domain path up to a
	// level); domNames[id] is the domain's own value, for messages.
	domIdx   map[string]int32
	domNames []string
	// topoBufG and topoBufD are placeTopo's scratch: slices per group
	// and per domain.
	topoBufG, topoBufD []int64
}

// NewState builds a State from nodes and an existing ledger. Grants marked
// Release, and grants with a worker on a node that is not in nodes, are
// released by the first Cycle.
func NewState(cfg Config, nodes []Node, ledger []Grant) *State {
	s := &State{
		cfg:            cfg,
		dims:           map[ResourceName]int{},
		nodeIdx:        map[string]int{},
		grants:         map[GangKey]*grantState{},
		elastic:        map[GangKey]*grantState{},
		movable:        map[GangKey]*grantState{},
		portGrants:     map[GangKey]*grantState{},
		queue:          map[GangKey]*gangReq{},
		upcoming:       map[string][]*gangReq{},
		doomCount:      map[string]int{},
		doomNodes:      -1,
		shapes:         map[string]int32{},
		pendingRelease: map[GangKey]pendingRelease{},
		classes:        map[string]*nodeClass{},
	}
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b Node) int { return compareStrings(a.Name, b.Name) })
	for _, n := range sorted {
		s.internAll(n.Allocatable)
		s.internAll(n.Used)
		s.internAll(n.Leaving)
	}
	s.nodes = make([]*nodeState, 0, len(sorted))
	for _, n := range sorted {
		if _, dup := s.nodeIdx[n.Name]; dup {
			continue
		}
		s.nodeIdx[n.Name] = len(s.nodes)
		s.nodes = append(s.nodes, s.newNodeState(n))
	}
	for _, g := range ledger {
		s.restoreGrant(g)
	}
	return s
}

// Schedule runs one pure scheduling cycle over a snapshot: it builds a
// State, queues the snapshot's requests and returns the cycle's Plan.
func Schedule(cfg Config, snap Snapshot) Plan {
	s := NewState(cfg, snap.Nodes, snap.Ledger)
	// Bulk load: one sort instead of a sorted insert per request.
	for _, r := range snap.Queue {
		if _, granted := s.grants[r.Gang]; granted {
			continue
		}
		s.Withdraw(r.Gang)
		s.order = append(s.order, s.enqueue(r))
	}
	slices.SortStableFunc(s.order, func(a, b *gangReq) int { return compareQueue(&a.req, &b.req) })
	for _, r := range snap.Upcoming {
		s.upcoming[r.Gang.Pipeline] = append(s.upcoming[r.Gang.Pipeline], s.newGangReq(r))
	}
	s.fence = snap.Fence
	for _, key := range snap.Nominated {
		if gr, ok := s.queue[key]; ok {
			gr.nominated = true
		}
	}
	if len(snap.Quotas) > 0 {
		s.SetQuotas(snap.Quotas)
	}
	if len(snap.Queues) > 0 {
		s.SetQueues(snap.Queues)
	}
	return s.Cycle(snap.Now)
}

// Submit queues a gang for its first grant. Submitting a key that is queued
// already replaces the queued request; a key that holds a grant is ignored.
func (s *State) Submit(r Request) {
	if _, granted := s.grants[r.Gang]; granted {
		return
	}
	s.Withdraw(r.Gang)
	gr := s.enqueue(r)
	i, _ := slices.BinarySearchFunc(s.order, gr, func(a, b *gangReq) int { return compareQueue(&a.req, &b.req) })
	s.order = slices.Insert(s.order, i, gr)
}

// enqueue adds a request to the queue's index (not to order).
func (s *State) enqueue(r Request) *gangReq {
	gr := s.newGangReq(r)
	s.queue[r.Gang] = gr
	s.shapeQueued[gr.shape]++
	s.shapeMinMin[gr.shape] = min(s.shapeMinMin[gr.shape], r.Min)
	s.fresh = append(s.fresh, gr)
	s.countDoom(gr)
	return gr
}

// dequeue removes a queued gang from the index; order drops it lazily.
func (s *State) dequeue(gr *gangReq) {
	gr.removed = true
	s.uncountDoom(gr)
	delete(s.queue, gr.req.Gang)
	s.shapeQueued[gr.shape]--
}

// Expect replaces the phases a pipeline will queue later (nil: none). Each
// cycle checks them against the empty cluster, as it checks queued gangs:
// a pipeline with an upcoming phase that can never fit is reported
// Infeasible (that phase's key, with the numbers) and none of its queued
// gangs is admitted.
func (s *State) Expect(pipeline string, upcoming []Request) {
	for _, gr := range s.upcoming[pipeline] {
		s.uncountDoom(gr)
	}
	if len(upcoming) == 0 {
		delete(s.upcoming, pipeline)
		return
	}
	grs := make([]*gangReq, len(upcoming))
	for i, r := range upcoming {
		grs[i] = s.newGangReq(r)
		s.countDoom(grs[i])
	}
	s.upcoming[pipeline] = grs
}

// Withdraw removes a queued gang (its pipeline was deleted or failed).
func (s *State) Withdraw(key GangKey) {
	if gr, ok := s.queue[key]; ok {
		s.dequeue(gr)
	}
}

// Release drops a grant at once (its phase ended) and reports whether the
// gang held one. Prefer MarkRelease when the release must appear in a Plan.
func (s *State) Release(key GangKey) bool {
	g, ok := s.grants[key]
	if !ok {
		return false
	}
	s.unreserve(g, len(g.workers))
	s.dropGrant(key)
	delete(s.pendingRelease, key)
	return true
}

// MarkRelease asks the next Cycle to release a grant and list it in its Plan.
func (s *State) MarkRelease(key GangKey) {
	if _, ok := s.grants[key]; ok && s.pendingRelease[key].reason != ReleaseNodeLost {
		// A lost node stays the reason: it says more than the request.
		s.pendingRelease[key] = pendingRelease{reason: ReleaseRequested, message: "released on request"}
	}
}

// AddNode adds a node, or replaces the node of the same name (its
// allocatable, labels, taints or unmanaged use changed).
func (s *State) AddNode(n Node) {
	s.internAll(n.Allocatable)
	s.internAll(n.Used)
	s.internAll(n.Leaving)
	ns := s.newNodeState(n)
	if i, ok := s.nodeIdx[n.Name]; ok {
		old := s.nodes[i]
		ns.grantCount = old.grantCount
		s.nodes[i] = ns
		s.recomputeFree(i)
	} else {
		i := sortSearchNodes(s.nodes, n.Name)
		s.nodes = slices.Insert(s.nodes, i, ns)
		s.reindexNodes()
		// Node indices at or above i moved up by one.
		for _, g := range s.grants {
			for j, w := range g.workers {
				if w >= int32(i) {
					g.workers[j] = w + 1
				}
			}
		}
	}
	s.nodesChanged()
}

// RemoveNode deletes a node. Grants with a worker on it are released by the
// next Cycle with reason NodeLost: a distributed job that lost a worker's
// node cannot go on, and holding the rest of its gang would waste capacity.
func (s *State) RemoveNode(name string) {
	i, ok := s.nodeIdx[name]
	if !ok {
		return
	}
	s.nodes = slices.Delete(s.nodes, i, i+1)
	s.reindexNodes()
	s.nodesChanged()
	for _, key := range s.grantKeys() {
		g := s.grants[key]
		for _, w := range g.workers {
			if w == int32(i) {
				if g.lostNode == "" {
					g.lostNode = name
				}
				s.pendingRelease[key] = pendingRelease{reason: ReleaseNodeLost, message: nodeLostMessage(g.lostNode)}
				break
			}
		}
		// Node indices above i moved down by one.
		for j, w := range g.workers {
			switch {
			case w == int32(i):
				g.workers[j] = -1
			case w > int32(i):
				g.workers[j] = w - 1
			}
		}
	}
}

func (s *State) nodesChanged() {
	s.classes = map[string]*nodeClass{}
	s.nodesVersion++
}

// Cycle decides and applies one scheduling cycle at time now: the returned
// Plan is already reflected in the State (the caller persists it).
func (s *State) Cycle(now time.Time) Plan { return s.cycle(now) }

// Grants returns a copy of the ledger, ordered by gang key.
func (s *State) Grants() []Grant {
	out := make([]Grant, 0, len(s.grants))
	for _, key := range s.grantKeys() {
		out = append(out, s.exportGrant(s.grants[key]))
	}
	return out
}

// Grant returns the grant of a gang, if any.
func (s *State) Grant(key GangKey) (Grant, bool) {
	g, ok := s.grants[key]
	if !ok {
		return Grant{}, false
	}
	return s.exportGrant(g), true
}

// Queued returns how many gangs wait for a first grant.
func (s *State) Queued() int { return len(s.queue) }

// Free returns a node's free capacity (allocatable minus unmanaged use minus
// grants), or false if the node is unknown.
func (s *State) Free(node string) (ResourceList, bool) {
	i, ok := s.nodeIdx[node]
	if !ok {
		return nil, false
	}
	out := ResourceList{}
	for d, v := range s.nodes[i].free {
		if v != 0 || s.nodes[i].alloc[d] != 0 {
			out[s.dimNames[d]] = v
		}
	}
	return out, true
}

// Nodes returns the names of the known nodes, in name order.
func (s *State) Nodes() []string {
	out := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		out[i] = n.node.Name
	}
	return out
}
