package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
)

// Scheduler runs the engine's cycles against the cluster: it reads Nodes,
// Pods, ResourceQuotas, TenantQueues and PhasedTrainings from the
// manager's cache, asks the engine for a Plan, and writes each grant into
// the PhasedTraining's status (and each queue's use into its status). It never
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
	// Provisioning, if its Class is set, asks a cluster autoscaler for
	// the nodes of gangs that do not fit (provisioning.go).
	Provisioning Provisioning
	// TopologyLevels are the cluster's topology levels (node label keys,
	// top level first; --topology-levels): phases with a topology are
	// placed by them (docs/topology.md).
	TopologyLevels []string

	trigger chan struct{}
	once    sync.Once

	mu    sync.Mutex
	fence *engine.Fence
	// nominated is the last cycle's Plan.Nominated: the gangs others were
	// preempted for, which keep reclaiming until admitted (kept in memory,
	// as the fence: after a restart a preemption may be repeated once).
	nominated []engine.GangKey
	// recheck is the last plan's Recheck: when time alone may change a
	// decision (a grace period ends), so a cycle then is due.
	recheck time.Time
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
	// failedProvisioning are the ProvisioningRequests whose failure an
	// Event has told.
	failedProvisioning map[string]bool
}

type assumedStatus struct {
	baseRV string
	status v1alpha1.PhasedTrainingStatus
	at     time.Time // when it was proposed (proposals only)
	// stored, for a proposal, runs once a cycle has stored it: what the
	// reconciler does after a write of its own (the step's events and
	// spans), told the object as written.
	stored func(*v1alpha1.PhasedTraining)
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

// Propose hands the scheduler a status that the reconciler computed and
// that only queued phases: a new pipeline's first status, or a phase's end
// with its successors queued. The scheduler stores it together with its
// first decision on the queued phases: a grant, or what they wait for.
// That is one status write instead of two, and the grant does not wait for
// the round trip of the first. stored (if not nil) runs once the proposal
// is stored, with the object as written. The proposal holds for the
// object's resourceVersion it was computed from; any newer version of the
// object drops it (the reconcile that the change triggers decides again).
// A proposal already pending for this version is kept (its trace id, its
// queue time).
//
// Propose reports false, and drops the proposal, when it has waited longer
// than proposalWait with no write of the pipeline in flight: no cycle is
// getting to it, and the reconciler then stores the status itself.
func (s *Scheduler) Propose(pt *v1alpha1.PhasedTraining, st *v1alpha1.PhasedTrainingStatus, stored func(*v1alpha1.PhasedTraining)) bool {
	s.init()
	key := client.ObjectKeyFromObject(pt)
	now := s.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.proposed[key]; ok && p.baseRV == pt.ResourceVersion {
		// While a write is in flight the proposal is not given back: that
		// write may be the one storing it, and the reconciler's own would
		// only conflict with it.
		if now.Sub(p.at) > proposalWait && !s.inflight[key] {
			delete(s.proposed, key)
			return false
		}
		return true
	}
	s.proposed[key] = assumedStatus{baseRV: pt.ResourceVersion, status: *st.DeepCopy(), at: now, stored: stored}
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
	var wake <-chan time.Time // the last plan's Recheck, if before the next tick
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
		case <-wake:
		}
		if err := s.Cycle(ctx); err != nil {
			logger.Error(err, "scheduling cycle failed")
		}
		wake = nil
		if d, ok := wakeAfter(s.nextRecheck(), s.Clock.Now(), s.Interval); ok {
			wake = s.Clock.After(d)
		}
	}
}

// wakeAfter is how long to sleep until a plan's Recheck, if that comes
// before the next periodic cycle: a reclaim grace period then ends on
// time rather than up to an Interval late.
func wakeAfter(recheck, now time.Time, interval time.Duration) (time.Duration, bool) {
	if recheck.IsZero() {
		return 0, false
	}
	d := max(recheck.Sub(now), 0)
	return d, d < interval
}

