package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/phases"
)

// Reconciler runs one PhasedTraining: it validates the spec, observes the
// worker pods, lets the phase state machine decide (phases.Pipeline.Next),
// writes the status once, and then creates the pods of reserved gangs
// and deletes the pods of ended, shrunk or requeued ones. It never
// decides placement: the Scheduler does, through the status.
type Reconciler struct {
	Client    client.Client
	Recorder  events.EventRecorder
	Clock     clock.Clock
	Scheduler *Scheduler
	Tracer    PhaseTracer
	Metrics   *Metrics
	// Workers is how many PhasedTrainings reconcile at once (default 1).
	Workers int

	mu       sync.Mutex
	compiled map[types.UID]compiledSpec
	// heldSince is when a pipeline's status first differed from the
	// stored one in progress alone (see holdProgress).
	heldSince map[types.NamespacedName]time.Time
}

// progressBatch is how long a change of progress alone (phases' worker
// counts, a gang's start time) may wait before it is written. A gang's
// workers start and end within a few seconds of each other, and each would
// otherwise cost a write of the whole object (the API server's most
// expensive request in the scale benchmark); like the Job controller's
// batching of pod updates, progress is then written at most every
// progressBatch, while every change of state (a phase reserved, ended,
// failed, requeued) is written at once.
const progressBatch = 2 * time.Second

// podPipelineIndex indexes managed pods by their pipeline label.
const podPipelineIndex = "phasegang.dev/pipeline"

// podCreators bounds one reconcile's concurrent pod creations.
const podCreators = 16

type compiledSpec struct {
	generation int64
	pipeline   *phases.Pipeline
	errs       field.ErrorList
}

// SetupWithManager registers the reconciler: PhasedTrainings and the pods
// and services they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.compiled = map[types.UID]compiledSpec{}
	// Index managed pods by pipeline, so a reconcile reads its own pods
	// instead of filtering every pod of the namespace.
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, podPipelineIndex, func(o client.Object) []string {
		if o.GetLabels()[LabelManaged] != "true" {
			return nil
		}
		if p := o.GetLabels()[LabelPipeline]; p != "" {
			return []string{p}
		}
		return nil
	}); err != nil {
		return err
	}
	// The watches are typed sources with phasegang's own handlers, which
	// choose the reconcile's priority (enqueue.go) and drop pod updates
	// that change nothing the reconciler reads.
	return ctrl.NewControllerManagedBy(mgr).
		Named("phasedtraining").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers}).
		WatchesRawSource(source.Kind(mgr.GetCache(), &v1alpha1.PhasedTraining{}, handler.TypedEventHandler[*v1alpha1.PhasedTraining, reconcile.Request](ptEvents{}))).
		WatchesRawSource(source.Kind(mgr.GetCache(), &corev1.Pod{}, handler.TypedEventHandler[*corev1.Pod, reconcile.Request](podEvents{}))).
		// A deleted Service is created again by its pipeline's reconcile.
		WatchesRawSource(source.Kind(mgr.GetCache(), &corev1.Service{}, handler.TypedFuncs[*corev1.Service, reconcile.Request]{
			DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*corev1.Service], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if key, ok := controllerKey(e.Object); ok {
					enqueue(q, priorityNormal, key)
				}
			},
		})).
		Complete(r)
}

// compile validates and compiles a spec once per generation.
func (r *Reconciler) compile(pt *v1alpha1.PhasedTraining) (*phases.Pipeline, field.ErrorList) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.compiled[pt.UID]; ok && c.generation == pt.Generation {
		return c.pipeline, c.errs
	}
	spec := pt.DeepCopy()
	v1alpha1.SetDefaults(spec)
	pl, errs := phases.Compile(spec)
	r.compiled[pt.UID] = compiledSpec{generation: pt.Generation, pipeline: pl, errs: errs}
	return pl, errs
}

