package engine

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeState is one node with its capacity as dense vectors indexed by dim.
type nodeState struct {
	// free (alloc - used - grants) and grantCount come first: the
	// placement loop reads them for every node, the rest rarely.
	free []int64
	// grantCount is how many granted workers sit on the node; a node with
	// none is "whole" and the placement heuristic keeps it for large gangs.
	grantCount int32
	node       Node
	alloc      []int64 // allocatable
	used       []int64 // unmanaged pods
	// leaving is the part of used that comes back by itself (Node.Leaving).
	leaving []int64
	// ports are the host ports of its pods no grant covers.
	ports []HostPort
	// k8s is a minimal corev1.Node for kube-scheduler's affinity helpers.
	k8s *corev1.Node
	// dom is the node's interned domain per topology level (-1: none).
	dom []int32
}

// dimAmt is one non-zero entry of a footprint.
type dimAmt struct {
	dim int
	amt int64
}

// gangReq is a queued request with its footprint interned.
type gangReq struct {
	req Request
	fp  []dimAmt
	// ports are one worker's host ports, normalized (hostports.go).
	ports    []HostPort
	fpKey    string
	classKey string
	// shapeKey is classKey + fpKey: gangs of one shape fit or fail alike;
	// shape is its interned number.
	shapeKey string
	shape    int32
	// removed marks an entry of State.order that left the queue; the next
	// cycle compacts it away.
	removed bool
	// reported is the last cycle that listed it as Infeasible.
	reported int
	// class and infeasible cache the node class and the empty-cluster
	// verdict for nodesVersion.
	class        *nodeClass
	infeasible   string
	nodesVersion int
	// doomCounted says State.doomCount counts this gang: it can never fit
	// (at State.doomNodes and doomQuotas) and is queued or upcoming.
	doomCounted bool
	// nodeInfeasible is the node verdict alone; quotaVerdict is the
	// quotasVersion (+1) infeasible was last computed for.
	nodeInfeasible string
	quotaVerdict   int
	// quotaCharges caches what one worker charges to each quota that
	// applies to it, for chargesVersion (quotasVersion + 1).
	quotaCharges   []quotaCharge
	chargesVersion int
	// queue caches what one worker charges to its tenant queue, for
	// queueVersion (quotasVersion + 1).
	queue        queueCharge
	queueVersion int
	// nominated marks a queued gang that gangs were preempted for: until
	// it is admitted it reclaims its queue's nominal quota from the
	// cohort (findReclaims) even while the quota is free, so no
	// borrower takes back what was freed for it before it fits.
	nominated bool
}

// grantState is a ledger entry.
type grantState struct {
	gangReq
	// workers[i] is the node index of worker i; -1 once its node is removed.
	workers []int32
	// lostNode names the removed node of the workers at -1.
	lostNode string
	// unbound holds the workers whose pods are not bound yet (Grant.Unbound),
	// refused those kube-scheduler refused, with its reason (Grant.Refused).
	unbound map[int32]bool
	refused map[int32]RefusedWorker
}

type pendingRelease struct {
	reason  ReleaseReason
	message string
}

// nodeClass is the set of nodes that pass one Constraints value.
type nodeClass struct {
	nodes []int32 // eligible node indices, in name order
	// Why the others were rejected, for Infeasible messages.
	rejectedAffinity, rejectedTaint, rejectedCordon int
	// infeasible caches the empty-cluster check per footprint and min.
	infeasible map[string]string
	// fills caches fillsNodes per footprint.
	fills map[string]bool
	// groups caches the nodes grouped by domain, per topology level.
	groups map[int][]domGroup
	// layouts caches them per (level, slice level) of a gang.
	layouts map[[2]int]*topoLayout
}

func (s *State) addGrant(g *grantState) {
	s.grants[g.req.Gang] = g
	if g.req.Desired > g.req.Min {
		s.elastic[g.req.Gang] = g
	}
	if len(g.unbound) > 0 {
		s.movable[g.req.Gang] = g
	}
	if len(g.ports) > 0 {
		s.portGrants[g.req.Gang] = g
	}
}

func (s *State) dropGrant(key GangKey) {
	delete(s.grants, key)
	delete(s.elastic, key)
	delete(s.movable, key)
	delete(s.portGrants, key)
}

func nodeLostMessage(name string) string { return "node " + name + " was removed" }

func compareStrings(a, b string) int { return strings.Compare(a, b) }

func sortSearchNodes(nodes []*nodeState, name string) int {
	return sort.Search(len(nodes), func(i int) bool { return nodes[i].node.Name >= name })
}

func (s *State) reindexNodes() {
	s.nodeIdx = make(map[string]int, len(s.nodes))
	for i, n := range s.nodes {
		s.nodeIdx[n.node.Name] = i
	}
}

