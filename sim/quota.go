package sim

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
)

// knownScopes are the quota scopes the engine evaluates for pods.
var knownScopes = []corev1.ResourceQuotaScope{
	corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
	corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort,
	corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity,
	corev1.ResourceQuotaScopeVolumeAttributesClass,
}

// validateQuotas checks the scenario's quotas: each named, unique per
// namespace, limiting at least one resource that pods use, with scopes
// the engine knows.
func (sc *Scenario) validateQuotas() []error {
	var errs []error
	seen := map[string]bool{}
	for i := range sc.Quotas {
		q := &sc.Quotas[i]
		path := fmt.Sprintf("quotas[%d]", i)
		if q.Name == "" {
			errs = append(errs, fmt.Errorf("%s.metadata.name: required", path))
		}
		key := quotaNamespace(q) + "/" + q.Name
		if seen[key] {
			errs = append(errs, fmt.Errorf("%s.metadata.name: quota %s appears twice", path, key))
		}
		seen[key] = true
		pods := false
		for name, qty := range q.Spec.Hard {
			if qty.Sign() < 0 {
				errs = append(errs, fmt.Errorf("%s.spec.hard[%s]: must not be negative", path, name))
			}
			if _, ok := driver.QuotaResource(name); ok {
				pods = true
			}
		}
		if !pods {
			errs = append(errs, fmt.Errorf("%s.spec.hard: no resource that limits pods (e.g. requests.nvidia.com/gpu, requests.cpu, limits.memory, pods)", path))
		}
		for _, r := range driver.QuotaScopes(&q.Spec) {
			if !slices.Contains(knownScopes, r.ScopeName) {
				errs = append(errs, fmt.Errorf("%s.spec: unknown scope %q (want one of %v)", path, r.ScopeName, knownScopes))
			}
		}
	}
	return errs
}

func quotaNamespace(q *corev1.ResourceQuota) string {
	if q.Namespace == "" {
		return "default"
	}
	return q.Namespace
}

// engineQuotas are the scenario's quotas as the engine sees them. The
// virtual cluster has no pods besides the grants', which the engine
// charges itself: status.used stands for the rest.
func (sc *Scenario) engineQuotas() []engine.Quota {
	qs := make([]corev1.ResourceQuota, len(sc.Quotas))
	for i := range sc.Quotas {
		qs[i] = *sc.Quotas[i].DeepCopy()
		qs[i].Namespace = quotaNamespace(&qs[i])
	}
	return driver.Quotas(qs, nil, nil, Epoch)
}
