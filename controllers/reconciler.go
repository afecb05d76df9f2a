package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/phases"
	"github.com/phasegang/phasegang/tracing"
)

// Reconciler runs one PhasedTraining: it validates the spec, observes the
// worker pods, lets the phase state machine decide (phases.Pipeline.Next),
// writes the status once, and then creates the pods of reserved gangs
// and deletes the pods of ended, shrunk or requeued ones. It never
// decides placement: the Scheduler does, through the status.
type Reconciler struct {
	Client client.Client
	// APIReader reads from the API server, not the cache: a refused pod
	// create asks it whether the pod exists already (see createPod). Nil:
	// no such check.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.Clock
	Scheduler *Scheduler
	Tracer    tracing.PhaseTracer
	Metrics   *Metrics
	// Workers is how many PhasedTrainings reconcile at once (default 1).
	Workers int
	// PodGroups: every reserved gang also gets a Kubernetes PodGroup that
	// its pods join (podgroup.go).
	PodGroups bool

	mu       sync.Mutex
	compiled map[types.UID]compiledSpec
	// checked is the pod check of each pipeline's spec (podcheck.go).
	checked map[types.UID]checkedSpec
	// heldSince is when a pipeline's status first differed from the
	// stored one in progress alone (see holdProgress).
	heldSince map[types.NamespacedName]time.Time
	// published is what each pipeline's EndpointSlice was last applied
	// with (peers.go).
	published map[types.NamespacedName][]driver.Peer
}

// progressBatch is how long a change of progress alone (phases' worker
// counts, a gang's start time) may wait before it is written. A gang's
// workers start and end within a few seconds of each other, and each would
// otherwise cost a write of the whole object (the API server's most
// expensive request in the scale benchmark); like the Job controller's
// batching of pod updates, progress is then written at most every
// progressBatch, while every change of state (a phase reserved, ended,
// failed, requeued; a gang Running) is written at once. So a gang whose
// workers start over a few seconds is written granted, then Running,
// with no count in between: the counts lag by up to progressBatch, the
// state never does.
const progressBatch = 10 * time.Second

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
	// Index managed pods by pipeline, so a reconcile reads its own pods
	// instead of filtering every pod of the namespace.
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, podPipelineIndex, podPipelineKey); err != nil {
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

// podPipelineKey is a managed pod's key in podPipelineIndex.
func podPipelineKey(o client.Object) []string {
	if o.GetLabels()[driver.LabelManaged] != "true" {
		return nil
	}
	if p := o.GetLabels()[driver.LabelPipeline]; p != "" {
		return []string{p}
	}
	return nil
}

// compile validates and compiles a spec once per generation.
func (r *Reconciler) compile(pt *v1alpha1.PhasedTraining) (*phases.Pipeline, field.ErrorList) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.compiled == nil {
		r.compiled = map[types.UID]compiledSpec{}
	}
	if c, ok := r.compiled[pt.UID]; ok && c.generation == pt.Generation {
		return c.pipeline, c.errs
	}
	pl, errs := driver.Compile(pt)
	r.compiled[pt.UID] = compiledSpec{generation: pt.Generation, pipeline: pl, errs: errs}
	return pl, errs
}

// Reconcile brings one PhasedTraining one step forward: read it and its
// pods, let the driver advance it (the same step the simulator takes),
// store the status, then make the pods match what is stored.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
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
	pl, errs := r.compile(pt)
	if len(errs) > 0 {
		return ctrl.Result{}, r.markInvalid(ctx, pt, errs)
	}
	if errs, err := r.podCheck(ctx, pt); err != nil || len(errs) > 0 {
		if err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.markInvalid(ctx, pt, errs)
	}
	pods, err := r.ownedPods(ctx, pt)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := r.Clock.Now()
	adv := driver.Advance(pl, pt, driver.Observe(pl, &pt.Status, pods, now), now)
	ensureTraceIdentity(pt, adv.Status)
	res, stored, err := r.store(ctx, req.NamespacedName, pt, pods, adv, now)
	if err != nil || !stored {
		return res, err
	}
	// Side effects only after the status that justifies them is stored.
	refused, err := r.syncWorkers(ctx, pt, pods)
	if len(refused) > 0 {
		return r.releaseRefused(ctx, req.NamespacedName, pl, pt, pods, refused)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if res, err = r.expirePods(ctx, pt, pods, now, res); err != nil {
		return res, err
	}
	log.FromContext(ctx).V(1).Info("reconciled", "state", pt.Status.State, "phase", pt.Status.CurrentPhase)
	return res, nil
}

