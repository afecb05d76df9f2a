package sim

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/phases"
)

// Scenario is a virtual cluster and a workload of PhasedTrainings, with
// what the simulator needs to know that a real cluster would tell it: when
// each pipeline arrives, how long its phases run, what they output, and
// which attempts fail.
type Scenario struct {
	// Name labels reports.
	Name string `json:"name,omitempty"`
	// Cluster is the virtual cluster.
	Cluster Cluster `json:"cluster"`
	// Workload lists pipelines (or groups of identical pipelines).
	Workload []Workload `json:"workload"`
	// PriorityClasses maps PriorityClass names to values, as the
	// cluster's PriorityClass objects do for spec.priorityClassName.
	PriorityClasses map[string]int32 `json:"priorityClasses,omitempty"`
	// NodeFailures remove nodes during the run.
	NodeFailures []NodeFailure `json:"nodeFailures,omitempty"`
	// Quotas are the namespaces' ResourceQuotas: ordinary ResourceQuota
	// objects, the same YAML a user applies (metadata.namespace defaults
	// to "default", as a pipeline's does). status.used, if given, stands
	// for what other workloads of the namespace use for the whole run.
	Quotas []corev1.ResourceQuota `json:"quotas,omitempty"`
	// Queues are the cluster's TenantQueues: ordinary TenantQueue
	// objects, the same YAML a user applies. A pipeline reaches one by
	// spec.queueName (unset: the queue named default, if any).
	Queues []v1alpha1.TenantQueue `json:"queues,omitempty"`
	// Scaling is how an elastic phase's speed depends on its workers
	// (unset: linear).
	Scaling *Scaling `json:"scaling,omitempty"`
}

// NodeFailure removes a node (as when it is deleted or lost) At a time.
type NodeFailure struct {
	Node string          `json:"node"`
	At   metav1.Duration `json:"at"`
}

// Cluster is a set of node pools.
type Cluster struct {
	NodePools []NodePool `json:"nodePools"`
	// Topology names the cluster's topology levels and the cross-domain
	// slowdown (topology.go); unset: none.
	Topology *Topology `json:"topology,omitempty"`
}

// NodePool is Count identical nodes named <name>-<i>.
type NodePool struct {
	Name        string              `json:"name"`
	Count       int                 `json:"count"`
	Allocatable corev1.ResourceList `json:"allocatable"`
	Labels      map[string]string   `json:"labels,omitempty"`
	Taints      []corev1.Taint      `json:"taints,omitempty"`
}

// Workload is one PhasedTraining, submitted Count times (named
// <name>-<i>) from Arrival on, Interval apart.
type Workload struct {
	// Training is an ordinary PhasedTraining, the same YAML a user applies
	// to a cluster.
	Training v1alpha1.PhasedTraining `json:"training"`
	// Count replicates the pipeline (default 1).
	Count int `json:"count,omitempty"`
	// Arrival is the first replica's arrival, from the start of the run.
	Arrival metav1.Duration `json:"arrival,omitempty"`
	// Interval separates the replicas' arrivals.
	Interval metav1.Duration `json:"interval,omitempty"`
	// Runtimes maps phase name to how long the phase runs with its desired
	// number of workers. An elastic phase's work is runtime × desired
	// worker-seconds, done at one unit per granted worker: with fewer
	// workers it takes longer.
	Runtimes map[string]metav1.Duration `json:"runtimes"`
	// Outputs maps phase name to the outputs it reports, one map per
	// iteration (the last repeats).
	Outputs map[string][]map[string]string `json:"outputs,omitempty"`
	// Failures injects worker failures.
	Failures []Failure `json:"failures,omitempty"`

	// specKey lets trace workloads of one shape share a compiled Pipeline.
	specKey string
}

// Failure makes one attempt of a phase fail After it started.
type Failure struct {
	Phase     string          `json:"phase"`
	Iteration int32           `json:"iteration,omitempty"`
	Attempt   int32           `json:"attempt,omitempty"`
	After     metav1.Duration `json:"after"`
}

