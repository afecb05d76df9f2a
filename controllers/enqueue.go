package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
)

// Reconcile priorities. Under load the reconcile queue holds most
// pipelines at once, and a plain FIFO makes a pipeline whose gang was just
// granted wait behind hundreds of reconciles that only refresh a count.
// So what is on a pipeline's critical path goes first: a grant (its pods
// must be created) and a worker that ended (its phase may end, releasing
// capacity and queueing the next phase). Counting workers that went
// Running comes last; the queue merges those, so a gang's pods starting
// one by one cost one status write, not one each.
const (
	priorityCritical = 10
	priorityNormal   = 0
	priorityLow      = handler.LowPriority
)

// ptEvents enqueues a PhasedTraining for its own changes.
type ptEvents struct{}

var _ handler.TypedEventHandler[*v1alpha1.PhasedTraining, reconcile.Request] = ptEvents{}

// Create: a new pipeline is on its own critical path (the scheduler
// grants only what its status lists as queued), and it must not starve
// behind pipelines that are already running. A restarted controller's
// initial list is all alike, so it goes in at one level.
func (ptEvents) Create(_ context.Context, e event.TypedCreateEvent[*v1alpha1.PhasedTraining], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	p := priorityCritical
	if e.IsInInitialList {
		p = priorityNormal
	}
	enqueue(q, p, objectKey(e.Object))
}

func (ptEvents) Update(_ context.Context, e event.TypedUpdateEvent[*v1alpha1.PhasedTraining], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueue(q, ptUpdatePriority(e.ObjectOld, e.ObjectNew), objectKey(e.ObjectNew))
}

func (ptEvents) Delete(_ context.Context, e event.TypedDeleteEvent[*v1alpha1.PhasedTraining], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueue(q, priorityNormal, objectKey(e.Object))
}

func (ptEvents) Generic(_ context.Context, e event.TypedGenericEvent[*v1alpha1.PhasedTraining], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueue(q, priorityNormal, objectKey(e.Object))
}

// ptUpdatePriority: a changed grant (the scheduler reserved, grew, shrank
// or released a gang) is critical; a deletion or a new spec is normal.
// The other status changes are the reconciler's own writes (which need
// nothing more) or the scheduler's waiting messages: low, as is a resync
// that changed nothing.
func ptUpdatePriority(o, n *v1alpha1.PhasedTraining) int {
	if o.ResourceVersion == n.ResourceVersion {
		return priorityLow
	}
	if o.Generation != n.Generation || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) {
		return priorityNormal
	}
	if len(o.Status.Phases) != len(n.Status.Phases) {
		return priorityLow
	}
	for i := range n.Status.Phases {
		op, np := &o.Status.Phases[i], &n.Status.Phases[i]
		if len(op.Assignments) != len(np.Assignments) || op.State.Reserved() != np.State.Reserved() {
			return priorityCritical
		}
	}
	return priorityLow
}

// podEvents enqueues the PhasedTraining that controls a worker pod, for
// the pod changes the reconciler acts on. It ignores the rest: the
// creations it made itself, bindings, conditions.
type podEvents struct{}

var _ handler.TypedEventHandler[*corev1.Pod, reconcile.Request] = podEvents{}

func (podEvents) Create(_ context.Context, e event.TypedCreateEvent[*corev1.Pod], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	// A pod appears because the reconciler created it; a restarted
	// controller reconciles every PhasedTraining from its own initial list.
}

func (podEvents) Update(_ context.Context, e event.TypedUpdateEvent[*corev1.Pod], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if key, ok := controllerKey(e.ObjectNew); ok {
		if p, act := podUpdatePriority(e.ObjectOld, e.ObjectNew); act {
			enqueue(q, p, key)
		}
	}
}

func (podEvents) Delete(_ context.Context, e event.TypedDeleteEvent[*corev1.Pod], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if key, ok := controllerKey(e.Object); ok {
		enqueue(q, priorityNormal, key)
	}
}

func (podEvents) Generic(_ context.Context, e event.TypedGenericEvent[*corev1.Pod], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if key, ok := controllerKey(e.Object); ok {
		enqueue(q, priorityNormal, key)
	}
}

// podUpdatePriority says whether a pod update matters to its pipeline and
// how urgently: a worker that ended is critical, one being deleted is
// normal, one that went Running only changes a count, and so does one whose
// reason for not starting changed (driver.PodWaiting: the status quotes
// it). Other bindings, condition and IP changes do not matter.
func podUpdatePriority(o, n *corev1.Pod) (int, bool) {
	switch {
	case podEnded(o) != podEnded(n):
		return priorityCritical, true
	case (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil):
		return priorityNormal, true
	case o.Status.Phase != n.Status.Phase:
		return priorityLow, true
	case o.Status.PodIP != n.Status.PodIP && n.Labels[driver.LabelPeers] == "true":
		// The pipeline's EndpointSlice lists a gang once all its
		// workers have IPs (syncPeers).
		return priorityLow, true
	case n.Status.Phase == corev1.PodPending && driver.PodWaiting(o) != driver.PodWaiting(n):
		return priorityLow, true
	}
	return 0, false
}

func podEnded(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// controllerKey is the PhasedTraining controlling obj, if any.
func controllerKey(obj metav1.Object) (reconcile.Request, bool) {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != v1alpha1.Kind || ref.APIVersion != v1alpha1.GroupVersion.String() {
		return reconcile.Request{}, false
	}
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}}, true
}

func objectKey(obj metav1.Object) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
}

// enqueue adds with a priority where the queue has priorities (the
// default since controller-runtime 0.23), and plainly otherwise.
func enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], priority int, req reconcile.Request) {
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: &priority}, req)
		return
	}
	q.Add(req)
}
