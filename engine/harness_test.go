package engine_test

// harness_test.go is a small discrete-event harness that drives one
// *engine.State through a workload of phased pipelines on a virtual clock
// (no sleeping, no time.Now). It is the seed of the simulator: a Harness is
// plain data, Run is deterministic, and the Result keeps every Plan so that
// properties can be checked independently of the engine's own bookkeeping.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/eventqueue"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// Epoch is the harness's virtual time zero.
var Epoch = wrappers.EngineT0

// PhaseSpec is one phase of a pipeline: one gang.
type PhaseSpec struct {
	Name         string
	Min, Desired int32
	Footprint    engine.ResourceList
	Constraints  engine.Constraints
	// Duration is how long the phase runs once its gang is reserved
	// (independent of the granted size, to keep things simple).
	Duration time.Duration
}

// PipelineSpec is a chain of phases run one after the other.
type PipelineSpec struct {
	// Name is "namespace/name".
	Name     string
	Priority int32
	// Arrival is the pipeline's creation time, as an offset from Epoch.
	Arrival time.Duration
	Phases  []PhaseSpec
}

// NodeEvent changes the cluster at a point of virtual time.
type NodeEvent struct {
	At time.Duration
	// Remove names a node to remove; otherwise Add is added (or replaced).
	Remove string
	Add    *engine.Node
}

// Harness is one simulated run.
type Harness struct {
	Config     engine.Config
	Nodes      []engine.Node
	Pipelines  []PipelineSpec
	NodeEvents []NodeEvent
	// MarkRelease ends phases with State.MarkRelease (the next Cycle reports
	// the release) instead of State.Release (dropped at once).
	MarkRelease bool
	// CheckPure runs engine.Schedule on a Snapshot of the State's contents
	// before every Cycle and records any difference with the Cycle's Plan
	// (queue and ledger reversed every other cycle).
	CheckPure bool
	// RecordLedger stores State.Grants() after every cycle.
	RecordLedger bool
	// MaxCyclesPerInstant bounds the cycles run at one instant: the harness
	// reruns the cycle while the plan changes something (as a controller
	// requeues), up to this many times (default 8).
	MaxCyclesPerInstant int
	// MaxCycles bounds the whole run (default 1,000,000).
	MaxCycles int
}

// CycleRecord is one scheduling cycle.
type CycleRecord struct {
	Now time.Time
	// Instant numbers the cycles run at the same Now (0 first).
	Instant int
	// Released are grants the harness dropped with State.Release since the
	// previous cycle; RemovedNodes and AddedNodes are node changes since then.
	Released     []engine.GangKey
	RemovedNodes []string
	AddedNodes   []engine.Node
	// Queue holds the queued gangs before the cycle, in submission order.
	Queue []engine.GangKey
	Plan  engine.Plan
	// Ledger is State.Grants() after the cycle (when RecordLedger).
	Ledger []engine.Grant
	// PureDiff is non-empty when Schedule on the snapshot differed (CheckPure).
	PureDiff string
}

// GangRecord is the life of one gang (one phase attempt).
type GangRecord struct {
	Key              engine.GangKey
	Pipeline, Phase  int
	Request          engine.Request
	Queued           time.Time
	Reserved         time.Time // zero if never reserved
	Ended            time.Time // released, lost, withdrawn
	Workers          int       // granted size at reservation
	MaxWorkers       int       // largest size reached
	Infeasible       string    // the engine's message, if it said so
	Lost             bool      // released with NodeLost
	granted, marking bool
}

// Wait is how long the gang was queued (until reserved, or until its end).
func (g *GangRecord) Wait(end time.Time) time.Duration {
	switch {
	case !g.Reserved.IsZero():
		return g.Reserved.Sub(g.Queued)
	case !g.Ended.IsZero():
		return g.Ended.Sub(g.Queued)
	}
	return end.Sub(g.Queued)
}

// PipelineResult is the outcome of one pipeline.
type PipelineResult struct {
	Name     string
	Created  time.Time
	Finished bool // every phase ran
	Failed   bool // a phase was infeasible and withdrawn
	EndedAt  time.Time
}