// Reconcile brings one PhasedTraining one step forward.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	pt := &v1alpha1.PhasedTraining{}
	if err := r.Client.Get(ctx, req.NamespacedName, pt); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if pt.DeletionTimestamp != nil {
		// Owner references delete the pods; the scheduler stops counting
		// the grants now and the terminating pods until they are gone.
		r.kick()
		return ctrl.Result{}, nil
	}
	now := r.Clock.Now()
	st := pt.Status.DeepCopy()
	if st.TraceID == "" {
		// The pipeline's trace identity is chosen once and persisted, so
		// a restarted controller continues the same trace.
		st.TraceID, st.TraceParentSpanID = NewTraceIdentity(pt.Annotations[TraceparentAnnotation])
	}
	pl, errs := r.compile(pt)
	if len(errs) > 0 {
		return ctrl.Result{}, r.markInvalid(ctx, pt, st, errs)
	}
	if meta.IsStatusConditionTrue(st.Conditions, string(v1alpha1.ConditionInvalid)) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(v1alpha1.ConditionInvalid), Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonSpecInvalid, Message: "the spec is valid", ObservedGeneration: pt.Generation})
	}

	pods, err := r.ownedPods(ctx, pt)
	if err != nil {
		return ctrl.Result{}, err
	}
	obs := observe(pt, pl, st, pods, now)
	step := pl.Next(st, obs, now)
	pl.Apply(st, step, now)
	recordHistory(st, step, now)
	if step.State == v1alpha1.PipelineFailed {
		stopRemaining(st, now, "stopped: "+step.Message)
	}
	setConditions(st, step, pt.Generation)
	st.State = v1alpha1.StateFromConditions(st.Conditions)
	st.ObservedGeneration = pt.Generation

	changed := !equality.Semantic.DeepEqual(&pt.Status, st)
	if changed && r.Scheduler != nil && firstStatus(&pt.Status) && quietStep(step) && r.Scheduler.Propose(pt, st) {
		// A new pipeline's first status (its first phases queued) is
		// stored by the scheduler with its first decision on them; the
		// update that brings back here creates the pods. The requeue
		// covers a scheduler that does not get to it.
		return ctrl.Result{RequeueAfter: proposalWait + time.Second, Priority: new(priorityLow)}, nil
	}
	held := r.holdProgress(req.NamespacedName, changed && progressOnly(&pt.Status, st), now)
	if changed && held == 0 {
		before := pt.DeepCopy()
		pt.Status = *st
		if err := r.Client.Status().Update(ctx, pt, client.FieldOwner(FieldManager)); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{Requeue: true}, nil
			}
			return ctrl.Result{}, fmt.Errorf("writing status: %w", err)
		}
		r.emit(before, pt, step)
		r.kick()
	}
	// Side effects only after the status that justifies them is stored.
	if err := r.syncWorkers(ctx, pt, pods); err != nil {
		return ctrl.Result{}, err
	}
	var res ctrl.Result
	if !step.Wake.IsZero() {
		// A timer (start timeout, backoff, timeout) is not urgent work
		// whatever woke this reconcile.
		res.RequeueAfter = max(step.Wake.Sub(now), time.Second)
		res.Priority = new(priorityNormal)
	}
	if held > 0 && (res.RequeueAfter == 0 || held < res.RequeueAfter) {
		res.RequeueAfter = held
		res.Priority = new(priorityLow)
	}
	logger.V(1).Info("reconciled", "state", pt.Status.State, "phase", pt.Status.CurrentPhase)
	return res, nil
}

// firstStatus: nothing has been stored yet.
func firstStatus(st *v1alpha1.PhasedTrainingStatus) bool {
	return st.ObservedGeneration == 0 && len(st.Phases) == 0 && len(st.Conditions) == 0
}

// quietStep only queues phases: no phase ended, was skipped or requeued,
// so there is no event to emit and no span to end, and no timer is set.
func quietStep(step phases.Step) bool {
	return len(step.End) == 0 && len(step.Skip) == 0 && len(step.Requeue) == 0 && step.Wake.IsZero() &&
		step.State != v1alpha1.PipelineSucceeded && step.State != v1alpha1.PipelineFailed
}

func (r *Reconciler) kick() {
	if r.Scheduler != nil {
		r.Scheduler.Trigger()
	}
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.heldSince, key)
	r.mu.Unlock()
	r.kick()
}

// holdProgress says how much longer a status that differs from the stored
// one only in progress (progressOnly) is held back (zero: write it
// now). Any other difference, or none, ends the hold.
func (r *Reconciler) holdProgress(key types.NamespacedName, progress bool, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !progress {
		delete(r.heldSince, key)
		return 0
	}
	if r.heldSince == nil {
		r.heldSince = map[types.NamespacedName]time.Time{}
	}
	since, ok := r.heldSince[key]
	if !ok {
		since = now
		r.heldSince[key] = now
	}
	if wait := since.Add(progressBatch).Sub(now); wait > 0 {
		return wait
	}
	delete(r.heldSince, key)
	return 0
}

