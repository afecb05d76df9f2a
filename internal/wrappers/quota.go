package wrappers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RQ builds a ResourceQuota.
type RQ struct{ q corev1.ResourceQuota }

// MakeQuota starts a ResourceQuota with no limits.
func MakeQuota(ns, name string) *RQ {
	return &RQ{q: corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{}},
	}}
}

// Hard sets spec.hard[name] (e.g. "requests.nvidia.com/gpu", "4").
func (b *RQ) Hard(name corev1.ResourceName, qty string) *RQ {
	b.q.Spec.Hard[name] = resource.MustParse(qty)
	return b
}

// StatusHard sets status.hard[name], as kube-controller-manager does once
// it has seen spec.hard.
func (b *RQ) StatusHard(name corev1.ResourceName, qty string) *RQ {
	if b.q.Status.Hard == nil {
		b.q.Status.Hard = corev1.ResourceList{}
	}
	b.q.Status.Hard[name] = resource.MustParse(qty)
	return b
}

// Used sets status.used[name].
func (b *RQ) Used(name corev1.ResourceName, qty string) *RQ {
	if b.q.Status.Used == nil {
		b.q.Status.Used = corev1.ResourceList{}
	}
	b.q.Status.Used[name] = resource.MustParse(qty)
	return b
}

// Scopes sets spec.scopes.
func (b *RQ) Scopes(scopes ...corev1.ResourceQuotaScope) *RQ {
	b.q.Spec.Scopes = scopes
	return b
}

// PriorityClassIn selects pods of the given PriorityClasses (spec.scopeSelector).
func (b *RQ) PriorityClassIn(classes ...string) *RQ {
	b.q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
		ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: classes,
	}}}
	return b
}

// Obj returns the quota.
func (b *RQ) Obj() corev1.ResourceQuota { return *b.q.DeepCopy() }
