package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
)

// Scheduler runs the engine's cycles against the cluster: it reads Nodes,
// Pods and PhasedTrainings from the manager's cache, asks the engine for a
// Plan, and writes each grant into the PhasedTraining's status. It never
// creates pods: the reconciler does, once the grant is in the status, so a
// grant is always persisted before anything uses it.
//
// It is the only writer of reservations, so it runs once per cluster
// (leader election).
type Scheduler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Config   engine.Config
	Clock    clock.WithTicker
	// Interval bounds how long the scheduler sleeps without a trigger
	// (backoffs and the starvation bound are time-based).
	Interval time.Duration
	Metrics  *Metrics

	trigger chan struct{}
	once    sync.Once

	mu    sync.Mutex
	fence *engine.Fence
	// assumed holds statuses this scheduler wrote that the cache may not
	// show yet, keyed by object, with the resourceVersion the write was
	// based on: while the cache still shows that version, the written
	// status is used instead, so a stale cache never grants twice.
	assumed map[types.NamespacedName]assumedStatus
	// proposed holds new pipelines' first statuses, computed by the
	// reconciler and not yet stored (see Propose), keyed and based like
	// assumed.
	proposed map[types.NamespacedName]assumedStatus
	// inflight holds the pipelines whose status write has not returned:
	// a cycle leaves them alone (their assumed status stands for them),
	// and skipped says one did, so the next write to return triggers
	// another cycle.
	inflight map[types.NamespacedName]bool
	skipped  bool
	// writers bounds the status writes in flight, across cycles.
	writers chan struct{}
}

type assumedStatus struct {
	baseRV string
	status v1alpha1.PhasedTrainingStatus
	at     time.Time // when it was proposed (proposals only)
}

// proposalWait is how long a proposed first status may wait for a cycle
// to store it before the reconciler stores it itself.
const proposalWait = 10 * time.Second

// debounce gathers a burst of events (a gang's pods, many pipelines
// created at once) into one cycle.
const debounce = 100 * time.Millisecond

// NeedLeaderElection: only the leader reserves capacity.
func (s *Scheduler) NeedLeaderElection() bool { return true }

func (s *Scheduler) init() {
	s.once.Do(func() {
		s.trigger = make(chan struct{}, 1)
		s.assumed = map[types.NamespacedName]assumedStatus{}
		s.proposed = map[types.NamespacedName]assumedStatus{}
		s.inflight = map[types.NamespacedName]bool{}
		s.writers = make(chan struct{}, statusWriters)
		if s.Clock == nil {
			s.Clock = clock.RealClock{}
		}
		if s.Interval == 0 {
			s.Interval = 5 * time.Second
		}
	})
}

// Trigger asks for a cycle soon. It never blocks.
func (s *Scheduler) Trigger() {
	s.init()
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// Propose hands the scheduler a new pipeline's first status (its first
// phases queued, nothing else done) to store together with the scheduler's
// first decision on it: a grant, or what the phase waits for. That is one
// status write instead of two, and the grant does not wait for the round
// trip of the first. The proposal holds for the object's resourceVersion
// it was computed from; any newer version of the object drops it (the
// reconcile that the change triggers decides again). A proposal already
// pending for this version is kept (its trace id, its queue time).
//
// Propose reports false, and drops the proposal, when it has waited longer
// than proposalWait: no cycle is getting to it, and the reconciler then
// stores the status itself.
func (s *Scheduler) Propose(pt *v1alpha1.PhasedTraining, st *v1alpha1.PhasedTrainingStatus) bool {
	s.init()
	key := client.ObjectKeyFromObject(pt)
	now := s.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.proposed[key]; ok && p.baseRV == pt.ResourceVersion {
		if now.Sub(p.at) > proposalWait {
			delete(s.proposed, key)
			return false
		}
		return true
	}
	s.proposed[key] = assumedStatus{baseRV: pt.ResourceVersion, status: *st.DeepCopy(), at: now}
	s.Trigger()
	return true
}

// Start runs cycles until ctx ends: on a trigger (debounced briefly, so a
// burst of pod events makes one cycle) or every Interval.
func (s *Scheduler) Start(ctx context.Context) error {
	s.init()
	logger := log.FromContext(ctx).WithName("scheduler")
	ticker := s.Clock.NewTicker(s.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.trigger:
			select {
			case <-ctx.Done():
				return nil
			case <-s.Clock.After(debounce):
			}
		case <-ticker.C():
		}
		if err := s.Cycle(ctx); err != nil {
			logger.Error(err, "scheduling cycle failed")
		}
	}
}

