//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// A pipeline whose headless Service an earlier phasegang created with a
// selector (kube-controller-manager then keeps an Endpoints and an
// EndpointSlice for it) is upgraded when it next runs a phase: the
// selector goes, so do kube-controller-manager's objects, and phasegang's
// own EndpointSlice lists the gang.
func TestUpgradeDropsServiceSelector(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	// No node of the pool yet: the pipeline waits, so the old Service is
	// in place before its first phase runs.
	pt := create(t, wrappers.NewPT(ns, "old").Phase("train", 2).PodTemplate(worker("pool-upgrade", 1, 2, "")).Obj())
	svc := driver.BuildService(pt)
	svc.Spec.Selector = map[string]string{driver.LabelPipeline: pt.Name}
	if err := k8s.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "kube-controller-manager's Endpoints and EndpointSlice for the selector", func() (bool, error) {
		var ep corev1.Endpoints //nolint:staticcheck // the legacy object kube-controller-manager keeps
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(svc), &ep); err != nil {
			return false, err
		}
		return len(kcmSlices(t, ns, svc.Name)) == 1, nil
	})

	nodes(t, "pool-upgrade", 2, 1)
	published := map[string]bool{}
	eventually(t, 60*time.Second, "the gang listed in phasegang's EndpointSlice", func() (bool, error) {
		var slices discoveryv1.EndpointSliceList
		if err := k8s.List(ctx, &slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: driver.EndpointSliceManager}); err != nil {
			return false, err
		}
		for _, sl := range slices.Items {
			for _, e := range sl.Endpoints {
				if e.Hostname != nil {
					published[*e.Hostname] = true
				}
			}
		}
		return published["train-0"] && published["train-1"], nil
	})
	waitState(t, pt, v1alpha1.PipelineSucceeded, 60*time.Second)

	var cur corev1.Service
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(svc), &cur); err != nil {
		t.Fatal(err)
	}
	if cur.Spec.Selector != nil {
		t.Errorf("the Service still has its selector %v", cur.Spec.Selector)
	}
	eventually(t, 30*time.Second, "kube-controller-manager's Endpoints and EndpointSlices gone", func() (bool, error) {
		var ep corev1.Endpoints //nolint:staticcheck // checking that none is kept
		err := k8s.Get(ctx, client.ObjectKeyFromObject(svc), &ep)
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
		left := kcmSlices(t, ns, svc.Name)
		return apierrors.IsNotFound(err) && len(left) == 0, nil
	})
}

// kcmSlices are the EndpointSlices kube-controller-manager keeps for a
// Service.
func kcmSlices(t *testing.T, ns, service string) []discoveryv1.EndpointSlice {
	t.Helper()
	var slices discoveryv1.EndpointSliceList
	if err := k8s.List(context.Background(), &slices, client.InNamespace(ns),
		client.MatchingLabels{discoveryv1.LabelServiceName: service, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}); err != nil {
		t.Fatal(err)
	}
	return slices.Items
}
