package wrappers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// TQ builds a TenantQueue.
type TQ struct{ q v1alpha1.TenantQueue }

// MakeQueue starts a TenantQueue with no resources and no cohort.
func MakeQueue(name string) *TQ {
	return &TQ{q: v1alpha1.TenantQueue{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.QueueKind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}}
}

// Cohort sets spec.cohort.
func (b *TQ) Cohort(c string) *TQ { b.q.Spec.Cohort = c; return b }

// Nominal adds a resource with its nominal quota (e.g. "nvidia.com/gpu", "8").
func (b *TQ) Nominal(name, qty string) *TQ {
	b.q.Spec.Resources = append(b.q.Spec.Resources, v1alpha1.QueueResource{Name: name, NominalQuota: resource.MustParse(qty)})
	return b
}

// Borrowing sets the borrowingLimit of the last resource added.
func (b *TQ) Borrowing(qty string) *TQ {
	q := resource.MustParse(qty)
	b.last().BorrowingLimit = &q
	return b
}

// Lending sets the lendingLimit of the last resource added.
func (b *TQ) Lending(qty string) *TQ {
	q := resource.MustParse(qty)
	b.last().LendingLimit = &q
	return b
}

// Weight sets spec.fairSharing.weight.
func (b *TQ) Weight(qty string) *TQ {
	q := resource.MustParse(qty)
	b.q.Spec.FairSharing = &v1alpha1.FairSharing{Weight: &q}
	return b
}

// Reclaim sets spec.preemption.reclaimWithinCohort.
func (b *TQ) Reclaim(p v1alpha1.PreemptionPolicy) *TQ {
	if b.q.Spec.Preemption == nil {
		b.q.Spec.Preemption = &v1alpha1.QueuePreemption{}
	}
	b.q.Spec.Preemption.ReclaimWithinCohort = p
	return b
}

// WithinQueue sets spec.preemption.withinQueue.
func (b *TQ) WithinQueue(p v1alpha1.PreemptionPolicy) *TQ {
	if b.q.Spec.Preemption == nil {
		b.q.Spec.Preemption = &v1alpha1.QueuePreemption{}
	}
	b.q.Spec.Preemption.WithinQueue = p
	return b
}

// ReclaimGrace sets spec.preemption.reclaimGracePeriod.
func (b *TQ) ReclaimGrace(d time.Duration) *TQ {
	if b.q.Spec.Preemption == nil {
		b.q.Spec.Preemption = &v1alpha1.QueuePreemption{}
	}
	b.q.Spec.Preemption.ReclaimGracePeriod = &metav1.Duration{Duration: d}
	return b
}

func (b *TQ) last() *v1alpha1.QueueResource { return &b.q.Spec.Resources[len(b.q.Spec.Resources)-1] }

// Obj returns the queue.
func (b *TQ) Obj() v1alpha1.TenantQueue { return *b.q.DeepCopy() }