// SetupWithManager registers the scheduler and the events that trigger it.
func (s *Scheduler) SetupWithManager(mgr ctrl.Manager) error {
	s.init()
	ctx := context.Background()
	for _, obj := range []client.Object{&corev1.Node{}, &corev1.Pod{}, &v1alpha1.PhasedTraining{}} {
		inf, err := mgr.GetCache().GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(triggerHandler{s}); err != nil {
			return err
		}
	}
	return mgr.Add(s)
}

type triggerHandler struct{ s *Scheduler }

func (h triggerHandler) OnAdd(any, bool) { h.s.Trigger() }
func (h triggerHandler) OnDelete(any)    { h.s.Trigger() }

// OnUpdate triggers a cycle only for changes that can change a decision.
// Most updates cannot: a kubelet's (or kwok's) node heartbeat, a worker
// pod going Running, a status write that changed no phase's state. On a
// 1,000-node cluster heartbeats alone would otherwise start dozens of
// cycles a second.
func (h triggerHandler) OnUpdate(oldObj, newObj any) {
	if relevantUpdate(oldObj, newObj) {
		h.s.Trigger()
	}
}

func relevantUpdate(oldObj, newObj any) bool {
	switch n := newObj.(type) {
	case *corev1.Node:
		o, ok := oldObj.(*corev1.Node)
		return !ok || n.Spec.Unschedulable != o.Spec.Unschedulable ||
			!equality.Semantic.DeepEqual(n.Spec.Taints, o.Spec.Taints) ||
			!equality.Semantic.DeepEqual(n.Labels, o.Labels) ||
			!equality.Semantic.DeepEqual(n.Status.Allocatable, o.Status.Allocatable) ||
			(n.DeletionTimestamp == nil) != (o.DeletionTimestamp == nil)
	case *corev1.Pod:
		o, ok := oldObj.(*corev1.Pod)
		if !ok {
			return true
		}
		terminal := func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		}
		// Capacity changes when a pod is bound, ends or starts going away.
		return n.Spec.NodeName != o.Spec.NodeName || terminal(n) != terminal(o) ||
			(n.DeletionTimestamp == nil) != (o.DeletionTimestamp == nil)
	case *v1alpha1.PhasedTraining:
		o, ok := oldObj.(*v1alpha1.PhasedTraining)
		if !ok || n.Generation != o.Generation || n.Status.ObservedGeneration != o.Status.ObservedGeneration ||
			n.Status.State != o.Status.State || len(n.Status.Phases) != len(o.Status.Phases) ||
			(n.DeletionTimestamp == nil) != (o.DeletionTimestamp == nil) {
			return true
		}
		for i := range n.Status.Phases {
			np, op := &n.Status.Phases[i], &o.Status.Phases[i]
			if np.State != op.State || len(np.Assignments) != len(op.Assignments) || !np.NotBefore.Equal(op.NotBefore) {
				return true
			}
		}
		return false
	}
	return true
}

// view reads the caches, with assumed statuses laid over stale entries.
func (s *Scheduler) view(ctx context.Context) (clusterView, error) {
	var v clusterView
	// Nodes, pods and PhasedTrainings are only read (buildSnapshot copies
	// what it keeps, a change deep-copies the status it edits, write
	// deep-copies the object), so they are listed without the cache's
	// deep copy: on a 1,000-node cluster with thousands of pods that copy
	// was most of a cycle's cost, and a PhasedTraining's pod templates
	// then most of the rest.
	var nodes corev1.NodeList
	if err := s.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return v, err
	}
	var pods corev1.PodList
	if err := s.Client.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
		return v, err
	}
	var pts v1alpha1.PhasedTrainingList
	if err := s.Client.List(ctx, &pts, client.UnsafeDisableDeepCopy); err != nil {
		return v, err
	}
	var classes schedulingv1.PriorityClassList
	if err := s.Client.List(ctx, &classes); err != nil {
		return v, err
	}
	v.Nodes, v.Pods = nodes.Items, pods.Items
	v.Priorities = map[string]int32{}
	for _, c := range classes.Items {
		v.Priorities[c.Name] = c.Value
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[types.NamespacedName]bool{}
	for i := range pts.Items {
		// A shallow copy of the cache's object: fields may be replaced
		// (the assumed status below), never written into.
		pt := &pts.Items[i]
		key := client.ObjectKeyFromObject(pt)
		seen[key] = true
		if a, ok := s.assumed[key]; ok {
			if pt.ResourceVersion == a.baseRV {
				pt.Status = *a.status.DeepCopy()
			} else {
				delete(s.assumed, key)
			}
		}
		if p, ok := s.proposed[key]; ok {
			switch {
			case pt.ResourceVersion != p.baseRV:
				delete(s.proposed, key)
			case !s.inflight[key]:
				pt.Status = *p.status.DeepCopy()
				v.Proposed = append(v.Proposed, pt)
			}
		}
		v.PTs = append(v.PTs, pt)
	}
	for key := range s.assumed {
		if !seen[key] {
			delete(s.assumed, key)
		}
	}
	for key := range s.proposed {
		if !seen[key] {
			delete(s.proposed, key)
		}
	}
	return v, nil
}

