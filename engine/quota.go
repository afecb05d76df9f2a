package engine

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Quotas
//
// A namespace's ResourceQuotas are a constraint next to node capacity: a
// gang is granted only if every quota of its namespace that applies to its
// workers admits all of them at once (Min workers for a new grant; an
// elastic gang grows only as far as its quotas allow). The API server would
// otherwise refuse some of a granted gang's pods ("exceeded quota") and the
// gang would run in part.
//
// A quota's room is Hard − Used − what the ledger's grants in its
// namespace charge to it, where Used is what the namespace's pods that no
// grant covers use (the caller subtracts the covered pods, as it does for
// Node.Used): a grant charges its quotas for every worker from the moment
// it is made until its phase ends, whether its pods exist yet or not, just
// as it holds its nodes.

// Quota is one ResourceQuota of a namespace, as it bears on worker pods.
type Quota struct {
	Namespace, Name string
	// Hard is the quota's limit per resource, in the engine's resource
	// names: a request's own name ("nvidia.com/gpu", "cpu", "memory",
	// "pods"; the quota's requests.<name> and <name> alike),
	// "limits.<name>" for a limit, "count/pods" for pod objects (finished
	// ones included). Resources that do not bear on pods are left out.
	Hard ResourceList
	// Used is what the namespace's pods that no grant covers use of it.
	Used ResourceList
	// Scopes must all match a worker for the quota to apply to it: the
	// quota's spec.scopes (operator Exists) and its scopeSelector's
	// expressions. Terminating, NotTerminating, BestEffort, NotBestEffort,
	// PriorityClass and CrossNamespacePodAffinity are evaluated as the
	// API server's quota admission does; VolumeAttributesClass never
	// matches a pod; a scope this engine does not know is assumed to
	// match (the quota is applied: a gang that waits for nothing is
	// better than one the API server splits).
	Scopes []corev1.ScopedResourceSelectorRequirement
}

// QuotaFacts is what quotas read of a worker pod beyond its requests
// (Request.Footprint): its limits, and what scopes select on.
type QuotaFacts struct {
	// Limits is one worker's effective limits (for limits.* quotas).
	Limits ResourceList
	// PriorityClassName is the worker pod's spec.priorityClassName.
	PriorityClassName string
	// Terminating: the pod sets activeDeadlineSeconds.
	Terminating bool
	// BestEffort: the pod's QoS class is BestEffort (no container
	// requests or limits cpu or memory).
	BestEffort bool
	// CrossNamespaceAffinity: a pod (anti-)affinity term names other
	// namespaces or a namespace selector.
	CrossNamespaceAffinity bool
}

// ScopesMatch reports whether a pod with facts f falls under a quota with
// these scopes (all must match).
func ScopesMatch(scopes []corev1.ScopedResourceSelectorRequirement, f QuotaFacts) bool {
	for _, sc := range scopes {
		if !scopeMatches(sc, f) {
			return false
		}
	}
	return true
}

func scopeMatches(sc corev1.ScopedResourceSelectorRequirement, f QuotaFacts) bool {
	switch sc.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return f.Terminating
	case corev1.ResourceQuotaScopeNotTerminating:
		return !f.Terminating
	case corev1.ResourceQuotaScopeBestEffort:
		return f.BestEffort
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !f.BestEffort
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return f.CrossNamespaceAffinity
	case corev1.ResourceQuotaScopeVolumeAttributesClass:
		return false // a scope of PersistentVolumeClaims
	case corev1.ResourceQuotaScopePriorityClass:
		pc := f.PriorityClassName
		switch sc.Operator {
		case corev1.ScopeSelectorOpExists:
			return pc != ""
		case corev1.ScopeSelectorOpDoesNotExist:
			return pc == ""
		case corev1.ScopeSelectorOpIn:
			return pc != "" && slices.Contains(sc.Values, pc)
		case corev1.ScopeSelectorOpNotIn:
			return pc == "" || !slices.Contains(sc.Values, pc)
		}
	}
	// A scope (or operator) not known here: apply the quota.
	return true
}

// Namespace is the namespace part of Pipeline ("namespace/name"), or ""
// when it has none.
func (k GangKey) Namespace() string {
	ns, _, found := strings.Cut(k.Pipeline, "/")
	if !found {
		return ""
	}
	return ns
}