// ensureTraceIdentity chooses the pipeline's trace identity once; it is
// persisted with the status, so a restarted controller continues the
// same trace.
func ensureTraceIdentity(pt *v1alpha1.PhasedTraining, st *v1alpha1.PhasedTrainingStatus) {
	if st.TraceID == "" {
		st.TraceID, st.TraceParentSpanID = tracing.NewTraceIdentity(pt.Annotations[tracing.TraceparentAnnotation])
	}
}

// store writes the advanced status, unless it is unchanged, one that only
// queued phases (the scheduler stores it with its first decision on them,
// see proposable), or progress alone that may wait (holdProgress). It
// reports whether the pods may be synced now, and when to come back (a
// timer of the step, a held write, a proposal).
func (r *Reconciler) store(ctx context.Context, key types.NamespacedName, pt *v1alpha1.PhasedTraining, pods []corev1.Pod, adv driver.Advanced, now time.Time) (ctrl.Result, bool, error) {
	changed := !equality.Semantic.DeepEqual(&pt.Status, adv.Status)
	if changed && r.proposable(ctx, pt, pods, adv) && r.Scheduler.Propose(pt, adv.Status, r.recordProposal(pt, adv)) {
		// The update that brings us back creates the pods; the requeue
		// covers a scheduler that does not get to it.
		return ctrl.Result{RequeueAfter: proposalWait + time.Second, Priority: new(priorityLow)}, false, nil
	}
	held := r.holdProgress(key, changed && progressOnly(&pt.Status, adv.Status), now)
	if changed && held == 0 {
		before := pt.DeepCopy()
		pt.Status = *adv.Status
		if err := r.Client.Status().Update(ctx, pt, client.FieldOwner(driver.FieldManager)); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{Requeue: true}, false, nil
			}
			return ctrl.Result{}, false, fmt.Errorf("writing status: %w", err)
		}
		r.recordStep(before, pt, adv)
		r.kick()
	}
	return wakeResult(adv.Step, held, now), true, nil
}

// proposable: the advanced status only queued phases, so it may wait for
// the scheduler's first decision on them and be stored with it (one write
// instead of two; Scheduler.Propose). That is a new pipeline's first
// status, or a phase's end that hands over to its successors
// (driver.HandsOver) when no pod waits for the sync that a proposal puts
// off: a worker of the ended phase still running is deleted now, and a
// parallel phase's missing worker is created now, not after a cycle.
func (r *Reconciler) proposable(ctx context.Context, pt *v1alpha1.PhasedTraining, pods []corev1.Pod, adv driver.Advanced) bool {
	switch {
	case r.Scheduler == nil:
		return false
	case firstStatus(&pt.Status):
		return driver.Quiet(adv.Step)
	case !driver.HandsOver(adv.Step):
		return false
	}
	next := pt.DeepCopy()
	next.Status = *adv.Status
	ws := driver.SyncWorkers(next, pods, r.nodeExists(ctx))
	return len(ws.Delete) == 0 && len(ws.Create) == 0
}

// recordProposal is what a proposal does once the scheduler stored it:
// the step's events, metrics and spans, as after the reconciler's own
// write.
func (r *Reconciler) recordProposal(pt *v1alpha1.PhasedTraining, adv driver.Advanced) func(*v1alpha1.PhasedTraining) {
	before := pt.DeepCopy()
	return func(stored *v1alpha1.PhasedTraining) { r.recordStep(before, stored, adv) }
}

// wakeResult comes back for the step's timer (start timeout, backoff,
// timeout: not urgent work whatever woke this reconcile) or a held write.
func wakeResult(step phases.Step, held time.Duration, now time.Time) ctrl.Result {
	var res ctrl.Result
	if !step.Wake.IsZero() {
		res.RequeueAfter = max(step.Wake.Sub(now), time.Second)
		res.Priority = new(priorityNormal)
	}
	if held > 0 && (res.RequeueAfter == 0 || held < res.RequeueAfter) {
		res.RequeueAfter = held
		res.Priority = new(priorityLow)
	}
	return res
}

// firstStatus: nothing has been stored yet.
func firstStatus(st *v1alpha1.PhasedTrainingStatus) bool {
	return st.ObservedGeneration == 0 && len(st.Phases) == 0 && len(st.Conditions) == 0
}

func (r *Reconciler) kick() {
	if r.Scheduler != nil {
		r.Scheduler.Trigger()
	}
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.heldSince, key)
	delete(r.published, key)
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
// and failed worker counts (and the Starting condition's message, which
// counts the running workers), and a start time that b sets for the first
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
		for i := range c.Conditions {
			// Starting's message is made of the starting phases' fields,
			// compared above, and their running counts: progress.
			if c.Conditions[i].Reason == v1alpha1.ReasonGangStarting {
				c.Conditions[i].Message = ""
			}
		}
		return c
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}

