package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
)

// +kubebuilder:rbac:groups=autoscaling.x-k8s.io,resources=provisioningrequests,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=podtemplates,verbs=get;list;watch;create;delete

// Provisioning configures ProvisioningRequests for gangs that do not fit
// the current nodes (driver/provisioning.go); Class "" turns them off.
type Provisioning struct {
	// Class is the requests' provisioningClassName.
	Class string
	// Delay is how long a gang waits for capacity before one is made.
	Delay time.Duration
}

var provisioningGVK = schema.GroupVersionKind{Group: driver.ProvisioningGroup, Version: driver.ProvisioningVersion, Kind: driver.ProvisioningKind}

// syncProvisioning makes the cluster's ProvisioningRequests (and their
// PodTemplates) match the cycle's WantedProvisioning: creates the missing
// ones, deletes those no gang wants any more, and says once, with an
// Event, when the autoscaler gave up on one. Errors are logged; the next
// cycle tries again.
func (s *Scheduler) syncProvisioning(ctx context.Context, plan engine.Plan, d *driver.Demand, now time.Time) {
	logger := log.FromContext(ctx).WithName("provisioning")
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(provisioningGVK.GroupVersion().WithKind(driver.ProvisioningKind + "List"))
	if err := s.Client.List(ctx, &list, client.MatchingLabels{driver.LabelManaged: "true"}); err != nil {
		logger.Error(err, "listing ProvisioningRequests (is cluster-autoscaler's CRD installed?)")
		return
	}
	have := map[string]*unstructured.Unstructured{}
	names := map[string]bool{}
	for i := range list.Items {
		key := list.Items[i].GetNamespace() + "/" + list.Items[i].GetName()
		have[key], names[key] = &list.Items[i], true
	}
	wanted := map[string]bool{}
	for _, w := range driver.WantedProvisioning(plan, d, s.Provisioning.Class, s.Provisioning.Delay, now, names) {
		key := w.Request.GetNamespace() + "/" + w.Request.GetName()
		wanted[key] = true
		g := d.Gangs[w.Gang]
		if cur, ok := have[key]; ok {
			if _, failed, msg := driver.ProvisioningState(cur); failed && s.noteFailed(key) {
				s.Recorder.Eventf(g.Pipeline, nil, corev1.EventTypeWarning, "ProvisioningFailed", "Provision",
					"phase %s: the cluster autoscaler could not add nodes for the gang (ProvisioningRequest %s): %s", driver.PhaseLabel(g.Status()), w.Request.GetName(), msg)
			}
			continue
		}
		if err := s.Client.Create(ctx, w.Template, client.FieldOwner(driver.FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
			logger.Error(err, "creating PodTemplate", "name", key)
			continue
		}
		if err := s.Client.Create(ctx, w.Request, client.FieldOwner(driver.FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
			logger.Error(err, "creating ProvisioningRequest", "name", key)
			continue
		}
		s.Recorder.Eventf(g.Pipeline, nil, corev1.EventTypeNormal, "ProvisioningRequested", "Provision",
			"phase %s does not fit the current nodes: asked the cluster autoscaler for %d × %s at once (ProvisioningRequest %s, class %s)",
			driver.PhaseLabel(g.Status()), requestMin(d, w.Gang), engine.FormatResources(requestFootprint(d, w.Gang)), w.Request.GetName(), s.Provisioning.Class)
	}
	for key, cur := range have {
		if wanted[key] || cur.GetDeletionTimestamp() != nil {
			continue
		}
		if err := s.Client.Delete(ctx, cur); err != nil && !apierrors.IsNotFound(err) {
			logger.Error(err, "deleting ProvisioningRequest", "name", key)
			continue
		}
		tmpl := &corev1.PodTemplate{}
		tmpl.Namespace, tmpl.Name = cur.GetNamespace(), cur.GetName()
		if err := s.Client.Delete(ctx, tmpl); err != nil && !apierrors.IsNotFound(err) {
			logger.Error(err, "deleting PodTemplate", "name", key)
		}
		s.forgetFailed(key)
	}
}

// noteFailed reports whether a failed request is new to this scheduler.
func (s *Scheduler) noteFailed(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failedProvisioning == nil {
		s.failedProvisioning = map[string]bool{}
	}
	if s.failedProvisioning[key] {
		return false
	}
	s.failedProvisioning[key] = true
	return true
}

func (s *Scheduler) forgetFailed(key string) {
	s.mu.Lock()
	delete(s.failedProvisioning, key)
	s.mu.Unlock()
}

func requestMin(d *driver.Demand, key engine.GangKey) int32 {
	for _, r := range d.Queue {
		if r.Gang == key {
			return r.Min
		}
	}
	return 0
}

func requestFootprint(d *driver.Demand, key engine.GangKey) engine.ResourceList {
	for _, r := range d.Queue {
		if r.Gang == key {
			return r.Footprint
		}
	}
	return nil
}