// intern returns the dense index of a resource, adding it if new.
func (s *State) intern(name ResourceName) int {
	if d, ok := s.dims[name]; ok {
		return d
	}
	d := len(s.dimNames)
	s.dims[name] = d
	s.dimNames = append(s.dimNames, name)
	for _, n := range s.nodes {
		n.alloc = append(n.alloc, 0)
		n.used = append(n.used, 0)
		n.leaving = append(n.leaving, 0)
		n.free = append(n.free, 0)
	}
	return d
}

func (s *State) internAll(rl ResourceList) {
	for _, name := range sortedNames(rl) {
		s.intern(name)
	}
}

func sortedNames(rl ResourceList) []ResourceName {
	names := make([]ResourceName, 0, len(rl))
	for n := range rl {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (s *State) vector(rl ResourceList) []int64 {
	s.internAll(rl)
	v := make([]int64, len(s.dimNames))
	for name, amt := range rl {
		v[s.intern(name)] = amt
	}
	return v
}

func (s *State) newNodeState(n Node) *nodeState {
	// The callers intern every name of n first, so the vectors below
	// have one length.
	ns := &nodeState{node: n}
	ns.alloc = s.vector(n.Allocatable)
	ns.used = s.vector(n.Used)
	// leaving and free share one allocation (capped, so growing one
	// never writes into the other): the Schedule path builds every node
	// every cycle.
	d := len(ns.alloc)
	lf := make([]int64, 2*d)
	ns.leaving, ns.free = lf[:d:d], lf[d:]
	for name, amt := range n.Leaving {
		ns.leaving[s.dims[name]] = amt
	}
	ns.ports = normalizePorts(n.HostPorts)
	for d := range ns.alloc {
		ns.free[d] = ns.alloc[d] - ns.used[d]
	}
	ns.k8s = &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels},
		Spec:       corev1.NodeSpec{Taints: n.Taints, Unschedulable: n.Unschedulable},
	}
	s.internDomains(ns)
	return ns
}

// recomputeFree rebuilds node i's free vector from scratch (after its
// allocatable or unmanaged use changed).
func (s *State) recomputeFree(i int) {
	n := s.nodes[i]
	for d := range n.free {
		n.free[d] = n.alloc[d] - n.used[d]
	}
	n.grantCount = 0
	for _, key := range s.grantKeys() {
		g := s.grants[key]
		for _, w := range g.workers {
			if w == int32(i) {
				n.grantCount++
				for _, f := range g.fp {
					n.free[f.dim] -= f.amt
				}
			}
		}
	}
}

func (s *State) newGangReq(r Request) *gangReq {
	gr := &gangReq{req: r}
	names := sortedNames(r.Footprint)
	var b strings.Builder
	for _, name := range names {
		amt := r.Footprint[name]
		if amt == 0 {
			continue
		}
		gr.fp = append(gr.fp, dimAmt{dim: s.intern(name), amt: amt})
		fmt.Fprintf(&b, "%s=%d;", name, amt)
	}
	gr.ports = normalizePorts(r.HostPorts)
	b.WriteString(portsKey(gr.ports))
	if r.OnePerNode {
		b.WriteString("onepernode;")
	}
	b.WriteString(topoKey(r.Topology))
	gr.fpKey = b.String()
	gr.classKey = constraintsKey(r.Constraints)
	gr.shapeKey = gr.classKey + "\x00" + gr.fpKey
	id, ok := s.shapes[gr.shapeKey]
	if !ok {
		id = int32(len(s.shapes))
		s.shapes[gr.shapeKey] = id
		s.shapeQueued = append(s.shapeQueued, 0)
		s.shapeMinMin = append(s.shapeMinMin, math.MaxInt32)
	}
	gr.shape = id
	gr.nodesVersion = -1
	return gr
}

func (s *State) restoreGrant(g Grant) {
	gs := &grantState{gangReq: *s.newGangReq(g.Request)}
	lost := false
	for _, name := range g.Workers {
		i, ok := s.nodeIdx[name]
		if !ok {
			gs.workers = append(gs.workers, -1)
			if !lost {
				gs.lostNode, lost = name, true
			}
			continue
		}
		gs.workers = append(gs.workers, int32(i))
	}
	if g.LostNode != "" && !lost {
		gs.lostNode, lost = g.LostNode, true
	}
	gs.unbound, gs.refused = workerSet(g.Unbound, len(g.Workers)), refusedSet(g.Refused, len(g.Workers))
	s.reserveWorkers(gs, gs.workers)
	s.charge(&gs.gangReq, int64(len(gs.workers)))
	s.addGrant(gs)
	switch {
	case lost:
		s.pendingRelease[g.Gang] = pendingRelease{reason: ReleaseNodeLost, message: nodeLostMessage(gs.lostNode)}
	case g.Release:
		s.pendingRelease[g.Gang] = pendingRelease{reason: ReleaseRequested, message: "released on request"}
	}
}