// WorkerQuotaUse is what one worker of r charges to a quota resource.
func WorkerQuotaUse(r *Request, name ResourceName) int64 {
	switch {
	case name == "pods" || name == "count/pods":
		return Milli(1)
	case strings.HasPrefix(string(name), "limits."):
		return r.Quota.Limits[ResourceName(strings.TrimPrefix(string(name), "limits."))]
	}
	return r.Footprint[name]
}

// quotaState is one quota with dense vectors over its own resources.
type quotaState struct {
	q     Quota
	names []ResourceName // sorted
	hard  []int64
	used  []int64 // pods no grant covers
	// granted is what the ledger's grants charge.
	granted []int64
}

// quotaCharge is what one worker of a gang charges to one quota.
type quotaCharge struct {
	q   int     // index in State.quotas
	amt []int64 // per quota resource (aligned with quotaState.names)
}

// SetQuotas replaces the namespaces' quotas. The ledger's grants are
// charged to them at once.
func (s *State) SetQuotas(quotas []Quota) {
	sorted := slices.Clone(quotas)
	slices.SortFunc(sorted, func(a, b Quota) int {
		return cmpOr(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	s.quotas = s.quotas[:0]
	s.quotaNS = map[string][]int{}
	for _, q := range sorted {
		if len(q.Hard) == 0 {
			continue
		}
		qs := &quotaState{q: q, names: sortedNames(q.Hard)}
		for _, n := range qs.names {
			qs.hard = append(qs.hard, q.Hard[n])
			qs.used = append(qs.used, q.Used[n])
		}
		qs.granted = make([]int64, len(qs.names))
		s.quotaNS[q.Namespace] = append(s.quotaNS[q.Namespace], len(s.quotas))
		s.quotas = append(s.quotas, qs)
	}
	s.quotasVersion++
	for _, key := range s.grantKeys() {
		g := s.grants[key]
		s.chargeQuotas(&g.gangReq, int64(len(g.workers)))
	}
}

// charges lists what one worker of gr charges to each quota that applies
// to it (cached per quota set).
func (s *State) charges(gr *gangReq) []quotaCharge {
	if gr.chargesVersion == s.quotasVersion+1 {
		return gr.quotaCharges
	}
	gr.quotaCharges = nil
	for _, qi := range s.quotaNS[gr.req.Gang.Namespace()] {
		qs := s.quotas[qi]
		if !ScopesMatch(qs.q.Scopes, gr.req.Quota) {
			continue
		}
		c := quotaCharge{q: qi, amt: make([]int64, len(qs.names))}
		any := false
		for j, n := range qs.names {
			if c.amt[j] = WorkerQuotaUse(&gr.req, n); c.amt[j] > 0 {
				any = true
			}
		}
		if any {
			gr.quotaCharges = append(gr.quotaCharges, c)
		}
	}
	gr.chargesVersion = s.quotasVersion + 1
	return gr.quotaCharges
}

// charge adds (k > 0) or removes (k < 0) k workers of gr to its quotas
// and its queue.
func (s *State) charge(gr *gangReq, k int64) {
	s.chargeQueue(gr, k)
	s.chargeQuotas(gr, k)
}

// chargeQuotas is charge for the namespace's quotas alone.
func (s *State) chargeQuotas(gr *gangReq, k int64) {
	if len(s.quotas) == 0 || k == 0 {
		return
	}
	for _, c := range s.charges(gr) {
		qs := s.quotas[c.q]
		for j, a := range c.amt {
			qs.granted[j] += k * a
		}
	}
}

// quotaShortfall says which quota keeps a gang from growing by want
// workers, with the numbers.
type quotaShortfall struct {
	q        *quotaState
	resource ResourceName
	left     int64 // hard − used − granted, at least 0
	need     int64 // want × one worker's use
}

// quotaRoom is how many more workers of gr its quotas admit (capped at
// limit), and, when that is fewer than limit, the first quota and
// resource that fall short for limit workers.
func (s *State) quotaRoom(gr *gangReq, limit int64) (int64, *quotaShortfall) {
	if len(s.quotas) == 0 {
		return limit, nil
	}
	room := limit
	var short *quotaShortfall
	for _, c := range s.charges(gr) {
		qs := s.quotas[c.q]
		for j, a := range c.amt {
			if a == 0 {
				continue
			}
			left := max(qs.hard[j]-qs.used[j]-qs.granted[j], 0)
			if k := left / a; k < limit {
				room = min(room, k)
				if short == nil {
					short = &quotaShortfall{q: qs, resource: qs.names[j], left: left, need: limit * a}
				}
			}
		}
	}
	return room, short
}

// quotaInfeasibility says which quota's hard limit is below what Min
// workers of gr need at once (the namespace could never admit the gang),
// or "".
func (s *State) quotaInfeasibility(gr *gangReq) string {
	for _, c := range s.charges(gr) {
		qs := s.quotas[c.q]
		for j, a := range c.amt {
			if need := int64(gr.req.Min) * a; need > qs.hard[j] {
				n := qs.names[j]
				return fmt.Sprintf("namespace %s's quota %s allows at most %s %s (its hard limit); the gang needs %s at once",
					qs.q.Namespace, qs.q.Name, FormatAmount(n, qs.hard[j]), n, FormatAmount(n, need))
			}
		}
	}
	return ""
}

// QuotaShortfall is the quota a waiting gang waits for, with the numbers.
type QuotaShortfall struct {
	Namespace, Quota string
	Resource         ResourceName
	// Left is what the quota admits now (hard − used − grants); Need is
	// what the gang's Min workers charge at once.
	Left, Need int64
	// HeldFor, if set, is an older gang of the namespace that waits for
	// this quota and has waited past the starvation bound: nothing behind
	// it is admitted into the quota.
	HeldFor *GangKey
}

func (q *quotaShortfall) export() *QuotaShortfall {
	return &QuotaShortfall{Namespace: q.q.q.Namespace, Quota: q.q.q.Name, Resource: q.resource, Left: q.left, Need: q.need}
}

func (q *QuotaShortfall) message() string {
	if q.HeldFor != nil {
		return fmt.Sprintf("namespace %s's quota %s is held for %s, which has waited past its starvation bound",
			q.Namespace, q.Quota, q.HeldFor.Pipeline+"/"+q.HeldFor.Phase)
	}
	return fmt.Sprintf("namespace %s's quota %s allows %s more %s; the gang needs %s",
		q.Namespace, q.Quota, FormatAmount(q.Resource, q.Left), q.Resource, FormatAmount(q.Resource, q.Need))
}

// QuotaLeft returns, per quota ("namespace/name"), what it admits now
// (hard − used − grants) per resource; for tests and the simulator's
// checks.
func (s *State) QuotaLeft() map[string]ResourceList {
	out := map[string]ResourceList{}
	for _, qs := range s.quotas {
		rl := ResourceList{}
		for j, n := range qs.names {
			rl[n] = qs.hard[j] - qs.used[j] - qs.granted[j]
		}
		out[qs.q.Namespace+"/"+qs.q.Name] = rl
	}
	return out
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// quotaWait checks gr against its quotas before placement: it returns the
// Wait when a quota does not admit gr's Min workers now, or when a quota
// gr charges is held for an older gang past its starvation bound. A gang
// a quota does not admit becomes that quota's head if it has none.
func (s *State) quotaWait(gr *gangReq, now time.Time, heads map[int]*gangReq) (Wait, bool) {
	if len(s.quotas) == 0 {
		return Wait{}, false
	}
	w := Wait{Gang: gr.req.Gang, Reason: WaitQuota, Min: gr.req.Min, Footprint: gr.req.Footprint}
	for _, c := range s.charges(gr) {
		if h := heads[c.q]; h != nil && h != gr && now.Sub(h.req.Queued) >= s.cfg.StarvationBound {
			qs := s.quotas[c.q]
			held := h.req.Gang
			w.Quota = &QuotaShortfall{Namespace: qs.q.Namespace, Quota: qs.q.Name, HeldFor: &held}
			return w, true
		}
	}
	room, short := s.quotaRoom(gr, int64(gr.req.Min))
	if room >= int64(gr.req.Min) {
		return Wait{}, false
	}
	for _, c := range s.charges(gr) {
		if heads[c.q] == nil {
			heads[c.q] = gr
		}
	}
	w.Quota = short.export()
	return w, true
}

// behindQuotaHead reports whether a quota that g charges has a waiting
// head ahead of g in queue order.
func (s *State) behindQuotaHead(g *gangReq, heads map[int]*gangReq) bool {
	for _, c := range s.charges(g) {
		if h := heads[c.q]; h != nil && compareQueue(&h.req, &g.req) < 0 {
			return true
		}
	}
	return false
}