// Result is everything a run recorded.
type Result struct {
	Cycles    []CycleRecord
	Gangs     []*GangRecord // in submission order
	ByKey     map[engine.GangKey]*GangRecord
	Pipelines []PipelineResult
	End       time.Time
	// Errors are harness-level anomalies: plans naming gangs in the wrong
	// state, no fixpoint at an instant, the cycle cap.
	Errors []string
	// The State after the run.
	FinalGrants []engine.Grant
	FinalQueued int
	FinalFree   map[string]engine.ResourceList
}

// Stuck lists pipelines that neither finished nor failed.
func (r *Result) Stuck() []string {
	var out []string
	for _, p := range r.Pipelines {
		if !p.Finished && !p.Failed {
			out = append(out, p.Name)
		}
	}
	return out
}

// Placed counts the workers placed by Reserves and Grows over the run.
func (r *Result) Placed() int {
	n := 0
	for _, c := range r.Cycles {
		for _, rs := range c.Plan.Reserves {
			n += len(rs.Workers)
		}
		for _, g := range c.Plan.Grows {
			n += len(g.Workers)
		}
	}
	return n
}

type eventKind int

const (
	evArrive eventKind = iota
	evFinish
	evNode
	evWake
)

// event is one thing that happens in a harness run; the queue holds each
// at its virtual time (an offset from Epoch), as the simulator's does.
type event struct {
	kind eventKind
	idx  int // pipeline index or node event index
	gang engine.GangKey
}

type run struct {
	h     *Harness
	s     *engine.State
	res   *Result
	ev    eventqueue.Queue[event]
	nodes []engine.Node
	queue []engine.GangKey // submission order
	fence *engine.Fence
	// nominated is the previous cycle's Plan.Nominated (the pure
	// Schedule gets it in its Snapshot, as the controller passes it).
	nominated []engine.GangKey
	// changes since the previous cycle
	released []engine.GangKey
	removed  []string
	added    []engine.Node
}

// Run simulates the whole workload and returns what happened.
func (h *Harness) Run() *Result {
	r := &run{
		h:     h,
		s:     engine.NewState(h.Config, cloneNodes(h.Nodes), nil),
		res:   &Result{ByKey: map[engine.GangKey]*GangRecord{}},
		nodes: cloneNodes(h.Nodes),
	}
	for i, p := range h.Pipelines {
		r.res.Pipelines = append(r.res.Pipelines, PipelineResult{Name: p.Name, Created: Epoch.Add(p.Arrival)})
		r.push(Epoch.Add(p.Arrival), event{kind: evArrive, idx: i})
	}
	for i, ne := range h.NodeEvents {
		r.push(Epoch.Add(ne.At), event{kind: evNode, idx: i})
	}
	perInstant := h.MaxCyclesPerInstant
	if perInstant <= 0 {
		perInstant = 8
	}
	maxCycles := h.MaxCycles
	if maxCycles <= 0 {
		maxCycles = 1_000_000
	}
	loop := eventqueue.Loop[event]{
		Handle: func(at time.Duration, e event) { r.handle(e, Epoch.Add(at)) },
		Settle: func(at time.Duration, k int) bool {
			return changes(r.cycle(Epoch.Add(at), k))
		},
		MaxRounds: perInstant,
		MaxSteps:  maxCycles,
	}
	end, err := loop.Run(&r.ev)
	if err != nil {
		// Run joins each anomaly (no fixpoint at an instant, the cycle
		// cap) on a line of its own.
		r.res.Errors = append(r.res.Errors, strings.Split(err.Error(), "\n")...)
	}
	r.res.End = Epoch.Add(end)
	r.res.FinalGrants = r.s.Grants()
	r.res.FinalQueued = r.s.Queued()
	r.res.FinalFree = map[string]engine.ResourceList{}
	for _, n := range r.nodes {
		if f, ok := r.s.Free(n.Name); ok {
			r.res.FinalFree[n.Name] = f
		}
	}
	return r.res
}

func changes(p engine.Plan) bool {
	return len(p.Releases)+len(p.Reserves)+len(p.Grows)+len(p.Shrinks)+len(p.Infeasible) > 0
}

func (r *run) errorf(format string, args ...any) {
	r.res.Errors = append(r.res.Errors, fmt.Sprintf(format, args...))
}

func (r *run) push(at time.Time, e event) { r.ev.Push(at.Sub(Epoch), e) }