// reserveWorkers charges the footprint of the given workers to their nodes.
func (s *State) reserveWorkers(g *grantState, workers []int32) {
	for _, w := range workers {
		if w < 0 {
			continue
		}
		n := s.nodes[w]
		n.grantCount++
		for _, f := range g.fp {
			n.free[f.dim] -= f.amt
		}
	}
}

// unreserve gives back the top k workers of a grant and drops them.
func (s *State) unreserve(g *grantState, k int) []int32 {
	cut := len(g.workers) - k
	removed := g.workers[cut:]
	for _, w := range removed {
		if w < 0 {
			continue
		}
		n := s.nodes[w]
		n.grantCount--
		for _, f := range g.fp {
			n.free[f.dim] += f.amt
		}
	}
	g.workers = g.workers[:cut:cut]
	for i := cut; i < cut+len(removed); i++ {
		delete(g.unbound, int32(i))
		delete(g.refused, int32(i))
	}
	s.charge(&g.gangReq, -int64(len(removed)))
	return removed
}

func (s *State) grantKeys() []GangKey {
	keys := make([]GangKey, 0, len(s.grants))
	for k := range s.grants {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	return keys
}

func (s *State) exportGrant(g *grantState) Grant {
	out := Grant{Request: g.req, Workers: make([]string, len(g.workers))}
	for i, w := range g.workers {
		if w >= 0 {
			out.Workers[i] = s.nodes[w].node.Name
		} else {
			// A lost node keeps its name, so a ledger rebuilt from this
			// grant releases it as NodeLost again.
			out.Workers[i] = g.lostNode
		}
	}
	// Release carries only what the caller asked for; a lost node is
	// visible in Workers.
	for i := range g.workers {
		if g.unbound[int32(i)] {
			out.Unbound = append(out.Unbound, int32(i))
		}
		if r, ok := g.refused[int32(i)]; ok {
			out.Refused = append(out.Refused, r)
		}
	}
	pr := s.pendingRelease[g.req.Gang]
	out.Release = pr.reason == ReleaseRequested
	if pr.reason == ReleaseNodeLost {
		out.LostNode = g.lostNode
	}
	return out
}

// workerSet indexes a grant's worker list (Grant.Unbound), ignoring
// indices it does not have.
func workerSet(ws []int32, n int) map[int32]bool {
	var out map[int32]bool
	for _, w := range ws {
		if w >= 0 && int(w) < n {
			if out == nil {
				out = map[int32]bool{}
			}
			out[w] = true
		}
	}
	return out
}

// refusedSet indexes Grant.Refused, ignoring indices the grant does not have.
func refusedSet(rs []RefusedWorker, n int) map[int32]RefusedWorker {
	var out map[int32]RefusedWorker
	for _, r := range rs {
		if r.Index >= 0 && int(r.Index) < n {
			if out == nil {
				out = map[int32]RefusedWorker{}
			}
			out[r.Index] = r
		}
	}
	return out
}

func compareKeys(a, b GangKey) int {
	return cmp.Or(
		strings.Compare(a.Pipeline, b.Pipeline),
		strings.Compare(a.Phase, b.Phase),
		cmp.Compare(a.Iteration, b.Iteration),
		cmp.Compare(a.Attempt, b.Attempt),
	)
}

// compareQueue is the queue order: priority (higher first), then the
// pipeline's creation time (older first; every phase carries it, so a later
// phase keeps its pipeline's place), then the key for determinism.
func compareQueue(a, b *Request) int {
	if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
		return c
	}
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	return compareKeys(a.Gang, b.Gang)
}

// constraintsKey is a canonical string of a Constraints value, so gangs
// with equal constraints share one node class.
func constraintsKey(c Constraints) string {
	if len(c.NodeSelector) == 0 && c.Affinity == nil && len(c.Tolerations) == 0 {
		return ""
	}
	var b strings.Builder
	keys := make([]string, 0, len(c.NodeSelector))
	for k := range c.NodeSelector {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s,", k, c.NodeSelector[k])
	}
	b.WriteString("|")
	if c.Affinity != nil && c.Affinity.NodeAffinity != nil {
		b.WriteString(c.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.String())
	}
	b.WriteString("|")
	for _, t := range c.Tolerations {
		b.WriteString(t.String())
		b.WriteString(",")
	}
	return b.String()
}
