package sim

import (
	"fmt"
	"regexp"

	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
)

// queueNameRE is a TenantQueue name: a DNS-1123 subdomain.
var queueNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// validateQueues checks the scenario's TenantQueues as the CRD would
// (names, at least one resource each and none twice, no negative
// quantity, lendingLimit within nominalQuota, limits only with a cohort,
// a positive weight), and that every pipeline's queueName names one of
// them: in the simulator no queue is ever created later.
func (sc *Scenario) validateQueues() []error {
	var errs []error
	names := map[string]bool{}
	for i := range sc.Queues {
		q := &sc.Queues[i]
		path := fmt.Sprintf("queues[%d]", i)
		if !queueNameRE.MatchString(q.Name) {
			errs = append(errs, fmt.Errorf("%s.metadata.name: %q is not a queue name (lowercase letters, digits, '-' and '.')", path, q.Name))
		}
		if names[q.Name] {
			errs = append(errs, fmt.Errorf("%s.metadata.name: queue %s appears twice", path, q.Name))
		}
		names[q.Name] = true
		if len(q.Spec.Resources) == 0 {
			errs = append(errs, fmt.Errorf("%s.spec.resources: at least one resource is required", path))
		}
		seen := map[string]bool{}
		for j, r := range q.Spec.Resources {
			rp := fmt.Sprintf("%s.spec.resources[%d]", path, j)
			if seen[r.Name] {
				errs = append(errs, fmt.Errorf("%s.name: %s appears twice", rp, r.Name))
			}
			seen[r.Name] = true
			if r.NominalQuota.Sign() < 0 {
				errs = append(errs, fmt.Errorf("%s.nominalQuota: must not be negative", rp))
			}
			if r.BorrowingLimit != nil && r.BorrowingLimit.Sign() < 0 {
				errs = append(errs, fmt.Errorf("%s.borrowingLimit: must not be negative", rp))
			}
			if r.LendingLimit != nil && (r.LendingLimit.Sign() < 0 || r.LendingLimit.Cmp(r.NominalQuota) > 0) {
				errs = append(errs, fmt.Errorf("%s.lendingLimit: must be between 0 and nominalQuota", rp))
			}
			if q.Spec.Cohort == "" && (r.BorrowingLimit != nil || r.LendingLimit != nil) {
				errs = append(errs, fmt.Errorf("%s: borrowingLimit and lendingLimit need a cohort to borrow from and lend to", rp))
			}
		}
		if fs := q.Spec.FairSharing; fs != nil && fs.Weight != nil && fs.Weight.Sign() <= 0 {
			errs = append(errs, fmt.Errorf("%s.spec.fairSharing.weight: must be greater than 0", path))
		}
	}
	for i := range sc.Workload {
		if name := sc.Workload[i].Training.Spec.QueueName; name != "" && !names[name] {
			errs = append(errs, fmt.Errorf("workload[%d].training.spec.queueName: no queue %q in queues", i, name))
		}
	}
	return errs
}

// engineQueues are the scenario's queues as the engine sees them.
func (sc *Scenario) engineQueues() []engine.Queue {
	return driver.Queues(sc.Queues)
}