// progressOnly reports whether the new status b differs from the stored a
// at most in progress (equal ones do too): the phases' running, succeeded
// and failed worker counts, and a start time that b sets for the first
// time. A start time is read from the pods (see observe), so one not yet
// written is found again after a restart; nothing waits on it being
// stored (the start timeout is judged on the status observe computes).
func progressOnly(a, b *v1alpha1.PhasedTrainingStatus) bool {
	if len(a.Phases) != len(b.Phases) {
		return false
	}
	strip := func(st *v1alpha1.PhasedTrainingStatus) *v1alpha1.PhasedTrainingStatus {
		c := st.DeepCopy()
		for i := range c.Phases {
			w := &c.Phases[i].Workers
			w.Running, w.Succeeded, w.Failed = 0, 0, 0
			if a.Phases[i].StartTime == nil {
				c.Phases[i].StartTime = nil
			}
		}
		return c
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}

// markInvalid records a spec the API server accepted but phasegang cannot
// run (a cycle, an expression that does not compile...): condition
// Invalid, with every error and its field path. Such a pipeline is never
// scheduled; a fixed spec (new generation) is validated again.
func (r *Reconciler) markInvalid(ctx context.Context, pt *v1alpha1.PhasedTraining, st *v1alpha1.PhasedTrainingStatus, errs field.ErrorList) error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	msg := strings.Join(msgs, "; ")
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: string(v1alpha1.ConditionInvalid), Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonSpecInvalid, Message: msg, ObservedGeneration: pt.Generation,
	})
	// Invalid is the one summary condition that holds now.
	for _, t := range []v1alpha1.ConditionType{v1alpha1.ConditionQueued, v1alpha1.ConditionRunning, v1alpha1.ConditionInfeasible} {
		if meta.IsStatusConditionTrue(st.Conditions, string(t)) {
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(t), Status: metav1.ConditionFalse,
				Reason: v1alpha1.ReasonSpecInvalid, Message: "the spec is invalid", ObservedGeneration: pt.Generation})
		}
	}
	st.State = v1alpha1.StateFromConditions(st.Conditions)
	st.ObservedGeneration = pt.Generation
	if equality.Semantic.DeepEqual(&pt.Status, st) {
		return nil
	}
	pt.Status = *st
	if err := r.Client.Status().Update(ctx, pt, client.FieldOwner(FieldManager)); err != nil {
		if apierrors.IsConflict(err) {
			return nil // the update event brings us back
		}
		return err
	}
	if r.Recorder != nil {
		r.Recorder.Eventf(pt, nil, corev1.EventTypeWarning, v1alpha1.ReasonSpecInvalid, "Validate", "%s", msg)
	}
	return nil
}

func (r *Reconciler) ownedPods(ctx context.Context, pt *v1alpha1.PhasedTraining) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, client.InNamespace(pt.Namespace),
		client.MatchingFields{podPipelineIndex: dnsLabel(pt.Name, 63)}); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if metav1.IsControlledBy(&p, pt) {
			out = append(out, p)
		}
	}
	return out, nil
}

// podInstance reads which phase attempt a managed pod belongs to.
func podInstance(p *corev1.Pod) (phases.Instance, int32, bool) {
	it, err1 := strconv.Atoi(p.Labels[LabelIteration])
	at, err2 := strconv.Atoi(p.Labels[LabelAttempt])
	idx, ok := workerIndex(p)
	if err1 != nil || err2 != nil || !ok || p.Labels[LabelPhase] == "" {
		return phases.Instance{}, 0, false
	}
	return phases.Instance{Name: p.Labels[LabelPhase], Iteration: int32(it), Attempt: int32(at)}, idx, true
}