// markInvalid stores the driver's Invalid status of a spec the API server
// accepted but phasegang cannot run.
func (r *Reconciler) markInvalid(ctx context.Context, pt *v1alpha1.PhasedTraining, errs field.ErrorList) error {
	st, ev := driver.Invalid(pt, errs)
	ensureTraceIdentity(pt, st)
	if equality.Semantic.DeepEqual(&pt.Status, st) {
		return nil
	}
	pt.Status = *st
	if err := r.Client.Status().Update(ctx, pt, client.FieldOwner(driver.FieldManager)); err != nil {
		if apierrors.IsConflict(err) {
			return nil // the update event brings us back
		}
		return err
	}
	recordEvents(r.Recorder, pt, []driver.Event{ev})
	return nil
}

// ownedPods lists the pipeline's worker pods: those it controls.
//
// The pods are the cache's own objects, not copies (the scheduler's
// cycle lists the same way): a reconcile reads them and deletes some, but
// never writes into them. The deep copy was the largest part of a
// reconcile's CPU in the scale run, with the garbage it left.
func (r *Reconciler) ownedPods(ctx context.Context, pt *v1alpha1.PhasedTraining) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, client.InNamespace(pt.Namespace),
		client.MatchingFields{podPipelineIndex: driver.DNSLabel(pt.Name, 63)}, client.UnsafeDisableDeepCopy); err != nil {
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

// recordStep records the step's events and spans, after its status write.
func (r *Reconciler) recordStep(before, after *v1alpha1.PhasedTraining, adv driver.Advanced) {
	recordEvents(r.Recorder, after, adv.Events)
	if r.Metrics != nil {
		r.Metrics.Releases.Add(float64(len(adv.Step.End) + len(adv.Step.Requeue)))
	}
	if r.Tracer != nil {
		r.Tracer.Step(context.Background(), before, after, adv.Step)
	}
}

// nodeExists asks the cache whether a node is still there.
func (r *Reconciler) nodeExists(ctx context.Context) func(string) bool {
	return func(name string) bool {
		return !apierrors.IsNotFound(r.Client.Get(ctx, types.NamespacedName{Name: name}, &corev1.Node{}))
	}
}

// syncWorkers carries out the driver's WorkerSync: the pods of every
// reserved worker exist, pinned to its node; pods no grant covers go. It
// returns the gangs a worker pod of which the API server refused (see
// refusal), and any other error (retried).
func (r *Reconciler) syncWorkers(ctx context.Context, pt *v1alpha1.PhasedTraining, pods []corev1.Pod) (map[phases.Instance]refusal, error) {
	ws := driver.SyncWorkers(pt, pods, r.nodeExists(ctx))
	if r.PodGroups {
		if err := r.syncPodGroups(ctx, pt); err != nil {
			return nil, err
		}
	}
	errs := r.deletePods(ctx, ws.Delete)
	refused, failed := r.createWorkers(ctx, pt, ws)
	if err := r.syncPeers(ctx, pt, ws); err != nil {
		failed = append(failed, err)
	}
	if len(failed) > 0 && r.Recorder != nil {
		// A create that fails for a passing reason (a timeout, an
		// unavailable server) is retried; it must still show on the
		// pipeline, not only in this log.
		r.Recorder.Eventf(pt, nil, corev1.EventTypeWarning, "FailedCreate", "CreatePods",
			"%d worker pods could not be created (retrying): %v", len(failed), failed[0])
	}
	errs = append(errs, failed...)
	if len(errs) > 0 {
		return refused, fmt.Errorf("syncing workers: %w (and %d more)", errs[0], len(errs)-1)
	}
	return refused, nil
}

// refusal is the API server's refusal of one of a gang's worker pods.
type refusal struct {
	err error
	// forGood: the same pod can never be admitted (it is invalid, or
	// admission forbids it), rather than "not now" (an exceeded quota).
	forGood bool
}

// refusalOf classifies a failed pod create: the API server refused the
// pod (invalid, forbidden by a quota or admission), or the request failed
// on its way (a timeout, an unavailable server: nil, retried as is).
func refusalOf(err error) *refusal {
	switch {
	case PermanentRejection(err):
		return &refusal{err: err, forGood: true}
	case isQuotaRejection(err):
		return &refusal{err: err}
	}
	return nil
}

// createPod creates a worker pod. A create the API server refuses is
// checked against the API server itself: if a pod of that name exists,
// the create could not have succeeded anyway, and it is no refusal: it
// repeated one that succeeded before the cache showed it, or the pod of
// an earlier start of the same attempt (a start retry reuses the names),
// or of a worker that moved, still terminates (the reconcile its deletion
// triggers creates the pod). With the namespace's quota full, quota admission
// refuses such a create ("exceeded quota") before the store would say
// AlreadyExists; taken for a refusal, it released a gang that had all its
// pods and spent one of its start retries.
func (r *Reconciler) createPod(ctx context.Context, pod *corev1.Pod) error {
	err := r.Client.Create(ctx, pod, client.FieldOwner(driver.FieldManager))
	if err == nil || refusalOf(err) == nil || r.APIReader == nil {
		return err
	}
	var have corev1.Pod
	if r.APIReader.Get(ctx, client.ObjectKeyFromObject(pod), &have) == nil {
		return apierrors.NewAlreadyExists(corev1.Resource("pods"), pod.Name)
	}
	return err
}

// releaseRefused releases every gang the API server refused a pod of: a
// gang is all its workers or none, so the pods it got are not kept
// waiting for the one it did not (the driver requeues the attempt with
// backoff, or fails it when the pod can never be admitted, and the
// reconcile that follows deletes the created pods).
func (r *Reconciler) releaseRefused(ctx context.Context, key types.NamespacedName, pl *phases.Pipeline, pt *v1alpha1.PhasedTraining, pods []corev1.Pod, refused map[phases.Instance]refusal) (ctrl.Result, error) {
	now := r.Clock.Now()
	obs := driver.Observe(pl, &pt.Status, pods, now)
	for in, rf := range refused {
		w := obs[in]
		w.Refused, w.RefusedForGood = rf.err.Error(), rf.forGood
		obs[in] = w
	}
	adv := driver.Advance(pl, pt, obs, now)
	res, _, err := r.store(ctx, key, pt, pods, adv, now)
	return res, err
}

func (r *Reconciler) deletePods(ctx context.Context, dels []driver.PodDeletion) []error {
	var errs []error
	for _, d := range dels {
		opts := []client.DeleteOption{client.PropagationPolicy(metav1.DeletePropagationBackground)}
		if d.Now {
			opts = append(opts, client.GracePeriodSeconds(0))
		}
		if err := r.Client.Delete(ctx, d.Pod, opts...); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errs
}

// createWorkers creates the missing pods in parallel (bounded): they are
// all reserved already, and a 64-worker gang should not start one round
// trip at a time. The pipeline's Service (one for its life, owned, so it
// goes with the pipeline) is created alongside the first pods; the cache
// answers whether it exists, and whether it still has the selector of an
// older phasegang (dropServiceSelector).
func (r *Reconciler) createWorkers(ctx context.Context, pt *v1alpha1.PhasedTraining, ws driver.WorkerSync) (map[phases.Instance]refusal, []error) {
	var mu sync.Mutex
	var errs []error
	refused := map[phases.Instance]refusal{}
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	refuse := func(in phases.Instance, rf refusal) {
		mu.Lock()
		if _, ok := refused[in]; !ok {
			refused[in] = rf
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	if ws.Service {
		svc := driver.BuildService(pt)
		var have corev1.Service
		switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(svc), &have); {
		case apierrors.IsNotFound(err):
			wg.Go(func() {
				if err := r.Client.Create(ctx, svc, client.FieldOwner(driver.FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
					fail(err)
				}
			})
		case err == nil && have.Spec.Selector != nil && metav1.IsControlledBy(&have, pt):
			wg.Go(func() {
				if err := r.dropServiceSelector(ctx, &have); err != nil {
					fail(err)
				}
			})
		}
	}
	sem := make(chan struct{}, podCreators)
	for _, w := range ws.Create {
		pod := driver.BuildWorkerPod(pt, w.Phase, w.Status, w.Index, w.Node, w.WorldSize)
		if r.PodGroups {
			driver.JoinPodGroup(pod, pt, w.Status)
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := r.createPod(ctx, pod)
			switch {
			case err == nil || apierrors.IsAlreadyExists(err):
			case refusalOf(err) != nil:
				refuse(phases.Instance{Name: w.Status.Name, Iteration: w.Status.Iteration, Attempt: w.Status.Attempt}, *refusalOf(err))
			default:
				fail(fmt.Errorf("creating pod %s: %w", pod.Name, err))
			}
		})
	}
	wg.Wait()
	return refused, errs
}