// Cycle runs one scheduling cycle. It returns once its status writes are
// sent; they complete in the background (see the end of Cycle).
func (s *Scheduler) Cycle(ctx context.Context) error {
	s.init()
	v, err := s.view(ctx)
	if err != nil {
		return err
	}
	now := s.Clock.Now()
	s.mu.Lock()
	fence := s.fence
	s.mu.Unlock()
	snap, refs := buildSnapshot(v, now, fence)
	plan := engine.Schedule(s.Config, snap)
	s.mu.Lock()
	s.fence = plan.Fence
	s.mu.Unlock()
	if s.Metrics != nil {
		s.Metrics.observeSnapshot(snap, plan)
	}

	// Collect every change per pipeline, then write each status once.
	type change struct {
		pt     *v1alpha1.PhasedTraining
		status *v1alpha1.PhasedTrainingStatus
		events []pendingEvent
	}
	changes := map[types.NamespacedName]*change{}
	touchPT := func(pt *v1alpha1.PhasedTraining) *change {
		key := client.ObjectKeyFromObject(pt)
		c, ok := changes[key]
		if !ok {
			c = &change{pt: pt, status: pt.Status.DeepCopy()}
			changes[key] = c
		}
		return c
	}
	touch := func(ref gangRef) *change { return touchPT(ref.pt) }
	// A proposed first status is written whatever the engine decided.
	for _, pt := range v.Proposed {
		touchPT(pt)
	}
	stamp := metav1.NewTime(now)
	for _, rel := range plan.Releases {
		ref, ok := refs[rel.Gang]
		if !ok || rel.Reason != engine.ReleaseNodeLost {
			continue
		}
		// A lost node breaks the gang: queue the same attempt again for a
		// fresh gang; it keeps the pipeline's age, and the job's retries
		// are not spent on the cluster's fault.
		c := touch(ref)
		ps := &c.status.Phases[ref.index]
		ps.AddHistory(v1alpha1.PhaseEvent{Time: stamp, Type: v1alpha1.PhaseEventNodeLost, Message: rel.Message})
		ps.State, ps.Message = v1alpha1.PhaseQueued, rel.Message+"; the gang was released and queued again"
		ps.Assignments, ps.Reservation, ps.ReservedTime, ps.StartTime = nil, nil, nil, nil
		ps.Workers.Granted, ps.Workers.Running = 0, 0
		ps.QueuedTime = &stamp
		c.events = append(c.events, pendingEvent{corev1.EventTypeWarning, "NodeLost", fmt.Sprintf("phase %s: %s; gang released and queued again", phaseLabel(ps), rel.Message)})
	}
	for _, shr := range plan.Shrinks {
		ref, ok := refs[shr.Gang]
		if !ok {
			continue
		}
		c := touch(ref)
		ps := &c.status.Phases[ref.index]
		ps.Assignments = ps.Assignments[:len(ps.Assignments)-len(shr.Workers)]
		setReservation(ps)
		ps.AddHistory(v1alpha1.PhaseEvent{Time: stamp, Type: v1alpha1.PhaseEventShrink, Workers: ps.Workers.Granted,
			Message: fmt.Sprintf("gave back %d surplus workers for %s", len(shr.Workers), shr.For.Pipeline)})
		c.events = append(c.events, pendingEvent{corev1.EventTypeNormal, "Shrunk", fmt.Sprintf("phase %s gave back %d surplus workers (now %d) for %s", phaseLabel(ps), len(shr.Workers), len(ps.Assignments), shr.For.Pipeline)})
		if s.Metrics != nil {
			s.Metrics.Shrinks.Inc()
		}
	}
	for _, rv := range plan.Reserves {
		ref, ok := refs[rv.Gang]
		if !ok {
			continue
		}
		c := touch(ref)
		ps := &c.status.Phases[ref.index]
		ps.State = v1alpha1.PhaseRunning
		ps.Assignments = make([]string, len(rv.Workers))
		for _, w := range rv.Workers {
			ps.Assignments[w.Index] = w.Node
		}
		setReservation(ps)
		ps.ReservedTime, ps.StartTime, ps.NotBefore = &stamp, nil, nil
		ps.AddHistory(v1alpha1.PhaseEvent{Time: stamp, Type: v1alpha1.PhaseEventReserved, Workers: ps.Workers.Granted, Message: ps.WaitingFor})
		ps.WaitingFor, ps.Message = "", ""
		meta.SetStatusCondition(&c.status.Conditions, metav1.Condition{Type: string(v1alpha1.ConditionInfeasible), Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonGangReserved, Message: "the gang fits"})
		waited := ""
		if ps.QueuedTime != nil {
			waited = fmt.Sprintf(" after %s queued", now.Sub(ps.QueuedTime.Time).Round(time.Second))
		}
		c.events = append(c.events, pendingEvent{corev1.EventTypeNormal, "Reserved", fmt.Sprintf("phase %s: reserved %d workers on %s%s", phaseLabel(ps), len(rv.Workers), reservationText(ps.Reservation), waited)})
		if s.Metrics != nil {
			s.Metrics.Grants.Inc()
			if ps.QueuedTime != nil {
				s.Metrics.Wait.WithLabelValues(ps.Name).Observe(now.Sub(ps.QueuedTime.Time).Seconds())
			}
		}
	}
	for _, g := range plan.Grows {
		ref, ok := refs[g.Gang]
		if !ok {
			continue
		}
		c := touch(ref)
		ps := &c.status.Phases[ref.index]
		for _, w := range g.Workers {
			if int(w.Index) == len(ps.Assignments) {
				ps.Assignments = append(ps.Assignments, w.Node)
			}
		}
		setReservation(ps)
		ps.AddHistory(v1alpha1.PhaseEvent{Time: stamp, Type: v1alpha1.PhaseEventGrow, Workers: ps.Workers.Granted,
			Message: fmt.Sprintf("grew by %d workers", len(g.Workers))})
		c.events = append(c.events, pendingEvent{corev1.EventTypeNormal, "Grown", fmt.Sprintf("phase %s grew by %d workers (now %d)", phaseLabel(ps), len(g.Workers), len(ps.Assignments))})
	}
	for _, w := range plan.Waiting {
		ref, ok := refs[w.Gang]
		if !ok {
			continue
		}
		msg := w.Message()
		if ref.pt.Status.Phases[ref.index].WaitingFor == msg {
			continue
		}
		c := touch(ref)
		c.status.Phases[ref.index].WaitingFor = msg
	}
	for _, inf := range plan.Infeasible {
		ref, ok := refs[inf.Gang]
		if !ok {
			continue
		}
		ps := &ref.pt.Status.Phases[ref.index]
		cond := meta.FindStatusCondition(ref.pt.Status.Conditions, string(v1alpha1.ConditionInfeasible))
		msg := fmt.Sprintf("phase %s can never fit: %s", phaseLabel(ps), inf.Message)
		if cond != nil && cond.Status == metav1.ConditionTrue && cond.Message == msg {
			continue
		}
		c := touch(ref)
		c.status.Phases[ref.index].WaitingFor = "never fits: " + inf.Message
		meta.SetStatusCondition(&c.status.Conditions, metav1.Condition{
			Type: string(v1alpha1.ConditionInfeasible), Status: metav1.ConditionTrue,
			Reason: v1alpha1.ReasonGangNeverFits, Message: msg, ObservedGeneration: ref.pt.Generation,
		})
		c.events = append(c.events, pendingEvent{corev1.EventTypeWarning, v1alpha1.ReasonGangNeverFits, msg})
	}
	// A pipeline marked Infeasible whose gangs now fit (nodes were added)
	// goes back to waiting.
	stillInfeasible := map[types.NamespacedName]bool{}
	for _, inf := range plan.Infeasible {
		if ref, ok := refs[inf.Gang]; ok {
			stillInfeasible[client.ObjectKeyFromObject(ref.pt)] = true
		}
	}
	for _, ref := range refs {
		key := client.ObjectKeyFromObject(ref.pt)
		if stillInfeasible[key] || !meta.IsStatusConditionTrue(ref.pt.Status.Conditions, string(v1alpha1.ConditionInfeasible)) {
			continue
		}
		c := touch(ref)
		if meta.IsStatusConditionTrue(c.status.Conditions, string(v1alpha1.ConditionInfeasible)) {
			meta.SetStatusCondition(&c.status.Conditions, metav1.Condition{Type: string(v1alpha1.ConditionInfeasible), Status: metav1.ConditionFalse,
				Reason: v1alpha1.ReasonWaitingForCapacity, Message: "the gang fits the cluster now", ObservedGeneration: ref.pt.Generation})
		}
	}

	// The conditions follow the phases; the reconciler derives the same
	// ones, so it has nothing to write when it picks the grant up.
	for _, c := range changes {
		if !conditionsSettled(c.status) {
			setPhaseConditions(c.status, c.pt.Generation)
		}
	}

	keys := make([]types.NamespacedName, 0, len(changes))
	for k := range changes {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int {
		if a.Namespace != b.Namespace {
			return strings.Compare(a.Namespace, b.Namespace)
		}
		return strings.Compare(a.Name, b.Name)
	})
	// Writes go out in parallel (bounded) and the cycle does not wait for
	// them: a cycle that grants hundreds of gangs must not hold the next
	// one behind hundreds of round trips. Each status is assumed before
	// its write is sent, as kube-scheduler assumes a pod before binding
	// it, so the next cycle already counts the grant; a write that fails
	// drops its assumption, and the capacity is free again in the cycle
	// it triggers.
	logger := log.FromContext(ctx).WithName("scheduler")
	for _, key := range keys {
		c := changes[key]
		c.status.State = v1alpha1.StateFromConditions(c.status.Conditions)
		baseRV := c.pt.ResourceVersion
		s.mu.Lock()
		if s.inflight[key] {
			s.skipped = true
			s.mu.Unlock()
			continue
		}
		s.inflight[key] = true
		s.assumed[key] = assumedStatus{baseRV: baseRV, status: *c.status.DeepCopy()}
		s.mu.Unlock()
		s.writers <- struct{}{}
		go func() {
			defer func() { <-s.writers }()
			written, err := s.write(ctx, key, c.pt, c.status, c.events)
			s.mu.Lock()
			delete(s.inflight, key)
			if p, ok := s.proposed[key]; written && ok && p.baseRV == baseRV {
				delete(s.proposed, key)
			}
			if a, ok := s.assumed[key]; !written && ok && a.baseRV == baseRV {
				delete(s.assumed, key)
			}
			again := s.skipped || !written
			s.skipped = false
			s.mu.Unlock()
			if err != nil {
				logger.Error(err, "status write failed")
			}
			if again {
				s.Trigger()
			}
		}()
	}
	return nil
}