// SetupWithManager registers the scheduler and the events that trigger it.
func (s *Scheduler) SetupWithManager(mgr ctrl.Manager) error {
	s.init()
	ctx := context.Background()
	// A ResourceQuota's change (raised, lowered, its used updated when
	// pods end) can admit a waiting gang; so can a TenantQueue's (created,
	// raised, joining a cohort, deleted).
	for _, obj := range []client.Object{&corev1.Node{}, &corev1.Pod{}, &v1alpha1.PhasedTraining{}, &corev1.ResourceQuota{}, &v1alpha1.TenantQueue{}} {
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
	case *corev1.ResourceQuota:
		o, ok := oldObj.(*corev1.ResourceQuota)
		return !ok || !equality.Semantic.DeepEqual(n.Spec, o.Spec) || !equality.Semantic.DeepEqual(n.Status, o.Status)
	case *v1alpha1.TenantQueue:
		// The spec decides; the status is the scheduler's own writing.
		o, ok := oldObj.(*v1alpha1.TenantQueue)
		return !ok || n.Generation != o.Generation || (n.DeletionTimestamp == nil) != (o.DeletionTimestamp == nil)
	case *v1alpha1.PhasedTraining:
		o, ok := oldObj.(*v1alpha1.PhasedTraining)
		if !ok || n.Generation != o.Generation || n.Status.ObservedGeneration != o.Status.ObservedGeneration ||
			n.Status.State != o.Status.State || len(n.Status.Phases) != len(o.Status.Phases) ||
			(n.DeletionTimestamp == nil) != (o.DeletionTimestamp == nil) {
			return true
		}
		for i := range n.Status.Phases {
			np, op := &n.Status.Phases[i], &o.Status.Phases[i]
			if np.State != op.State && !(np.State.Reserved() && op.State.Reserved()) || len(np.Assignments) != len(op.Assignments) || !np.NotBefore.Equal(op.NotBefore) {
				return true
			}
		}
		return false
	}
	return true
}

// view reads the caches, with assumed statuses laid over stale entries.
func (s *Scheduler) view(ctx context.Context) (clusterView, error) {
	// Nodes, pods and PhasedTrainings are only read (buildSnapshot copies
	// what it keeps, a change deep-copies the status it edits, write
	// deep-copies the object), so they are listed without the cache's
	// deep copy: on a 1,000-node cluster with thousands of pods that copy
	// was most of a cycle's cost, and a PhasedTraining's pod templates
	// then most of the rest.
	v, pts, err := listCluster(ctx, s.Client, client.UnsafeDisableDeepCopy)
	if err != nil {
		return v, err
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
	v.TopologyLevels = s.TopologyLevels
	return v, nil
}

// listCluster lists what a cycle reads (opts go to the lists that are
// only read); the PhasedTrainings come back as a list for the caller to
// lay its assumed statuses over.
func listCluster(ctx context.Context, c client.Reader, opts ...client.ListOption) (clusterView, *v1alpha1.PhasedTrainingList, error) {
	var v clusterView
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, opts...); err != nil {
		return v, nil, err
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, opts...); err != nil {
		return v, nil, err
	}
	var pts v1alpha1.PhasedTrainingList
	if err := c.List(ctx, &pts, opts...); err != nil {
		return v, nil, err
	}
	var classes schedulingv1.PriorityClassList
	if err := c.List(ctx, &classes); err != nil {
		return v, nil, err
	}
	var quotas corev1.ResourceQuotaList
	if err := c.List(ctx, &quotas, opts...); err != nil {
		return v, nil, err
	}
	var queues v1alpha1.TenantQueueList
	if err := c.List(ctx, &queues); err != nil {
		return v, nil, err
	}
	v.Nodes, v.Pods, v.Quotas, v.Queues = nodes.Items, pods.Items, quotas.Items, queues.Items
	v.Priorities = map[string]int32{}
	for _, pc := range classes.Items {
		v.Priorities[pc.Name] = pc.Value
	}
	return v, &pts, nil
}

// ReadSnapshot reads the cluster through c (an API client: `phasegang
// queue` runs outside the controller) and builds the snapshot a cycle
// would schedule now, with the controller's own code. The controller's
// in-memory fence and its writes still in flight are not known here.
// levels are the controller's --topology-levels.
func ReadSnapshot(ctx context.Context, c client.Reader, now time.Time, levels []string) (engine.Snapshot, *driver.Demand, error) {
	v, pts, err := listCluster(ctx, c)
	if err != nil {
		return engine.Snapshot{}, nil, err
	}
	v.TopologyLevels = levels
	for i := range pts.Items {
		v.PTs = append(v.PTs, &pts.Items[i])
	}
	snap, d := buildSnapshot(v, now, nil)
	return snap, d, nil
}

