package sim

import (
	"fmt"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
)

// validateQueues checks the scenario's TenantQueues as the API server
// would (v1alpha1.ValidateTenantQueue: the CRD's rules), that no two share
// a name, and that every pipeline's queueName names one of them: in the
// simulator no queue is ever created later.
func (sc *Scenario) validateQueues() []error {
	var errs []error
	names := map[string]bool{}
	for i := range sc.Queues {
		q := &sc.Queues[i]
		path := fmt.Sprintf("queues[%d]", i)
		for _, e := range v1alpha1.ValidateTenantQueue(q) {
			errs = append(errs, fmt.Errorf("%s.%s", path, e.Error()))
		}
		if names[q.Name] {
			errs = append(errs, fmt.Errorf("%s.metadata.name: queue %s appears twice", path, q.Name))
		}
		names[q.Name] = true
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