// observe counts the workers of every Running phase attempt, reads their
// outputs, and sets StartTime once every reserved worker has started: to
// when the last of them started, read from the pods, so the time is the
// same whenever it is observed (a held write, a restarted controller).
func observe(pt *v1alpha1.PhasedTraining, pl *phases.Pipeline, st *v1alpha1.PhasedTrainingStatus, pods []corev1.Pod, now time.Time) phases.Observations {
	byInstance := map[phases.Instance]map[int32]*corev1.Pod{}
	for i := range pods {
		in, idx, ok := podInstance(&pods[i])
		if !ok {
			continue
		}
		if byInstance[in] == nil {
			byInstance[in] = map[int32]*corev1.Pod{}
		}
		byInstance[in][idx] = &pods[i]
	}
	obs := phases.Observations{}
	for i := range st.Phases {
		ps := &st.Phases[i]
		if ps.State != v1alpha1.PhaseRunning || len(ps.Assignments) == 0 {
			continue
		}
		in := phases.Instance{Name: ps.Name, Iteration: ps.Iteration, Attempt: ps.Attempt}
		o := phases.Observation{Granted: int32(len(ps.Assignments))}
		var declared []string
		if c := pl.Phase(ps.Name); c != nil {
			declared = c.Outputs()
		}
		var lastStart time.Time
		for idx := int32(0); idx < int32(len(ps.Assignments)); idx++ {
			p := byInstance[in][idx]
			if p == nil || p.DeletionTimestamp != nil || p.Spec.NodeName != ps.Assignments[idx] && p.Spec.NodeName != "" {
				// A terminating pod is an old gang's (a requeue reuses
				// names), not this one's.
				continue
			}
			switch p.Status.Phase {
			case corev1.PodRunning:
				o.Running++
			case corev1.PodSucceeded:
				o.Succeeded++
				o.Outputs = mergeOutputs(o.Outputs, p, declared)
				if idx == 0 {
					o.ChiefSucceeded = true
				}
			case corev1.PodFailed:
				o.Failed++
				o.Outputs = mergeOutputs(o.Outputs, p, declared)
				if idx == 0 {
					o.ChiefFailed = true
				}
			default:
				continue // not started yet
			}
			if t := workerStart(p); t.After(lastStart) {
				lastStart = t
			}
		}
		ps.Workers.Running, ps.Workers.Succeeded, ps.Workers.Failed = o.Running, o.Succeeded, o.Failed
		if started := o.Running + o.Succeeded + o.Failed; ps.StartTime == nil && started == o.Granted {
			if lastStart.IsZero() || lastStart.After(now) {
				lastStart = now
			}
			t := metav1.NewTime(lastStart)
			ps.StartTime = &t
		}
		obs[in] = o
	}
	return obs
}

// workerStart is when a started pod's containers started (the latest of
// them); zero when the pod does not say.
func workerStart(p *corev1.Pod) time.Time {
	var t time.Time
	for _, cs := range p.Status.ContainerStatuses {
		var s metav1.Time
		switch {
		case cs.State.Running != nil:
			s = cs.State.Running.StartedAt
		case cs.State.Terminated != nil:
			s = cs.State.Terminated.StartedAt
		}
		if s.After(t) {
			t = s.Time
		}
	}
	return t
}

// mergeOutputs reads a worker's termination message (a JSON object) and
// keeps the declared keys not already set by a lower-index worker.
func mergeOutputs(out map[string]string, p *corev1.Pod, declared []string) map[string]string {
	if len(declared) == 0 {
		return out
	}
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil || t.Message == "" {
			continue
		}
		// UseNumber keeps a number's text as the worker wrote it (a
		// float64 would round big integers).
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(t.Message))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			continue
		}
		for _, k := range declared {
			v, ok := m[k]
			if !ok {
				continue
			}
			if out == nil {
				out = map[string]string{}
			}
			if _, set := out[k]; set {
				continue
			}
			switch x := v.(type) {
			case string:
				out[k] = x
			case json.Number:
				out[k] = x.String()
			default:
				b, _ := json.Marshal(x)
				out[k] = string(b)
			}
		}
	}
	return out
}

// stopRemaining ends what a failed pipeline still has queued or running.
func stopRemaining(st *v1alpha1.PhasedTrainingStatus, now time.Time, msg string) {
	t := metav1.NewTime(now)
	for i := range st.Phases {
		ps := &st.Phases[i]
		if ps.State == v1alpha1.PhaseRunning || ps.State == v1alpha1.PhaseQueued || ps.State == v1alpha1.PhasePending {
			ps.State, ps.Message, ps.EndTime = v1alpha1.PhaseFailed, msg, &t
			ps.WaitingFor = ""
		}
	}
}

// setCondition sets one condition; an empty message repeats the reason.
func setCondition(st *v1alpha1.PhasedTrainingStatus, gen int64, t v1alpha1.ConditionType, on bool, reason, msg string) {
	status := metav1.ConditionFalse
	if on {
		status = metav1.ConditionTrue
	}
	if msg == "" {
		msg = reason
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(t), Status: status, Reason: reason, Message: msg, ObservedGeneration: gen})
}