// Cycle runs one scheduling cycle: read the caches, build the snapshot,
// let the engine decide, turn its Plan into status changes (the driver's,
// as the simulator does), and send the writes. It returns once the writes
// are sent; they complete in the background (see dispatch).
func (s *Scheduler) Cycle(ctx context.Context) error {
	s.init()
	v, err := s.view(ctx)
	if err != nil {
		return err
	}
	now := s.Clock.Now()
	snap, demand := buildSnapshot(v, now, s.currentFence())
	snap.Nominated = s.currentNominated()
	plan := engine.Schedule(s.Config, snap)
	s.setFence(plan.Fence)
	s.setNominated(plan.Nominated)
	s.setRecheck(plan.Recheck)
	s.observe(snap, plan, demand, now)
	changes := driver.Changes{}
	carried := map[types.NamespacedName]bool{}
	for _, pt := range v.Proposed {
		// A proposed status is written whatever the engine decided.
		changes.Touch(pt)
		carried[client.ObjectKeyFromObject(pt)] = true
	}
	driver.ApplyPlan(plan, demand, now, changes)
	s.dispatch(ctx, changes, carried)
	s.writeQueues(ctx, v.Queues, plan.Queues)
	if s.Provisioning.Class != "" {
		s.syncProvisioning(ctx, plan, demand, now)
	}
	return nil
}

// writeQueues stores each TenantQueue's use, as the cycle left it, when
// it changed (kubectl get tq shows it). The writes go out in the
// background, like the pipelines'; one that fails or conflicts is
// retried by the next cycle, which computes the status afresh.
func (s *Scheduler) writeQueues(ctx context.Context, queues []v1alpha1.TenantQueue, usage []engine.QueueUsage) {
	logger := log.FromContext(ctx).WithName("scheduler")
	byName := map[string]engine.QueueUsage{}
	for _, u := range usage {
		byName[u.Name] = u
	}
	for i := range queues {
		tq := &queues[i]
		u, ok := byName[tq.Name]
		if !ok {
			continue
		}
		st := driver.QueueStatus(tq, u)
		if equality.Semantic.DeepEqual(&tq.Status, &st) {
			continue
		}
		obj := tq.DeepCopy()
		obj.Status = st
		s.writers <- struct{}{}
		go func() {
			defer func() { <-s.writers }()
			err := s.Client.Status().Update(ctx, obj, client.FieldOwner(driver.FieldManager))
			if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				logger.Error(err, "queue status write failed", "queue", obj.Name)
			}
		}()
	}
}

func (s *Scheduler) currentFence() *engine.Fence {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fence
}

func (s *Scheduler) setRecheck(t time.Time) {
	s.mu.Lock()
	s.recheck = t
	s.mu.Unlock()
}

func (s *Scheduler) nextRecheck() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recheck
}

func (s *Scheduler) currentNominated() []engine.GangKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nominated
}

func (s *Scheduler) setNominated(keys []engine.GangKey) {
	s.mu.Lock()
	s.nominated = keys
	s.mu.Unlock()
}

func (s *Scheduler) setFence(f *engine.Fence) {
	s.mu.Lock()
	s.fence = f
	s.mu.Unlock()
}

// observe feeds the cycle's figures to the metrics.
func (s *Scheduler) observe(snap engine.Snapshot, plan engine.Plan, d *driver.Demand, now time.Time) {
	if s.Metrics == nil {
		return
	}
	s.Metrics.observeSnapshot(snap, plan)
	s.Metrics.Shrinks.Add(float64(len(plan.Shrinks)))
	for _, rv := range plan.Reserves {
		g, ok := d.Gangs[rv.Gang]
		if !ok {
			continue
		}
		s.Metrics.Grants.Inc()
		if ps := g.Status(); ps.QueuedTime != nil {
			s.Metrics.Wait.WithLabelValues(ps.Name).Observe(now.Sub(ps.QueuedTime.Time).Seconds())
		}
	}
}