func (r *run) handle(e event, now time.Time) {
	switch e.kind {
	case evArrive:
		r.submit(e.idx, 0, 0, now)
	case evFinish:
		g := r.res.ByKey[e.gang]
		if g == nil || !g.granted || !g.Ended.IsZero() {
			return // lost (and requeued) in the meantime
		}
		g.Ended = now
		g.granted = false
		if r.h.MarkRelease {
			g.marking = true
			r.s.MarkRelease(e.gang)
		} else {
			if !r.s.Release(e.gang) {
				r.errorf("Release(%v) at %v: the State held no grant", e.gang, now.Sub(Epoch))
			}
			r.released = append(r.released, e.gang)
		}
		if g.Phase+1 < len(r.h.Pipelines[g.Pipeline].Phases) {
			r.submit(g.Pipeline, g.Phase+1, 0, now)
		} else {
			p := &r.res.Pipelines[g.Pipeline]
			p.Finished, p.EndedAt = true, now
		}
	case evNode:
		ne := r.h.NodeEvents[e.idx]
		if ne.Remove != "" {
			r.s.RemoveNode(ne.Remove)
			r.nodes = slices.DeleteFunc(r.nodes, func(n engine.Node) bool { return n.Name == ne.Remove })
			r.removed = append(r.removed, ne.Remove)
		} else if ne.Add != nil {
			n := cloneNodes([]engine.Node{*ne.Add})[0]
			r.s.AddNode(n)
			if i := slices.IndexFunc(r.nodes, func(m engine.Node) bool { return m.Name == n.Name }); i >= 0 {
				r.nodes[i] = n
			} else {
				r.nodes = append(r.nodes, n)
			}
			r.added = append(r.added, n)
		}
	case evWake:
		// Only makes a cycle run (the starvation bound passed).
	}
}

func (r *run) submit(pi, phase int, attempt int32, now time.Time) {
	p := r.h.Pipelines[pi]
	ph := p.Phases[phase]
	key := engine.GangKey{Pipeline: p.Name, Phase: ph.Name, Attempt: attempt}
	req := engine.Request{
		Gang:        key,
		Priority:    p.Priority,
		Created:     Epoch.Add(p.Arrival),
		Queued:      now,
		Min:         ph.Min,
		Desired:     ph.Desired,
		Footprint:   ph.Footprint,
		Constraints: ph.Constraints,
	}
	g := &GangRecord{Key: key, Pipeline: pi, Phase: phase, Request: req, Queued: now}
	if _, dup := r.res.ByKey[key]; dup {
		r.errorf("harness bug: gang %v submitted twice", key)
	}
	r.res.Gangs = append(r.res.Gangs, g)
	r.res.ByKey[key] = g
	r.queue = append(r.queue, key)
	r.s.Submit(req)
	// Make sure a cycle runs just after the starvation bound passes.
	r.push(now.Add(r.h.Config.StarvationBound+time.Millisecond), event{kind: evWake})
}

func (r *run) dequeue(key engine.GangKey) bool {
	i := slices.Index(r.queue, key)
	if i < 0 {
		return false
	}
	r.queue = slices.Delete(r.queue, i, i+1)
	return true
}

func (r *run) cycle(now time.Time, instant int) engine.Plan {
	rec := CycleRecord{
		Now: now, Instant: instant,
		Released: r.released, RemovedNodes: r.removed, AddedNodes: r.added,
		Queue: slices.Clone(r.queue),
	}
	r.released, r.removed, r.added = nil, nil, nil

	var pure engine.Plan
	if r.h.CheckPure {
		snap := engine.Snapshot{
			Now:       now,
			Nodes:     cloneNodes(r.nodes),
			Ledger:    r.s.Grants(),
			Fence:     cloneFence(r.fence),
			Nominated: slices.Clone(r.nominated),
		}
		for _, k := range r.queue {
			snap.Queue = append(snap.Queue, r.res.ByKey[k].Request)
		}
		if len(r.res.Cycles)%2 == 1 {
			// A snapshot's slices carry no order: reverse them every
			// other cycle (nodes stay in the cluster's order).
			slices.Reverse(snap.Queue)
			slices.Reverse(snap.Ledger)
		}
		pure = engine.Schedule(r.h.Config, snap)
	}
	plan := r.s.Cycle(now)
	r.fence = cloneFence(plan.Fence)
	r.nominated = slices.Clone(plan.Nominated)
	if r.h.CheckPure {
		rec.PureDiff = cmp.Diff(plan, pure, cmpopts.EquateEmpty())
	}
	rec.Plan = plan
	if r.h.RecordLedger {
		rec.Ledger = r.s.Grants()
	}
	r.res.Cycles = append(r.res.Cycles, rec)
	r.apply(plan, now)
	return plan
}