// statusWriters bounds the scheduler's concurrent status writes.
const statusWriters = 16

// write stores one pipeline's new status (optimistic concurrency: the
// resourceVersion the change was computed from) and emits its events. It
// reports whether the status was stored; a conflict (the reconciler wrote
// first) or a deleted pipeline is not an error: the next cycle decides
// again from what is there.
func (s *Scheduler) write(ctx context.Context, key types.NamespacedName, pt *v1alpha1.PhasedTraining, status *v1alpha1.PhasedTrainingStatus, events []pendingEvent) (bool, error) {
	obj := pt.DeepCopy()
	obj.Status = *status
	if err := s.Client.Status().Update(ctx, obj, client.FieldOwner(FieldManager)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("writing the status of %s: %w", key, err)
	}
	if s.Recorder != nil {
		for _, e := range events {
			s.Recorder.Eventf(obj, nil, e.kind, e.reason, "Schedule", e.message)
		}
	}
	return true, nil
}

// conditionsSettled: the reconciler owns a finished or invalid pipeline's
// conditions.
func conditionsSettled(st *v1alpha1.PhasedTrainingStatus) bool {
	s := v1alpha1.StateFromConditions(st.Conditions)
	return pipelineEnded(s) || s == v1alpha1.PipelineInvalid
}

type pendingEvent struct {
	kind, reason, message string
}

// setReservation derives the node → workers summary from the assignments.
func setReservation(ps *v1alpha1.PhaseStatus) {
	ps.Reservation = map[string]int32{}
	for _, n := range ps.Assignments {
		ps.Reservation[n]++
	}
	ps.Workers.Granted = int32(len(ps.Assignments))
}

func reservationText(r map[string]int32) string {
	nodes := make([]string, 0, len(r))
	for n := range r {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	out := ""
	for i, n := range nodes {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s×%d", n, r[n])
	}
	return out
}

func phaseLabel(ps *v1alpha1.PhaseStatus) string {
	s := ps.Name
	if ps.Iteration > 0 {
		s += fmt.Sprintf(" (iteration %d)", ps.Iteration)
	}
	if ps.Attempt > 0 {
		s += fmt.Sprintf(" (attempt %d)", ps.Attempt)
	}
	return s
}