// setConditions derives the conditions from the phases and the step.
func setConditions(st *v1alpha1.PhasedTrainingStatus, step phases.Step, gen int64) {
	set := func(t v1alpha1.ConditionType, on bool, reason, msg string) { setCondition(st, gen, t, on, reason, msg) }
	infeasible := meta.IsStatusConditionTrue(st.Conditions, string(v1alpha1.ConditionInfeasible))
	switch step.State {
	case v1alpha1.PipelineSucceeded, v1alpha1.PipelineFailed:
		if infeasible {
			set(v1alpha1.ConditionInfeasible, false, string(step.State), "the pipeline ended")
		}
	}
	switch step.State {
	case v1alpha1.PipelineSucceeded:
		set(v1alpha1.ConditionSucceeded, true, v1alpha1.ReasonAllPhasesEnded, step.Message)
		set(v1alpha1.ConditionRunning, false, v1alpha1.ReasonAllPhasesEnded, "")
		set(v1alpha1.ConditionQueued, false, v1alpha1.ReasonAllPhasesEnded, "")
		return
	case v1alpha1.PipelineFailed:
		reason := step.Reason
		if reason == "" {
			reason = v1alpha1.ReasonPhaseFailed
		}
		set(v1alpha1.ConditionFailed, true, reason, step.Message)
		set(v1alpha1.ConditionRunning, false, reason, "")
		set(v1alpha1.ConditionQueued, false, reason, "")
		return
	}
	setPhaseConditions(st, gen)
}

// setPhaseConditions derives Running and Queued from the phases of a
// pipeline that has not ended. The scheduler calls it too, so a grant's
// status write already carries them and the reconcile that follows has
// no status to write before it creates the pods.
func setPhaseConditions(st *v1alpha1.PhasedTrainingStatus, gen int64) {
	set := func(t v1alpha1.ConditionType, on bool, reason, msg string) { setCondition(st, gen, t, on, reason, msg) }
	infeasible := meta.IsStatusConditionTrue(st.Conditions, string(v1alpha1.ConditionInfeasible))
	var running, queued []string
	var waiting string
	for i := range st.Phases {
		ps := &st.Phases[i]
		switch ps.State {
		case v1alpha1.PhaseRunning:
			running = append(running, fmt.Sprintf("%s on %d workers", phaseLabel(ps), len(ps.Assignments)))
		case v1alpha1.PhaseQueued:
			queued = append(queued, phaseLabel(ps))
			if waiting == "" && ps.WaitingFor != "" {
				waiting = phaseLabel(ps) + " " + ps.WaitingFor
			}
		}
	}
	if len(running) > 0 {
		set(v1alpha1.ConditionRunning, true, v1alpha1.ReasonPhaseRunning, "running: "+strings.Join(running, ", "))
	} else {
		set(v1alpha1.ConditionRunning, false, v1alpha1.ReasonWaitingForCapacity, "no phase is running")
	}
	if len(queued) > 0 && len(running) == 0 && !infeasible {
		if waiting == "" {
			waiting = "queued: " + strings.Join(queued, ", ")
		}
		set(v1alpha1.ConditionQueued, true, v1alpha1.ReasonWaitingForCapacity, waiting)
	} else {
		set(v1alpha1.ConditionQueued, false, v1alpha1.ReasonPhaseRunning, "")
	}
}

