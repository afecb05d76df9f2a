package controllers

import (
	"context"
	"fmt"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
)

// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=podgroups,verbs=get;list;watch;create;delete

var podGroupKind = schema.GroupKind{Group: schedulingv1beta1.GroupName, Kind: "PodGroup"}

// podGroupsOn resolves Options.PodGroups: "auto" asks discovery whether
// the API server serves PodGroups (Kubernetes 1.37 does behind the
// GenericWorkload feature gate, off by default).
func podGroupsOn(mgr ctrl.Manager, mode string) (bool, error) {
	log := ctrl.Log.WithName("podgroups")
	switch mode {
	case "off":
		return false, nil
	case "on", "auto", "":
	default:
		return false, fmt.Errorf("--pod-groups must be auto, on or off, not %q", mode)
	}
	_, err := mgr.GetRESTMapper().RESTMapping(podGroupKind, schedulingv1beta1.SchemeGroupVersion.Version)
	switch {
	case err == nil:
		log.Info("the API server serves scheduling.k8s.io/v1beta1 PodGroups: every reserved gang gets one, so kube-scheduler binds its pods all or none")
		return true, nil
	case !meta.IsNoMatchError(err):
		return false, fmt.Errorf("asking discovery for PodGroups: %w", err)
	case mode == "on":
		return false, fmt.Errorf("--pod-groups=on, but the API server does not serve scheduling.k8s.io/v1beta1 PodGroups (enable the GenericWorkload feature gate): %w", err)
	}
	log.Info("the API server does not serve PodGroups: gangs are held together by their node pins alone")
	return false, nil
}

// syncPodGroups makes the pipeline's PodGroups match its reservations,
// before any pod of a new reservation is created (a pod that names a group
// that does not exist yet would wait for it, but the order keeps the
// API server's view simple).
func (r *Reconciler) syncPodGroups(ctx context.Context, pt *v1alpha1.PhasedTraining) error {
	var list schedulingv1beta1.PodGroupList
	if err := r.Client.List(ctx, &list, client.InNamespace(pt.Namespace),
		client.MatchingLabels{driver.LabelManaged: "true", driver.LabelPipeline: driver.DNSLabel(pt.Name, 63)}); err != nil {
		return fmt.Errorf("listing PodGroups: %w", err)
	}
	sync := driver.SyncPodGroups(pt, list.Items)
	for _, g := range sync.Create {
		if err := r.Client.Create(ctx, g, client.FieldOwner(driver.FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating PodGroup %s: %w", g.Name, err)
		}
	}
	for i := range sync.Delete {
		if err := r.Client.Delete(ctx, &sync.Delete[i]); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting PodGroup %s: %w", sync.Delete[i].Name, err)
		}
	}
	return nil
}
