package driver

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

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
// figures for it: the nominal quota, use and borrowing of each resource
// (and the same as one line for kubectl get tq's Usage column), and the
// gang counts.
func QueueStatus(tq *v1alpha1.TenantQueue, u engine.QueueUsage) v1alpha1.TenantQueueStatus {
	st := *tq.Status.DeepCopy()
	st.ObservedGeneration = tq.Generation
	st.Resources, st.Usage = nil, ""
	names := slices.Sorted(maps.Keys(u.Nominal))
	for name := range u.Used {
		if _, ok := u.Nominal[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var usage []string
	for _, name := range names {
		st.Resources = append(st.Resources, v1alpha1.QueueResourceUsage{
			Name:     string(name),
			Nominal:  quantity(name, u.Nominal[name]),
			Used:     quantity(name, u.Used[name]),
			Borrowed: quantity(name, u.Borrowed[name]),
		})
		s := fmt.Sprintf("%s: %s/%s", name, engine.FormatAmount(name, u.Used[name]), engine.FormatAmount(name, u.Nominal[name]))
		if b := u.Borrowed[name]; b > 0 {
			s += fmt.Sprintf(" (%s borrowed)", engine.FormatAmount(name, b))
		}
		usage = append(usage, s)
	}
	st.Usage = strings.Join(usage, ", ")
	st.PendingGangs, st.AdmittedGangs = int32(u.Pending), int32(u.Admitted)
	return st
}

// quantity is milli units of a resource as a Quantity, written as the
// engine's messages write it (500m, 8, 512Gi).
func quantity(name engine.ResourceName, milli int64) resource.Quantity {
	return resource.MustParse(engine.FormatAmount(name, milli))
}