// LoadScenario decodes and checks a scenario. Unknown fields are errors,
// and every PhasedTraining is validated as the API server would.
func LoadScenario(data []byte) (*Scenario, error) {
	var sc Scenario
	if err := yaml.UnmarshalStrict(data, &sc); err != nil {
		// The decoder names no path for a bad duration or quantity.
		if invalid := v1alpha1.InvalidValues(data, reflect.TypeFor[Scenario]()); len(invalid) > 0 {
			err = errors.Join(invalid...)
		}
		return nil, fmt.Errorf("decoding scenario: %w", err)
	}
	return &sc, sc.validate()
}

func (sc *Scenario) validate() error {
	var errs []error
	if len(sc.Cluster.NodePools) == 0 {
		errs = append(errs, errors.New("cluster.nodePools: at least one node pool is required"))
	}
	for i, p := range sc.Cluster.NodePools {
		if p.Name == "" || p.Count < 1 {
			errs = append(errs, fmt.Errorf("cluster.nodePools[%d]: needs a name and a count >= 1", i))
		}
	}
	if len(sc.Workload) == 0 {
		errs = append(errs, errors.New("workload: at least one pipeline is required"))
	}
	if err := sc.Cluster.Topology.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := sc.Scaling.Validate(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, sc.validateQuotas()...)
	errs = append(errs, sc.validateQueues()...)
	for i := range sc.Workload {
		w := &sc.Workload[i]
		path := fmt.Sprintf("workload[%d]", i)
		// A negative arrival or interval would put a pipeline before the
		// start of the run, and a negative count would silently mean 1.
		if w.Arrival.Duration < 0 {
			errs = append(errs, fmt.Errorf("%s.arrival: must not be negative", path))
		}
		if w.Interval.Duration < 0 {
			errs = append(errs, fmt.Errorf("%s.interval: must not be negative", path))
		}
		if w.Count < 0 {
			errs = append(errs, fmt.Errorf("%s.count: must not be negative", path))
		}
		if w.Training.Name == "" {
			errs = append(errs, fmt.Errorf("%s.training.metadata.name: required", path))
		}
		v1alpha1.SetDefaults(&w.Training)
		if fe := phases.Validate(&w.Training); len(fe) > 0 {
			for _, e := range fe {
				errs = append(errs, fmt.Errorf("%s.training.%s", path, e.Error()))
			}
			continue
		}
		for _, ph := range w.Training.Spec.Phases {
			if d, ok := w.Runtimes[ph.Name]; !ok || d.Duration <= 0 {
				errs = append(errs, fmt.Errorf("%s.runtimes.%s: a positive run time is required for every phase", path, ph.Name))
			}
		}
		for name := range w.Runtimes {
			if !hasPhase(&w.Training, name) {
				errs = append(errs, fmt.Errorf("%s.runtimes.%s: no such phase", path, name))
			}
		}
		for j, f := range w.Failures {
			if !hasPhase(&w.Training, f.Phase) {
				errs = append(errs, fmt.Errorf("%s.failures[%d].phase: no such phase %q", path, j, f.Phase))
			}
		}
	}
	return errors.Join(errs...)
}

func hasPhase(pt *v1alpha1.PhasedTraining, name string) bool {
	for _, p := range pt.Spec.Phases {
		if p.Name == name {
			return true
		}
	}
	return false
}

// Nodes expands the node pools into engine nodes.
func (c Cluster) Nodes() []engine.Node {
	var out []engine.Node
	for _, p := range c.NodePools {
		width := len(fmt.Sprint(p.Count - 1))
		for i := range p.Count {
			out = append(out, engine.Node{
				Name:        fmt.Sprintf("%s-%0*d", p.Name, width, i),
				Labels:      p.Labels,
				Taints:      p.Taints,
				Allocatable: driver.NodeResources(p.Allocatable),
			})
		}
	}
	return c.withDomains(out)
}

// GPUs is the cluster's total nvidia.com/gpu.
func (c Cluster) GPUs() int64 {
	var n int64
	for _, p := range c.NodePools {
		q := p.Allocatable[gpuResource]
		n += q.Value() * int64(p.Count)
	}
	return n
}

const gpuResource corev1.ResourceName = "nvidia.com/gpu"

// MarshalScenario renders a scenario as YAML (used for -update goldens and
// to show what a trace became).
func MarshalScenario(sc *Scenario) ([]byte, error) {
	b, err := yaml.Marshal(sc)
	return bytes.TrimSpace(b), err
}

func dur(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

func qty(s string) resource.Quantity { return resource.MustParse(s) }