// apply updates the harness's bookkeeping from a plan. It checks nothing
// beyond what it needs to stay consistent; properties check the plans.
func (r *run) apply(plan engine.Plan, now time.Time) {
	at := now.Sub(Epoch)
	for _, rel := range plan.Releases {
		g := r.res.ByKey[rel.Gang]
		switch {
		case g == nil:
			r.errorf("%v: release of unknown gang %v", at, rel.Gang)
		case g.marking:
			g.marking = false
		case g.granted:
			// The engine dropped a running gang (its node is gone): requeue
			// the phase as a new attempt.
			g.granted, g.Lost, g.Ended = false, true, now
			r.submit(g.Pipeline, g.Phase, g.Key.Attempt+1, now)
		default:
			r.errorf("%v: release of gang %v that holds no grant", at, rel.Gang)
		}
	}
	for _, sh := range plan.Shrinks {
		if g := r.res.ByKey[sh.Gang]; g != nil {
			g.Workers -= len(sh.Workers)
		}
	}
	for _, rs := range plan.Reserves {
		g := r.res.ByKey[rs.Gang]
		if g == nil || !r.dequeue(rs.Gang) {
			r.errorf("%v: reserve for gang %v that is not queued", at, rs.Gang)
			continue
		}
		g.granted, g.Reserved, g.Workers = true, now, len(rs.Workers)
		g.MaxWorkers = max(g.MaxWorkers, g.Workers)
		ph := r.h.Pipelines[g.Pipeline].Phases[g.Phase]
		r.push(now.Add(ph.Duration), event{kind: evFinish, gang: rs.Gang})
	}
	for _, gr := range plan.Grows {
		g := r.res.ByKey[gr.Gang]
		if g == nil || !g.granted {
			r.errorf("%v: grow for gang %v that holds no grant", at, gr.Gang)
			continue
		}
		g.Workers += len(gr.Workers)
		g.MaxWorkers = max(g.MaxWorkers, g.Workers)
	}
	for _, inf := range plan.Infeasible {
		g := r.res.ByKey[inf.Gang]
		if g == nil || !r.dequeue(inf.Gang) {
			r.errorf("%v: infeasible gang %v is not queued", at, inf.Gang)
			continue
		}
		r.s.Withdraw(inf.Gang)
		g.Infeasible, g.Ended = inf.Message, now
		p := &r.res.Pipelines[g.Pipeline]
		p.Failed, p.EndedAt = true, now
	}
}

func cloneNodes(ns []engine.Node) []engine.Node {
	out := make([]engine.Node, len(ns))
	for i, n := range ns {
		n.Labels = cloneMap(n.Labels)
		n.Taints = slices.Clone(n.Taints)
		n.Allocatable = cloneMap(n.Allocatable)
		n.Used = cloneMap(n.Used)
		out[i] = n
	}
	return out
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return nil
	}
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func cloneFence(f *engine.Fence) *engine.Fence {
	if f == nil {
		return nil
	}
	return &engine.Fence{Head: f.Head, Nodes: slices.Clone(f.Nodes)}
}

// ---- An independent model of placement rules (not the engine's code). ----

// nodeMatches reports whether a worker with constraints c may use node n:
// the node is schedulable, carries the nodeSelector's labels, passes the
// required node affinity (In/NotIn/Exists/DoesNotExist on labels), and
// every NoSchedule/NoExecute taint is tolerated.
func nodeMatches(n engine.Node, c engine.Constraints) bool {
	// A cordoned node is as if tainted node.kubernetes.io/unschedulable
	// :NoSchedule (kube-scheduler's NodeUnschedulable filter), so a
	// toleration of that taint (e.g. tolerate-all) lets a worker use it.
	cordon := corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	if n.Unschedulable && !slices.ContainsFunc(c.Tolerations, func(tol corev1.Toleration) bool { return tolerates(tol, cordon) }) {
		return false
	}
	for k, v := range c.NodeSelector {
		if got, ok := n.Labels[k]; !ok || got != v {
			return false
		}
	}
	if c.Affinity != nil && c.Affinity.NodeAffinity != nil {
		if ns := c.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; ns != nil {
			ok := false
			for _, term := range ns.NodeSelectorTerms {
				if termMatches(n, term) {
					ok = true
					break
				}
			}
			if !ok {
				return false
			}
		}
	}
	for _, t := range n.Taints {
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !slices.ContainsFunc(c.Tolerations, func(tol corev1.Toleration) bool { return tolerates(tol, t) }) {
			return false
		}
	}
	return true
}