// dispatch sends each changed status in one write. Writes go out in
// parallel (bounded) and the cycle does not wait for them: a cycle that
// grants hundreds of gangs must not hold the next one behind hundreds of
// round trips. Each status is assumed before its write is sent, as
// kube-scheduler assumes a pod before binding it, so the next cycle
// already counts the grant; a write that fails drops its assumption, and
// the capacity is free again in the cycle it triggers.
//
// carried names the pipelines whose status in this cycle is a proposal:
// only their writes store it (and run its callback).
func (s *Scheduler) dispatch(ctx context.Context, changes driver.Changes, carried map[types.NamespacedName]bool) {
	logger := log.FromContext(ctx).WithName("scheduler")
	for _, k := range changes.Keys() {
		c := changes[k]
		key := client.ObjectKeyFromObject(c.Pipeline)
		proposal := carried[key]
		if !proposal && equality.Semantic.DeepEqual(&c.Pipeline.Status, c.Status) {
			continue // nothing to write
		}
		baseRV := c.Pipeline.ResourceVersion
		if !s.assume(key, baseRV, c.Status) {
			continue
		}
		s.writers <- struct{}{}
		go func() {
			defer func() { <-s.writers }()
			written, err := s.write(ctx, key, c.Pipeline, c.Status, c.Events)
			if err != nil {
				logger.Error(err, "status write failed")
			}
			stored, again := s.settle(key, baseRV, written != nil, proposal)
			if stored != nil {
				stored(written)
			}
			if again {
				s.Trigger()
			}
		}()
	}
}

// assume marks a write in flight and its status assumed; it reports false
// when a write for the pipeline is in flight already (the next cycle,
// triggered when that one returns, decides again).
func (s *Scheduler) assume(key types.NamespacedName, baseRV string, st *v1alpha1.PhasedTrainingStatus) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight[key] {
		s.skipped = true
		return false
	}
	s.inflight[key] = true
	s.assumed[key] = assumedStatus{baseRV: baseRV, status: *st.DeepCopy()}
	return true
}

// settle ends a write: a proposal it carried is stored (its callback is
// returned, to run outside the lock); a proposal on the same version that
// it did not carry (it was made while this write was in flight) is stale
// now, and dropped: the reconcile that the new version triggers decides
// again. A failed write's assumption is dropped. It reports whether
// another cycle is due.
func (s *Scheduler) settle(key types.NamespacedName, baseRV string, written, carried bool) (func(*v1alpha1.PhasedTraining), bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, key)
	var stored func(*v1alpha1.PhasedTraining)
	if p, ok := s.proposed[key]; written && ok && p.baseRV == baseRV {
		if carried {
			stored = p.stored
		}
		delete(s.proposed, key)
	}
	if a, ok := s.assumed[key]; !written && ok && a.baseRV == baseRV {
		delete(s.assumed, key)
	}
	again := s.skipped || !written
	s.skipped = false
	return stored, again
}

// statusWriters bounds the scheduler's concurrent status writes.
const statusWriters = 16

// write stores one pipeline's new status (optimistic concurrency: the
// resourceVersion the change was computed from) and records its events. It
// returns the object as stored, nil when it was not; a conflict (the
// reconciler wrote first) or a deleted pipeline is not an error: the next
// cycle decides again from what is there.
func (s *Scheduler) write(ctx context.Context, key types.NamespacedName, pt *v1alpha1.PhasedTraining, status *v1alpha1.PhasedTrainingStatus, events []driver.Event) (*v1alpha1.PhasedTraining, error) {
	obj := pt.DeepCopy()
	obj.Status = *status
	if err := s.Client.Status().Update(ctx, obj, client.FieldOwner(driver.FieldManager)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("writing the status of %s: %w", key, err)
	}
	recordEvents(s.Recorder, obj, events)
	return obj, nil
}

// recordEvents records the driver's events on a pipeline.
func recordEvents(rec events.EventRecorder, pt *v1alpha1.PhasedTraining, evs []driver.Event) {
	if rec == nil {
		return
	}
	for _, e := range evs {
		rec.Eventf(pt, nil, e.Type, e.Reason, e.Action, "%s", e.Message)
	}
}
