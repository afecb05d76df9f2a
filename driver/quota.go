package driver

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/phasegang/phasegang/engine"
)

// QuotaResource maps a ResourceQuota's resource name to the engine's
// (engine.Quota.Hard): requests.<name> and an unprefixed compute resource
// (cpu, memory, ephemeral-storage, hugepages-*) to the request's own name,
// pods to "pods", and keeps limits.<name> and count/pods. It reports false
// for resources that do not bear on pods (services, PVC storage,
// count/<other kinds>, …), as the API server's pod evaluator ignores them.
func QuotaResource(name corev1.ResourceName) (engine.ResourceName, bool) {
	n := string(name)
	switch {
	case n == "pods" || n == "count/pods":
		return engine.ResourceName(n), true
	case n == "cpu" || n == "memory" || n == "ephemeral-storage" || strings.HasPrefix(n, corev1.ResourceHugePagesPrefix):
		return engine.ResourceName(n), true
	case strings.HasPrefix(n, "limits."):
		switch strings.TrimPrefix(n, "limits.") {
		case "cpu", "memory", "ephemeral-storage":
			return engine.ResourceName(n), true
		}
	case strings.HasPrefix(n, "requests."):
		r := strings.TrimPrefix(n, "requests.")
		switch {
		case r == "cpu" || r == "memory" || r == "ephemeral-storage" || strings.HasPrefix(r, corev1.ResourceHugePagesPrefix):
			return engine.ResourceName(r), true
		case strings.Contains(r, "/") && !strings.Contains(r, "kubernetes.io/"):
			// An extended resource (nvidia.com/gpu): quotas take it only
			// as requests.<name>.
			return engine.ResourceName(r), true
		}
	}
	return "", false
}

// quotaList maps a quota's resource list to engine names; where two names
// map to one (cpu and requests.cpu), the smaller amount stands.
func quotaList(rl corev1.ResourceList) engine.ResourceList {
	out := engine.ResourceList{}
	for name, q := range rl {
		if n, ok := QuotaResource(name); ok {
			v := q.MilliValue()
			if old, seen := out[n]; !seen || v < old {
				out[n] = v
			}
		}
	}
	return out
}

// QuotaScopes lists a quota's scopes as selector requirements: spec.scopes
// (operator Exists) and spec.scopeSelector's expressions.
func QuotaScopes(spec *corev1.ResourceQuotaSpec) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, sc := range spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: sc, Operator: corev1.ScopeSelectorOpExists})
	}
	if spec.ScopeSelector != nil {
		out = append(out, spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

// Quotas turns a cluster's ResourceQuotas into the engine's, as they bear
// on worker pods:
//
//   - Hard is the smaller of spec.hard and status.hard per resource: the
//     API server admits pods against status.hard, which follows spec.hard
//     once kube-controller-manager has seen a change, so a quota being
//     raised counts as raised only then, and one being lowered at once.
//   - Used is what the namespace's pods that no grant covers use: the
//     larger of status.used and the sum over the pods the caller sees that
//     the quota's scopes select (the cache may show a pod before the
//     quota's status counts it, or the other way round), minus the use of
//     the pods covered(namespace, name) says a grant covers. The engine
//     charges every grant's workers itself, so a granted worker counts
//     once, whether its pod exists yet or not.
//
// Pods count as the API server's quota evaluator counts them: "pods" and
// compute resources for pods not terminal (nor past their deletion grace
// period), "count/pods" for every pod object. pods and covered may be nil
// (the simulator has no pods: status.used stands for other workloads).
// Quotas with no resource that bears on pods are left out.
func Quotas(rqs []corev1.ResourceQuota, pods []corev1.Pod, covered func(namespace, name string) bool, now time.Time) []engine.Quota {
	if len(rqs) == 0 {
		return nil
	}
	// Each pod of a namespace with quotas is read once, whatever the
	// number of its quotas.
	type podQuota struct {
		p     *corev1.Pod
		facts engine.QuotaFacts
		use   engine.ResourceList
	}
	byNS := map[string][]podQuota{}
	for i := range rqs {
		byNS[rqs[i].Namespace] = nil
	}
	for i := range pods {
		p := &pods[i]
		if list, ok := byNS[p.Namespace]; ok {
			byNS[p.Namespace] = append(list, podQuota{p: p, facts: QuotaFactsOf(&p.Spec), use: PodQuotaUse(p, now)})
		}
	}
	var out []engine.Quota
	for i := range rqs {
		rq := &rqs[i]
		hard := quotaList(rq.Spec.Hard)
		if len(rq.Status.Hard) > 0 {
			for n, v := range quotaList(rq.Status.Hard) {
				if old, ok := hard[n]; !ok || v < old {
					hard[n] = v
				}
			}
		}
		if len(hard) == 0 {
			continue
		}
		q := engine.Quota{Namespace: rq.Namespace, Name: rq.Name, Hard: hard, Scopes: QuotaScopes(&rq.Spec)}
		status := quotaList(rq.Status.Used)
		seen, cov := engine.ResourceList{}, engine.ResourceList{}
		for _, pq := range byNS[rq.Namespace] {
			if !engine.ScopesMatch(q.Scopes, pq.facts) {
				continue
			}
			isCovered := covered != nil && covered(pq.p.Namespace, pq.p.Name)
			for n := range hard {
				seen[n] += pq.use[n]
				if isCovered {
					cov[n] += pq.use[n]
				}
			}
		}
		q.Used = engine.ResourceList{}
		for n := range hard {
			if u := max(status[n], seen[n]) - cov[n]; u > 0 {
				q.Used[n] = u
			}
		}
		out = append(out, q)
	}
	return out
}

// PodQuotaUse is what one pod charges to quotas, in engine names, as the
// API server's pod evaluator counts it.
func PodQuotaUse(p *corev1.Pod, now time.Time) engine.ResourceList {
	use := engine.ResourceList{"count/pods": engine.Milli(1)}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return use
	}
	if p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil &&
		now.After(p.DeletionTimestamp.Add(time.Duration(*p.DeletionGracePeriodSeconds)*time.Second)) {
		return use
	}
	use["pods"] = engine.Milli(1)
	for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
		use[engine.ResourceName(name)] += q.MilliValue()
	}
	for name, q := range resourcehelper.PodLimits(p, resourcehelper.PodResourcesOptions{}) {
		use[engine.ResourceName("limits."+string(name))] += q.MilliValue()
	}
	return use
}