func termMatches(n engine.Node, term corev1.NodeSelectorTerm) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false // an empty term matches nothing
	}
	for _, e := range term.MatchExpressions {
		v, has := n.Labels[e.Key]
		switch e.Operator {
		case corev1.NodeSelectorOpIn:
			if !has || !slices.Contains(e.Values, v) {
				return false
			}
		case corev1.NodeSelectorOpNotIn:
			if has && slices.Contains(e.Values, v) {
				return false
			}
		case corev1.NodeSelectorOpExists:
			if !has {
				return false
			}
		case corev1.NodeSelectorOpDoesNotExist:
			if has {
				return false
			}
		default:
			panic("harness: unsupported operator " + string(e.Operator))
		}
	}
	for _, f := range term.MatchFields {
		if f.Key != "metadata.name" || f.Operator != corev1.NodeSelectorOpIn || !slices.Contains(f.Values, n.Name) {
			return false
		}
	}
	return true
}

func tolerates(tol corev1.Toleration, t corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	if tol.Key == "" {
		return tol.Operator == corev1.TolerationOpExists
	}
	if tol.Key != t.Key {
		return false
	}
	switch tol.Operator {
	case corev1.TolerationOpExists:
		return true
	case "", corev1.TolerationOpEqual:
		return tol.Value == t.Value
	}
	return false
}

// perNode is how many workers of footprint fp fit in room (-1: unbounded).
func perNode(room, fp engine.ResourceList) int64 {
	best := int64(-1)
	for name, amt := range fp {
		if amt <= 0 {
			continue
		}
		k := room[name] / amt
		if k < 0 {
			k = 0
		}
		if best < 0 || k < best {
			best = k
		}
	}
	return best
}

// fitsEmpty reports whether Min workers of r fit the empty cluster: the
// allocatable of matching nodes, ignoring what runs there now (grants and
// unmanaged pods end; allocatable does not), as the engine defines it.
func fitsEmpty(nodes []engine.Node, r engine.Request) bool {
	total := int64(0)
	matching := 0
	for _, n := range nodes {
		if !nodeMatches(n, r.Constraints) {
			continue
		}
		matching++
		k := perNode(n.Allocatable, r.Footprint)
		if k < 0 {
			return true
		}
		total += k
	}
	return matching > 0 && total >= int64(r.Min)
}

// FinalNodes is the cluster after every node event.
func (h *Harness) FinalNodes() []engine.Node {
	nodes := cloneNodes(h.Nodes)
	evs := slices.Clone(h.NodeEvents)
	slices.SortStableFunc(evs, func(a, b NodeEvent) int { return int(a.At - b.At) })
	for _, ne := range evs {
		if ne.Remove != "" {
			nodes = slices.DeleteFunc(nodes, func(n engine.Node) bool { return n.Name == ne.Remove })
		} else if ne.Add != nil {
			n := cloneNodes([]engine.Node{*ne.Add})[0]
			if i := slices.IndexFunc(nodes, func(m engine.Node) bool { return m.Name == n.Name }); i >= 0 {
				nodes[i] = n
			} else {
				nodes = append(nodes, n)
			}
		}
	}
	return nodes
}

// phaseRequest is the Request a phase would be submitted with (constraints,
// footprint and sizes only).
func phaseRequest(ph PhaseSpec) engine.Request {
	return engine.Request{Min: ph.Min, Desired: ph.Desired, Footprint: ph.Footprint, Constraints: ph.Constraints}
}

