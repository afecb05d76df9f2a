package v1alpha1

import (
	"regexp"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The TenantQueue CRD's rules (its OpenAPI schema and CEL rules, see the
// markers on TenantQueueSpec and QueueResource) as Go, for what reads
// queues without an API server: `phasegang validate` and the simulator's
// scenarios. test/crd checks that the API server and ValidateTenantQueue
// reject the same objects at the same field paths with the same error
// types; the messages of the CEL rules are the CRD's own.

// Limits of the CRD's schema.
const (
	maxQueueResources    = 16
	maxQueueResourceName = 253
	maxCohort            = 63
	maxQueueName         = 253
)

var (
	// queueNameRE is a TenantQueue's name, which spec.queueName names: a
	// DNS-1123 subdomain, as the API server requires of a cluster-scoped
	// object's name.
	queueNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// cohortRE is the CRD's pattern for spec.cohort: a DNS-1123 label.
	cohortRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// queueResourceNameRE is the CRD's pattern for spec.resources[].name:
	// a resource name as pods request it.
	queueResourceNameRE = regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
)

// IsQueueName reports whether name may name a TenantQueue (a DNS-1123
// subdomain of at most 253 characters), as spec.queueName must.
func IsQueueName(name string) bool {
	return len(name) <= maxQueueName && queueNameRE.MatchString(name)
}

// preemptionPolicies are PreemptionPolicy's values, in the CRD's order.
var preemptionPolicies = []string{string(PreemptNever), string(PreemptLowerPriority), string(PreemptAny)}

// ValidateTenantQueue checks a TenantQueue as the API server checks it on
// create: its name, and every rule of the CRD on its spec. Each error
// names its field path (spec.resources[0].lendingLimit). An unset
// preemption policy or weight is valid (the CRD defaults it).
//
// What a typed object cannot hold (a quantity "eight", a duration "5min",
// an unknown field) is Decode's to report.
func ValidateTenantQueue(q *TenantQueue) field.ErrorList {
	var errs field.ErrorList
	name := field.NewPath("metadata", "name")
	switch {
	case q.Name == "":
		errs = append(errs, field.Required(name, "a TenantQueue needs a name"))
	case !IsQueueName(q.Name):
		errs = append(errs, field.Invalid(name, q.Name, "must be a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', at most 253 characters"))
	}
	return append(errs, ValidateTenantQueueSpec(&q.Spec, field.NewPath("spec"))...)
}

// ValidateTenantQueueSpec checks a queue's spec, at path p, as the CRD
// does.
func ValidateTenantQueueSpec(s *TenantQueueSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	rp := p.Child("resources")
	switch {
	case s.Resources == nil:
		errs = append(errs, field.Required(rp, "a queue limits at least one resource"))
	case len(s.Resources) == 0:
		errs = append(errs, field.Invalid(rp, len(s.Resources), "must have at least 1 item"))
	case len(s.Resources) > maxQueueResources:
		errs = append(errs, field.TooMany(rp, len(s.Resources), maxQueueResources))
	}
	seen := map[string]bool{}
	limits := false
	for i := range s.Resources {
		r := &s.Resources[i]
		errs = append(errs, validateQueueResource(r, rp.Index(i))...)
		if r.Name != "" && seen[r.Name] {
			errs = append(errs, field.Duplicate(rp.Index(i), r.Name))
		}
		seen[r.Name] = true
		limits = limits || r.BorrowingLimit != nil || r.LendingLimit != nil
	}
	if s.Cohort == "" && limits {
		errs = append(errs, field.Forbidden(rp, "borrowingLimit and lendingLimit need a cohort to borrow from and lend to"))
	}
	if c := s.Cohort; c != "" {
		cp := p.Child("cohort")
		if utf8.RuneCountInString(c) > maxCohort {
			errs = append(errs, field.TooLong(cp, c, maxCohort))
		} else if !cohortRE.MatchString(c) {
			errs = append(errs, field.Invalid(cp, c, "must be a DNS-1123 label: lowercase letters, digits and '-', at most 63 characters"))
		}
	}
	if fs := s.FairSharing; fs != nil && fs.Weight != nil && fs.Weight.Sign() <= 0 {
		errs = append(errs, field.Invalid(p.Child("fairSharing", "weight"), fs.Weight.String(), "weight must be greater than 0"))
	}
	if pr := s.Preemption; pr != nil {
		pp := p.Child("preemption")
		for _, f := range []struct {
			name string
			v    PreemptionPolicy
		}{{"withinQueue", pr.WithinQueue}, {"reclaimWithinCohort", pr.ReclaimWithinCohort}} {
			if f.v != "" && f.v != PreemptNever && f.v != PreemptLowerPriority && f.v != PreemptAny {
				errs = append(errs, field.NotSupported(pp.Child(f.name), f.v, preemptionPolicies))
			}
		}
		if g := pr.ReclaimGracePeriod; g != nil && g.Duration < 0 {
			errs = append(errs, field.Invalid(pp.Child("reclaimGracePeriod"), g.Duration.String(), "must not be negative"))
		}
	}
	return errs
}

// validateQueueResource checks one entry of spec.resources, at path p.
func validateQueueResource(r *QueueResource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	np := p.Child("name")
	switch {
	case r.Name == "":
		errs = append(errs, field.Invalid(np, r.Name, "must name a resource, such as nvidia.com/gpu, cpu, memory or pods"))
	case utf8.RuneCountInString(r.Name) > maxQueueResourceName:
		errs = append(errs, field.TooLong(np, r.Name, maxQueueResourceName))
	case !queueResourceNameRE.MatchString(r.Name):
		errs = append(errs, field.Invalid(np, r.Name, "must be a resource name, such as nvidia.com/gpu, cpu, memory or pods"))
	}
	negative := func(name string, q *resource.Quantity) {
		if q != nil && q.Sign() < 0 {
			errs = append(errs, field.Invalid(p.Child(name), q.String(), name+" must not be negative"))
		}
	}
	if r.LendingLimit != nil && r.LendingLimit.Cmp(r.NominalQuota) > 0 {
		errs = append(errs, field.Invalid(p.Child("lendingLimit"), r.LendingLimit.String(), "lendingLimit must not exceed nominalQuota"))
	}
	negative("nominalQuota", &r.NominalQuota)
	negative("borrowingLimit", r.BorrowingLimit)
	negative("lendingLimit", r.LendingLimit)
	return errs
}