// emit records events for what changed, after the status write.
func (r *Reconciler) emit(before, after *v1alpha1.PhasedTraining, step phases.Step) {
	if r.Recorder == nil {
		return
	}
	for _, e := range step.End {
		kind := corev1.EventTypeNormal
		if e.State == v1alpha1.PhaseFailed {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(after, nil, kind, "Phase"+string(e.State), "Run", "phase %s %s: %s", e.Name, strings.ToLower(string(e.State)), e.Message)
		if r.Metrics != nil {
			r.Metrics.Releases.Inc()
		}
	}
	for _, rq := range step.Requeue {
		r.Recorder.Eventf(after, nil, corev1.EventTypeWarning, "StartTimeout", "Run", "phase %s: %s", rq.Name, rq.Message)
		if r.Metrics != nil {
			r.Metrics.Releases.Inc()
		}
	}
	// A phase being queued has no event of its own: the scheduler's
	// Reserved says how long it waited, and a phase still waiting says why
	// in its waitingFor (one write saved per phase).
	for _, s := range step.Skip {
		r.Recorder.Eventf(after, nil, corev1.EventTypeNormal, "Skipped", "Run", "phase %s skipped: %s", s.Name, s.Message)
	}
	// The pipeline's own state is announced when it ends. Between phases it
	// goes Queued ↔ Running each time, which the phase events above (and
	// the scheduler's Reserved) already tell, at one API write per event.
	if before.Status.State != after.Status.State &&
		(after.Status.State == v1alpha1.PipelineSucceeded || after.Status.State == v1alpha1.PipelineFailed) {
		r.Recorder.Eventf(after, nil, corev1.EventTypeNormal, string(after.Status.State), "Run", "pipeline %s", strings.ToLower(string(after.Status.State)))
	}
	if r.Tracer != nil {
		r.Tracer.Step(context.Background(), before, after, step)
	}
}

func (r *Reconciler) nodeGone(ctx context.Context, name string) bool {
	if name == "" {
		return false
	}
	err := r.Client.Get(ctx, types.NamespacedName{Name: name}, &corev1.Node{})
	return apierrors.IsNotFound(err)
}

// syncWorkers makes the pods and services match the stored status: the
// pods of every reserved worker exist, pinned to its node; pods of
// workers no longer reserved are deleted.
func (r *Reconciler) syncWorkers(ctx context.Context, pt *v1alpha1.PhasedTraining, pods []corev1.Pod) error {
	type want struct {
		ps    *v1alpha1.PhaseStatus
		phase *v1alpha1.Phase
		idx   int32
		node  string
	}
	wanted := map[string]want{}
	latest := map[phases.Instance]*v1alpha1.PhaseStatus{}
	var running []*v1alpha1.PhaseStatus
	for i := range pt.Status.Phases {
		ps := &pt.Status.Phases[i]
		latest[phases.Instance{Name: ps.Name, Iteration: ps.Iteration, Attempt: ps.Attempt}] = ps
		if ps.State != v1alpha1.PhaseRunning || len(ps.Assignments) == 0 {
			continue
		}
		phase := specPhase(pt, ps.Name)
		if phase == nil {
			continue
		}
		running = append(running, ps)
		for idx, node := range ps.Assignments {
			wanted[podName(pt, ps.Name, ps.Iteration, ps.Attempt, int32(idx))] = want{ps, phase, int32(idx), node}
		}
	}
	var errs []error
	have := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		w, ok := wanted[p.Name]
		if ok && (p.Spec.NodeName == "" || p.Spec.NodeName == w.node) {
			have[p.Name] = true
			continue
		}
		if p.DeletionTimestamp != nil && !r.nodeGone(ctx, p.Spec.NodeName) {
			continue
		}
		in, _, _ := podInstance(p)
		ps := latest[in]
		terminal := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		// Keep the finished pods of ended phases for their logs; delete
		// everything else that is not reserved: the workers of a stopped
		// phase, surplus given back, and a requeued gang's old pods
		// (whose names the fresh gang reuses).
		if terminal && ps != nil && ps.State.Ended() {
			continue
		}
		opts := []client.DeleteOption{client.PropagationPolicy(metav1.DeletePropagationBackground)}
		if r.nodeGone(ctx, p.Spec.NodeName) {
			// No kubelet will ever confirm this pod's end: its node is
			// gone. Delete it at once so the fresh gang can reuse its name.
			opts = append(opts, client.GracePeriodSeconds(0))
		}
		if err := r.Client.Delete(ctx, p, opts...); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	names := make([]string, 0, len(wanted))
	for n := range wanted {
		names = append(names, n)
	}
	slices.Sort(names)
	// A gang's pods are created in parallel (bounded): they are all
	// reserved already, and a 64-worker gang should not start one round
	// trip at a time.
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, podCreators)
	if len(running) > 0 {
		// One Service for the pipeline's life (owned, so it goes with the
		// pipeline), created alongside the first pods: they resolve peers
		// only once they run. The cache answers the check: a running
		// phase is reconciled many times, and the Service only needs
		// creating once.
		svc := buildService(pt)
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{}); apierrors.IsNotFound(err) {
			wg.Go(func() {
				if err := r.Client.Create(ctx, svc, client.FieldOwner(FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
	}
	for _, n := range names {
		if have[n] {
			continue
		}
		w := wanted[n]
		pod := buildWorkerPod(pt, w.phase, w.ps, w.idx, w.node, int32(len(w.ps.Assignments)))
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := r.Client.Create(ctx, pod, client.FieldOwner(FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("creating pod %s: %w", pod.Name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("syncing workers: %w (and %d more)", errs[0], len(errs)-1)
	}
	return nil
}