// Describe prints a harness compactly, for failing property output.
func (h *Harness) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "config: starvationBound=%v markRelease=%v\n", h.Config.StarvationBound, h.MarkRelease)
	for _, n := range h.Nodes {
		fmt.Fprintf(&b, "node %s alloc=%s used=%s labels=%v", n.Name, fmtRL(n.Allocatable), fmtRL(n.Used), n.Labels)
		for _, t := range n.Taints {
			fmt.Fprintf(&b, " taint=%s=%s:%s", t.Key, t.Value, t.Effect)
		}
		if n.Unschedulable {
			b.WriteString(" unschedulable")
		}
		b.WriteString("\n")
	}
	for _, ne := range h.NodeEvents {
		if ne.Remove != "" {
			fmt.Fprintf(&b, "at %v remove node %s\n", ne.At, ne.Remove)
		} else if ne.Add != nil {
			fmt.Fprintf(&b, "at %v set node %s alloc=%s used=%s\n", ne.At, ne.Add.Name, fmtRL(ne.Add.Allocatable), fmtRL(ne.Add.Used))
		}
	}
	for _, p := range h.Pipelines {
		fmt.Fprintf(&b, "pipeline %s prio=%d arrival=%v\n", p.Name, p.Priority, p.Arrival)
		for _, ph := range p.Phases {
			fmt.Fprintf(&b, "  phase %s min=%d desired=%d fp=%s dur=%v", ph.Name, ph.Min, ph.Desired, fmtRL(ph.Footprint), ph.Duration)
			if len(ph.Constraints.NodeSelector) > 0 {
				fmt.Fprintf(&b, " selector=%v", ph.Constraints.NodeSelector)
			}
			for _, t := range ph.Constraints.Tolerations {
				fmt.Fprintf(&b, " tol=%s/%s/%s/%s", t.Key, t.Operator, t.Value, t.Effect)
			}
			if a := ph.Constraints.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
				for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
					for _, e := range term.MatchExpressions {
						fmt.Fprintf(&b, " affinity=%s %s %v", e.Key, e.Operator, e.Values)
					}
				}
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func fmtRL(rl engine.ResourceList) string {
	names := make([]string, 0, len(rl))
	for k := range rl {
		names = append(names, string(k))
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		v := rl[engine.ResourceName(k)]
		switch engine.ResourceName(k) {
		case wrappers.Memory:
			parts = append(parts, fmt.Sprintf("mem=%gGi", float64(v)/float64(wrappers.Gi)))
		case wrappers.GPU:
			parts = append(parts, fmt.Sprintf("gpu=%g", float64(v)/1000))
		default:
			parts = append(parts, fmt.Sprintf("%s=%gm", k, float64(v)))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// Trace prints the plans of a run (what changed, cycle by cycle).
func (r *Result) Trace() string {
	var b strings.Builder
	for _, c := range r.Cycles {
		p := c.Plan
		if len(c.Released)+len(c.AddedNodes)+len(c.RemovedNodes) == 0 && !changes(p) && p.Fence == nil {
			continue
		}
		fmt.Fprintf(&b, "t=%v#%d queue=%d", c.Now.Sub(Epoch), c.Instant, len(c.Queue))
		for _, k := range c.Released {
			fmt.Fprintf(&b, " done(%s)", k)
		}
		for _, n := range c.RemovedNodes {
			fmt.Fprintf(&b, " node-(%s)", n)
		}
		for _, n := range c.AddedNodes {
			fmt.Fprintf(&b, " node+(%s used=%s)", n.Name, fmtRL(n.Used))
		}
		for _, x := range p.Releases {
			fmt.Fprintf(&b, " release(%s,%s)", x.Gang, x.Reason)
		}
		for _, x := range p.Shrinks {
			fmt.Fprintf(&b, " shrink(%s,-%d,for %s)", x.Gang, len(x.Workers), x.For)
		}
		for _, x := range p.Reserves {
			fmt.Fprintf(&b, " reserve(%s,%v)", x.Gang, x.Workers)
		}
		for _, x := range p.Grows {
			fmt.Fprintf(&b, " grow(%s,%v)", x.Gang, x.Workers)
		}
		for _, x := range p.Infeasible {
			fmt.Fprintf(&b, " infeasible(%s)", x.Gang)
		}
		if p.Fence != nil {
			fmt.Fprintf(&b, " fence(%s,%v)", p.Fence.Head, p.Fence.Nodes)
		}
		b.WriteString("\n")
	}
	return b.String()
}
