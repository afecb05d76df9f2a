package controllers

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
)

// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=create;patch;deletecollection
// +kubebuilder:rbac:groups="",resources=endpoints,verbs=delete
// +kubebuilder:rbac:groups="",resources=services,verbs=patch

// syncPeers makes the pipeline's EndpointSlice list what
// driver.PublishPeers says, with one server-side apply when that changes.
// What it last applied per pipeline is kept in memory, so an unchanged
// list costs no request; after a restart the first sync applies once.
// Nothing is applied while there is nothing to list and nothing listed,
// so the slice is first written when a gang is complete. A slice left
// listing ended workers by a controller stopped at that instant stays
// until the pipeline's next gang is listed or the pipeline goes.
func (r *Reconciler) syncPeers(ctx context.Context, pt *v1alpha1.PhasedTraining, ws driver.WorkerSync) error {
	key := types.NamespacedName{Namespace: pt.Namespace, Name: pt.Name}
	r.mu.Lock()
	published, known := r.published[key]
	r.mu.Unlock()
	next := driver.PublishPeers(ws.Peers, published)
	if (known && slices.Equal(next, published)) || (len(next) == 0 && len(published) == 0) {
		// Unchanged; or nothing to list and nothing listed (or applied
		// by this process): a slice that does not exist lists nobody.
		return nil
	}
	if err := r.applyEndpointSlice(ctx, driver.BuildEndpointSlice(pt, driver.BuildService(pt), next)); err != nil {
		return err
	}
	r.mu.Lock()
	if r.published == nil {
		r.published = map[types.NamespacedName][]driver.Peer{}
	}
	r.published[key] = next
	r.mu.Unlock()
	return nil
}

// applyEndpointSlice server-side applies es as phasegang's field manager.
func (r *Reconciler) applyEndpointSlice(ctx context.Context, es *discoveryv1.EndpointSlice) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(es)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: obj}
	// A typed object's zero creationTimestamp converts to null; an apply
	// configuration names only the fields it sets.
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(driver.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying EndpointSlice %s: %w", es.Name, err)
	}
	return nil
}

// dropServiceSelector upgrades a Service created with a selector (by
// phasegang before it wrote its own EndpointSlice): the selector goes, and
// with it the Endpoints and EndpointSlices kube-controller-manager kept
// for it, which it leaves behind once a Service has no selector (and
// whose Endpoints it would otherwise mirror into a slice of its own).
func (r *Reconciler) dropServiceSelector(ctx context.Context, svc *corev1.Service) error {
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"selector":null}}`))
	if err := r.Client.Patch(ctx, svc, patch, client.FieldOwner(driver.FieldManager)); err != nil {
		return fmt.Errorf("dropping the selector of Service %s: %w", svc.Name, err)
	}
	ep := &corev1.Endpoints{} //nolint:staticcheck // the legacy object kube-controller-manager kept
	ep.Namespace, ep.Name = svc.Namespace, svc.Name
	if err := r.Client.Delete(ctx, ep); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Endpoints %s: %w", svc.Name, err)
	}
	err := r.Client.DeleteAllOf(ctx, &discoveryv1.EndpointSlice{}, client.InNamespace(svc.Namespace),
		client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the EndpointSlices kube-controller-manager kept for %s: %w", svc.Name, err)
	}
	return nil
}
