package driver

import (
	"strings"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
)

// Queues turns the cluster's TenantQueues into the engine's: each
// resource's nominal quota and limits in milli-units (a limit the spec
// leaves unset stays nil: no limit), the fair-sharing weight in
// milli-units, reclaimWithinCohort, and reclaimGracePeriod (unset: never
// preempt, reclaim at phase boundaries only). Queues being deleted are left
// out: their pipelines wait, as for a queue that does not exist.
func Queues(tqs []v1alpha1.TenantQueue) []engine.Queue {
	var out []engine.Queue
	for i := range tqs {
		tq := &tqs[i]
		if tq.DeletionTimestamp != nil {
			continue
		}
		q := engine.Queue{Name: tq.Name, Cohort: tq.Spec.Cohort, Resources: map[engine.ResourceName]engine.QueueQuota{}}
		for _, r := range tq.Spec.Resources {
			qq := engine.QueueQuota{Nominal: r.NominalQuota.MilliValue()}
			if r.BorrowingLimit != nil {
				v := r.BorrowingLimit.MilliValue()
				qq.BorrowingLimit = &v
			}
			if r.LendingLimit != nil {
				v := r.LendingLimit.MilliValue()
				qq.LendingLimit = &v
			}
			q.Resources[engine.ResourceName(r.Name)] = qq
		}
		if fs := tq.Spec.FairSharing; fs != nil && fs.Weight != nil {
			q.Weight = fs.Weight.MilliValue()
		}
		if p := tq.Spec.Preemption; p != nil {
			q.Reclaim = engine.ReclaimPolicy(p.ReclaimWithinCohort)
			q.WithinQueue = engine.ReclaimPolicy(p.WithinQueue)
			if p.ReclaimGracePeriod != nil {
				g := p.ReclaimGracePeriod.Duration
				q.ReclaimGrace = &g
			}
		}
		out = append(out, q)
	}
	return out
}

// QueueStatus is a TenantQueue's status after a cycle, from the engine's
// figures for it: the nominal quota, use and borrowing per resource as
// "name: amount" lists (kubectl get tq's columns), and the gang counts.
func QueueStatus(tq *v1alpha1.TenantQueue, u engine.QueueUsage) v1alpha1.TenantQueueStatus {
	st := *tq.Status.DeepCopy()
	st.ObservedGeneration = tq.Generation
	st.Nominal = summary(u.Nominal)
	st.Used = summary(u.Used)
	st.Borrowed = summary(u.Borrowed)
	st.PendingGangs, st.AdmittedGangs = int32(u.Pending), int32(u.Admitted)
	return st
}

// summary renders amounts as "cpu: 4, nvidia.com/gpu: 8", in name order.
func summary(rl engine.ResourceList) string { return strings.Trim(engine.FormatResources(rl), "{}") }
