package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PhasedTraining is a pipeline of gang-scheduled phases (for example
// train → validate → test). Each phase runs as one gang of identical worker
// pods that phasegang reserves atomically on concrete nodes, holds only while
// the phase runs, and releases when it ends.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pt,categories=phasegang
// +kubebuilder:selectablefield:JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.currentPhase`
// +kubebuilder:printcolumn:name="Workers",type=string,JSONPath=`.status.workers`,description="granted/desired workers of the queued and running phases"
// +kubebuilder:printcolumn:name="Iteration",type=integer,JSONPath=`.status.iteration`,description="the current iteration of spec.iterate (0-based)"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.status=="True")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PhasedTraining struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec describes the phases of the pipeline and how they are scheduled.
	// +required
	Spec PhasedTrainingSpec `json:"spec"`

	// status is what phasegang observed and decided; written only by the controller.
	// +optional
	Status PhasedTrainingStatus `json:"status,omitempty"`
}

// PhasedTrainingList is a list of PhasedTraining.
//
// +kubebuilder:object:root=true
type PhasedTrainingList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the PhasedTrainings.
	// +required
	Items []PhasedTraining `json:"items"`
}

// PhasedTrainingSpec is the desired pipeline.
//
// phases and iterate are immutable once the PhasedTraining exists, as a
// Job's template is: the engine grants a phase for its template's
// footprint and its gang, and a later edit would leave a running gang
// on nodes chosen for another one (and iterations counted against
// another loop). To change them, delete the PhasedTraining and create it
// again. priority, priorityClassName and podTTLSecondsAfterFinished may
// change; queueName may not (see its rule).
//
// The rules that need the whole phase list live here, on spec: a rule on a
// phase cannot see the other phases. fieldPath points the error at the
// list the mistake is in, since it cannot hold an index (the API server
// accepts only field names there), so messageExpression starts with the
// entry's indexed path, as phasegang validate prints it
// (spec.phases[1].dependsOn[0]), names the unknown phase and lists the
// phases there are. The messageExpressions are written for CEL's cost
// estimator, which test/crd runs: strings taken out of filter() have no
// known size, nor do lists that map() or filter() made, so those are only
// passed to format(). The dependsOn one finds the first phase with an
// unknown entry and its index (indexOf on spec.phases itself), then the
// entry's index among the literal indices 0..31 (dependsOn's maxItems;
// the iterate.phases one does the same): Kubernetes before 1.34 has no
// lists.range(), and indexOf on the entries filter() left has no cost
// bound. If a
// messageExpression cannot be evaluated, the API server falls back to
// message.
//
// CEL cannot check that the dependsOn graph is acyclic (it has no
// recursion), nor parse expressions: package phases does, and the
// controller reports those as the Invalid condition.
//
// +kubebuilder:validation:XValidation:rule="self.phases == oldSelf.phases",message="phases are immutable: a running phase's grant was made for its template and gang; delete the PhasedTraining and create it again",fieldPath=".phases"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.iterate) == has(self.iterate) && (!has(self.iterate) || self.iterate == oldSelf.iterate)",message="iterate is immutable: the pipeline's iterations are counted against it; delete the PhasedTraining and create it again",fieldPath=".iterate"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.queueName) == has(self.queueName) && (!has(self.queueName) || self.queueName == oldSelf.queueName)",message="queueName is immutable: a pipeline's grants are charged to its queue",fieldPath=".queueName"
// +kubebuilder:validation:XValidation:rule="!has(self.priority) || !has(self.priorityClassName)",message="set at most one of priority and priorityClassName",fieldPath=".priorityClassName",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.iterate) || self.iterate.phases.all(n, self.phases.exists(p, p.name == n))",message="every iterate.phases entry must name a phase of spec.phases",messageExpression=`[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31].filter(j, j < size(self.iterate.phases) && !self.phases.exists(p, p.name == self.iterate.phases[j]))[0]].map(j, 'spec.iterate.phases[%d]: unknown phase "%s": every iterate.phases entry must name one of spec.phases %s'.format([j, self.iterate.phases[j], self.phases.map(q, q.name)]))[0]`,fieldPath=".iterate.phases"
// +kubebuilder:validation:XValidation:rule="self.phases.all(p, !has(p.dependsOn) || p.dependsOn.all(d, self.phases.exists(q, q.name == d)))",message="every dependsOn entry must name a phase of spec.phases",messageExpression=`[self.phases.filter(p, has(p.dependsOn) && p.dependsOn.exists(d, !self.phases.exists(q, q.name == d)))[0]].map(p, [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31].filter(j, j < size(p.dependsOn) && !self.phases.exists(q, q.name == p.dependsOn[j]))[0]].map(j, 'spec.phases[%d].dependsOn[%d]: phase %s dependsOn unknown phase "%s": every dependsOn entry must name one of spec.phases %s'.format([self.phases.indexOf(p), j, p.name, p.dependsOn[j], self.phases.map(q, q.name)]))[0])[0]`,fieldPath=".phases"
type PhasedTrainingSpec struct {
	// phases are the steps of the pipeline. Each phase runs once (or once per
	// iteration, if it is part of iterate.phases) after every phase it
	// dependsOn has ended, as one gang of worker pods.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Phases []Phase `json:"phases"`

	// iterate repeats a chain of phases (for example train → validate) until
	// a condition holds or a number of iterations is reached: early stopping.
	// +optional
	Iterate *Iterate `json:"iterate,omitempty"`

	// priority orders this pipeline's gangs in the queue: higher first. Within
	// one priority, older pipelines go first, and a later phase keeps the
	// pipeline's original age. Defaults to 0.
	// +optional
	Priority *int32 `json:"priority,omitempty"`

	// priorityClassName names a PriorityClass whose value is used as priority.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// queueName names the TenantQueue whose quota this pipeline's gangs
	// are admitted against. Unset: the TenantQueue named "default", if
	// there is one; with no such queue the pipeline is not limited by
	// any queue. A pipeline naming a queue that does not exist waits
	// until it does. Immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	QueueName string `json:"queueName,omitempty"`

	// podTTLSecondsAfterFinished deletes the pipeline's worker pods this
	// many seconds after it finished (Succeeded or Failed), as a Job's
	// ttlSecondsAfterFinished does for the Job; 0 deletes them at once. The
	// PhasedTraining itself, its status and outputs, stay. Unset: the pods
	// are kept (for their logs) until the PhasedTraining is deleted.
	// +optional
	// +kubebuilder:validation:Minimum=0
	PodTTLSecondsAfterFinished *int32 `json:"podTTLSecondsAfterFinished,omitempty"`
}

// Phase is one gang-scheduled step of a pipeline.
//
// +kubebuilder:validation:XValidation:rule="!has(self.topology) || !has(self.topology.sliceSize) || (self.gang.min % self.topology.sliceSize == 0 && (!has(self.gang.desired) || self.gang.desired % self.topology.sliceSize == 0))",message="topology.sliceSize must divide gang.min and gang.desired",fieldPath=".topology.sliceSize"
// +kubebuilder:validation:XValidation:rule="!has(self.topology) || !has(self.topology.sameDomainAs) || (has(self.dependsOn) && self.topology.sameDomainAs in self.dependsOn)",message="topology.sameDomainAs must name a phase this phase dependsOn",fieldPath=".topology.sameDomainAs"
// +kubebuilder:validation:XValidation:rule="!has(self.dependsOn) || !self.dependsOn.exists(d, d == self.name)",message="a phase cannot depend on itself",fieldPath=".dependsOn"
// +kubebuilder:validation:XValidation:rule="has(self.template.spec) && size(self.template.spec.containers) > 0",message="must have at least one container",fieldPath=".template.spec.containers",reason=FieldValueRequired
type Phase struct {
	// name identifies the phase within the pipeline; it appears in pod names
	// and in expressions as phases.<name> (or phases["<name>"]).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// dependsOn lists the phases that must have ended (Succeeded or Skipped)
	// before this phase is queued.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=32
	// +kubebuilder:validation:items:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	DependsOn []string `json:"dependsOn,omitempty"`

	// when is an expr-lang boolean expression evaluated once the phase's
	// dependencies have ended; if it is false the phase is Skipped. It may
	// read iteration and phases.<name>.{state,succeeded,failed,workers,outputs.<key>}.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	When string `json:"when,omitempty"`

	// gang sizes the phase's gang of workers.
	// +required
	Gang Gang `json:"gang"`

	// template is the pod template of one worker. phasegang adds the node
	// pinning, labels and the rank/world-size environment.
	// +required
	Template corev1.PodTemplateSpec `json:"template"`

	// successPolicy says when the phase has succeeded: AllWorkers (default:
	// every worker succeeded), Chief (worker 0 succeeded), or an expr-lang
	// boolean expression over workers, succeeded, failed, running and outputs.
	// +optional
	// +kubebuilder:default=AllWorkers
	// +kubebuilder:validation:MaxLength=1024
	SuccessPolicy string `json:"successPolicy,omitempty"`

	// outputs declares the keys this phase's workers report in their
	// termination message (a JSON object). Only declared keys can be read by
	// expressions, so a typo is caught when the spec is admitted. Keys are
	// identifiers, so expressions can read them as outputs.<key>.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	Outputs []string `json:"outputs,omitempty"`

	// maxRetries is how many times a failed phase is retried with a fresh gang.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MaxRetries int32 `json:"maxRetries,omitempty"`

	// startTimeout bounds how long a reserved gang may take to have every
	// worker Running; past it the reservation is released and the phase
	// queued again (with backoff, keeping the pipeline's age). A duration
	// such as 90s, 30m or 1h30m.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$') && duration(self) > duration('0s')`,message="must be a duration greater than 0",messageExpression=`self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$') ? 'must be greater than 0 when set' : 'must be a duration such as 90s, 30m or 1h30m (numbers with units ns, us, ms, s, m or h)'`
	StartTimeout *metav1.Duration `json:"startTimeout,omitempty"`

	// startBackoffLimit is how many times in a row a reserved gang that
	// could not start (its startTimeout passed, or the API server refused
	// one of its worker pods, e.g. over a quota) is released and queued
	// again before the attempt fails with the last reason (and maxRetries
	// applies). A gang that started resets the count. Default 3.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	StartBackoffLimit *int32 `json:"startBackoffLimit,omitempty"`

	// timeout bounds how long the phase may run once its gang is Running;
	// past it the attempt fails. A duration such as 90s, 30m or 1h30m.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$') && duration(self) > duration('0s')`,message="must be a duration greater than 0",messageExpression=`self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$') ? 'must be greater than 0 when set' : 'must be a duration such as 90s, 30m or 1h30m (numbers with units ns, us, ms, s, m or h)'`
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// topology places the phase's workers by the cluster's topology (the
	// node label keys the controller's --topology-levels names, top level
	// first): all in one domain of a level (required), in as few as
	// possible (preferred), in slices of sliceSize workers each within
	// one domain, and near an earlier phase's workers (sameDomainAs).
	// Unset: topology plays no part (the workers go onto the fewest
	// nodes, wherever they are).
	// +optional
	Topology *PhaseTopology `json:"topology,omitempty"`
}

// PhaseTopology is a phase's placement by the cluster's topology levels.
//
// +kubebuilder:validation:XValidation:rule="has(self.required) != has(self.preferred)",message="set exactly one of topology.required and topology.preferred"
// +kubebuilder:validation:XValidation:rule="has(self.sliceSize) || !has(self.sliceLevel)",message="sliceLevel needs sliceSize",fieldPath=".sliceLevel"
type PhaseTopology struct {
	// required is a topology level (a node label key): every worker in one
	// domain of it (one rack, one block), or the gang waits.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Required string `json:"required,omitempty"`

	// preferred is a topology level: the workers go into as few domains of
	// it as possible (one if one fits, else within one domain of the level
	// above if that fits, and so on); never a reason to wait.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Preferred string `json:"preferred,omitempty"`

	// sliceSize places the workers in groups of this many consecutive
	// ranks, each group within one domain of sliceLevel (tensor-parallel
	// groups inside a rack, data-parallel across racks). It must divide
	// gang.min and gang.desired; an elastic gang grows by whole slices.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	SliceSize *int32 `json:"sliceSize,omitempty"`

	// sliceLevel is the level each slice stays within; defaults to the
	// level of required or preferred. It should be that level or one
	// below it.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	SliceLevel string `json:"sliceLevel,omitempty"`

	// sameDomainAs names a phase this phase dependsOn: the workers go into
	// the domain (at the level of required or preferred) where most of
	// that phase's workers last ran, its checkpoint's locality. With
	// required the gang waits for that domain; with preferred it goes
	// elsewhere when that domain has no room.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	SameDomainAs string `json:"sameDomainAs,omitempty"`
}

// Level is the level of required or preferred ("" when neither is set).
func (t *PhaseTopology) Level() string {
	if t.Required != "" {
		return t.Required
	}
	return t.Preferred
}

// SliceLevelOrLevel is sliceLevel, or Level when it is unset.
func (t *PhaseTopology) SliceLevelOrLevel() string {
	if t.SliceLevel != "" {
		return t.SliceLevel
	}
	return t.Level()
}

// DefaultStartBackoffLimit is spec.phases[i].startBackoffLimit when unset:
// a gang that cannot start is tried three more times (with a 10s, 20s, 40s
// backoff), then its attempt fails with what held it, instead of holding
// and releasing capacity forever.
const DefaultStartBackoffLimit = 3

// MaxDurationLength is the MaxLength of the spec's durations (timeout,
// startTimeout). Their CEL rule matches Go's duration syntax
// (time.ParseDuration) before converting, so that a typo gets a readable
// message rather than CEL's "type conversion error"; the MaxLength bounds
// the match's cost. A Go client never exceeds it (the longest
// time.Duration.String() is 25 characters); Decode checks it for files.
const MaxDurationLength = 64

// Gang sizes a phase's gang: it starts only when min workers can be placed
// at once; an elastic gang (desired > min) grows toward desired as capacity
// frees and gives back only its surplus above min.
//
// +kubebuilder:validation:XValidation:rule="!has(self.desired) || self.min <= self.desired",message="gang.desired must be greater than or equal to gang.min",fieldPath=".desired"
type Gang struct {
	// min is the number of workers without which the phase cannot start.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	Min int32 `json:"min"`

	// desired is the number of workers the phase would like; defaults to min.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	Desired *int32 `json:"desired,omitempty"`
}

// DesiredOrMin returns desired, or min when desired is unset.
func (g Gang) DesiredOrMin() int32 {
	if g.Desired != nil {
		return *g.Desired
	}
	return g.Min
}

// Elastic reports whether the gang may run with fewer workers than desired.
func (g Gang) Elastic() bool { return g.DesiredOrMin() > g.Min }

// Iterate repeats a chain of phases.
type Iterate struct {
	// phases is the chain to repeat, for example [train, validate]. Within an
	// iteration the chain's phases follow their dependsOn; iteration i+1
	// starts after every chain phase of iteration i has ended.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=32
	// +kubebuilder:validation:items:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Phases []string `json:"phases"`

	// until is an expr-lang boolean expression evaluated after each
	// iteration; when true the loop stops (early stopping). It may read
	// iteration and phases.<name>.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Until string `json:"until,omitempty"`

	// maxIterations bounds the loop.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxIterations int32 `json:"maxIterations"`
}

// Success policies that are not expressions.
const (
	SuccessPolicyAllWorkers = "AllWorkers"
	SuccessPolicyChief      = "Chief"
)

// PhasedTrainingStatus is what phasegang observed and decided.
type PhasedTrainingStatus struct {
	// conditions are the pipeline's conditions (Queued, Starting, Running,
	// Succeeded, Failed, Infeasible, Invalid).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// state summarizes the conditions in one word for tools such as Argo's
	// successCondition: Pending, Queued, Starting (a gang is reserved but
	// fewer than its min workers run), Running, Succeeded, Failed,
	// Infeasible or Invalid. It is derived from conditions, never set alone.
	// +optional
	State PipelineState `json:"state,omitempty"`

	// currentPhase names the phase(s) now queued or running.
	// +optional
	CurrentPhase string `json:"currentPhase,omitempty"`

	// iteration is the current iteration of spec.iterate (0-based).
	// +optional
	Iteration int32 `json:"iteration,omitempty"`

	// workers summarizes the queued and running phases' workers as
	// granted/desired (summed over them), e.g. "6/8"; empty when none is
	// queued or running. It is derived from phases, never set alone.
	// +optional
	Workers string `json:"workers,omitempty"`

	// phases holds one entry per phase and iteration that has been considered.
	// +optional
	// +listType=atomic
	Phases []PhaseStatus `json:"phases,omitempty"`

	// traceID is the OpenTelemetry trace id of this pipeline, so a restarted
	// controller continues the same trace.
	// +optional
	TraceID string `json:"traceID,omitempty"`

	// traceParentSpanID is the span id (16 lowercase hex digits) of the
	// caller's span named by the phasegang.dev/traceparent annotation when
	// traceID was taken from it: the pipeline's root span is its child. Empty
	// when the trace was started by phasegang.
	// +optional
	TraceParentSpanID string `json:"traceParentSpanID,omitempty"`
}

// PipelineState is the one-word summary of a PhasedTraining.
// +kubebuilder:validation:Enum=Pending;Queued;Starting;Running;Succeeded;Failed;Infeasible;Invalid
type PipelineState string

// Pipeline states.
const (
	PipelinePending    PipelineState = "Pending"
	PipelineQueued     PipelineState = "Queued"
	PipelineStarting   PipelineState = "Starting"
	PipelineRunning    PipelineState = "Running"
	PipelineSucceeded  PipelineState = "Succeeded"
	PipelineFailed     PipelineState = "Failed"
	PipelineInfeasible PipelineState = "Infeasible"
	PipelineInvalid    PipelineState = "Invalid"
)

// PhaseState is the state of one phase attempt.
// +kubebuilder:validation:Enum=Pending;Queued;Starting;Running;Succeeded;Failed;Skipped
type PhaseState string

// Phase states.
const (
	// PhasePending: the phase waits for its dependencies.
	PhasePending PhaseState = "Pending"
	// PhaseQueued: the phase's gang waits in the engine's queue.
	PhaseQueued PhaseState = "Queued"
	// PhaseStarting: the gang is reserved but fewer than its min workers
	// run yet (their pods are being created, are Pending, pull their
	// images); a synchronous job would still wait at its rendezvous.
	PhaseStarting PhaseState = "Starting"
	// PhaseRunning: the gang is reserved and has started: at least its min
	// workers run (or every worker ran once).
	PhaseRunning PhaseState = "Running"
	// PhaseSucceeded: the phase met its success policy.
	PhaseSucceeded PhaseState = "Succeeded"
	// PhaseFailed: the phase failed and has no retries left.
	PhaseFailed PhaseState = "Failed"
	// PhaseSkipped: the phase's when was false.
	PhaseSkipped PhaseState = "Skipped"
)

// Reserved reports whether the phase holds a reserved gang: it is
// Starting or Running.
func (s PhaseState) Reserved() bool {
	return s == PhaseStarting || s == PhaseRunning
}

// Ended reports whether the state is final.
func (s PhaseState) Ended() bool {
	return s == PhaseSucceeded || s == PhaseFailed || s == PhaseSkipped
}

// PhaseStatus is one phase in one iteration.
type PhaseStatus struct {
	// name is the phase's name.
	// +required
	Name string `json:"name"`
	// iteration is the iterate loop's iteration (0 outside a loop).
	// +optional
	Iteration int32 `json:"iteration,omitempty"`
	// attempt counts retries: 0 for the first attempt.
	// +optional
	Attempt int32 `json:"attempt,omitempty"`
	// state is the phase's state.
	// +required
	State PhaseState `json:"state"`
	// workers counts the gang's workers.
	// +optional
	Workers WorkerCounts `json:"workers,omitempty"`
	// reservation maps node name to the number of this gang's workers
	// reserved on it. It is written before any worker pod exists.
	// +optional
	Reservation map[string]int32 `json:"reservation,omitempty"`
	// assignments lists, by worker index, the node reserved for each worker.
	// +optional
	// +listType=atomic
	Assignments []string `json:"assignments,omitempty"`
	// domains lists, by worker index, the topology domain of each
	// worker's node (assignments): the values of the controller's
	// --topology-levels labels on it, top level first, joined by "/"
	// (b1/r3/node-17), down to the first level whose label the node lacks
	// ("" if it lacks the top one). Set only when the controller has
	// topology levels.
	// +optional
	// +listType=atomic
	Domains []string `json:"domains,omitempty"`
	// waitingFor says, with numbers, what a queued gang waits for.
	// +optional
	WaitingFor string `json:"waitingFor,omitempty"`
	// message says why the phase ended as it did.
	// +optional
	Message string `json:"message,omitempty"`
	// outputs are the declared outputs read from the workers' termination messages.
	// +optional
	Outputs map[string]string `json:"outputs,omitempty"`
	// queuedTime is when the phase (this attempt) entered the queue.
	// +optional
	QueuedTime *metav1.Time `json:"queuedTime,omitempty"`
	// startFailures counts this attempt's consecutive releases of a gang
	// that could not start (start timeouts and refused pods); at more than
	// spec.phases[i].startBackoffLimit the attempt fails.
	// +optional
	StartFailures int32 `json:"startFailures,omitempty"`
	// notBefore delays queueing after a start failure (backoff).
	// +optional
	NotBefore *metav1.Time `json:"notBefore,omitempty"`
	// reservedTime is when the gang was reserved.
	// +optional
	ReservedTime *metav1.Time `json:"reservedTime,omitempty"`
	// startTime is when every worker of the gang first ran.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// endTime is when the phase ended.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// history lists what happened to this attempt's gang, oldest first: its
	// grants, grows, shrinks, start timeouts, lost nodes and, for a retry,
	// why it was queued. At most MaxPhaseHistory entries are kept (the
	// newest); the trace shows them as span events.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	History []PhaseEvent `json:"history,omitempty"`
}

// MaxPhaseHistory bounds PhaseStatus.History.
const MaxPhaseHistory = 16

// PhaseEvent is one entry of a phase attempt's history.
type PhaseEvent struct {
	// time is when it happened.
	// +required
	Time metav1.Time `json:"time"`
	// type is what happened: Reserved, Grow, Shrink, StartTimeout,
	// FailedCreate, WorkerLost, NodeLost or Retry.
	// +required
	Type PhaseEventType `json:"type"`
	// workers is the gang's size after the event (0 when it lost its gang).
	// +optional
	Workers int32 `json:"workers,omitempty"`
	// message says more; for Reserved it is what the gang waited for.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// PhaseEventType says what a PhaseEvent records.
// +kubebuilder:validation:Enum=Reserved;Grow;Shrink;StartTimeout;FailedCreate;WorkerLost;NodeLost;Retry;Moved;Displaced;Refused;Preempted
type PhaseEventType string

// Phase event types.
const (
	// PhaseEventReserved: the gang was granted; message is the waitingFor
	// text the queued gang last showed.
	PhaseEventReserved PhaseEventType = "Reserved"
	// PhaseEventGrow: an elastic gang got more workers.
	PhaseEventGrow PhaseEventType = "Grow"
	// PhaseEventShrink: an elastic gang gave back surplus workers.
	PhaseEventShrink PhaseEventType = "Shrink"
	// PhaseEventStartTimeout: the gang did not start in time; it was
	// released and the attempt queued again.
	PhaseEventStartTimeout PhaseEventType = "StartTimeout"
	// PhaseEventFailedCreate: the API server refused a worker pod (a
	// quota, an admission webhook); the gang was released whole and the
	// attempt queued again with backoff.
	PhaseEventFailedCreate PhaseEventType = "FailedCreate"
	// PhaseEventWorkerLost: a worker of the gang was preempted, evicted or
	// deleted by someone else; the gang was released whole and the same
	// attempt queued again.
	PhaseEventWorkerLost PhaseEventType = "WorkerLost"
	// PhaseEventNodeLost: a node of the gang was lost; the gang was
	// released and the attempt queued again.
	PhaseEventNodeLost PhaseEventType = "NodeLost"
	// PhaseEventRetry: this attempt (> 0) was queued because the previous
	// one failed.
	PhaseEventRetry PhaseEventType = "Retry"
	// PhaseEventMoved: workers whose pods were not bound yet got other
	// nodes (a pod phasegang does not manage took their node's capacity,
	// or kube-scheduler refused them there); message names the nodes.
	PhaseEventMoved PhaseEventType = "Moved"
	// PhaseEventDisplaced: a pod phasegang does not manage took capacity
	// of the gang's unbound workers and no other node fits them; the gang
	// was released and the attempt queued again.
	PhaseEventDisplaced PhaseEventType = "Displaced"
	// PhaseEventRefused: kube-scheduler refused a worker on its reserved
	// node and no other node fits it now; it stays reserved there.
	PhaseEventRefused PhaseEventType = "Refused"
	// PhaseEventPreempted: the gang borrowed quota of its tenant queue's
	// cohort and was preempted whole to give it back to a lender whose
	// gang waited past its reclaimGracePeriod; message names the lender
	// and the waiting gang. The same attempt was queued again.
	PhaseEventPreempted PhaseEventType = "Preempted"
)

// WorkerCounts counts a gang's workers.
type WorkerCounts struct {
	// min is the gang's minimum size.
	// +optional
	Min int32 `json:"min,omitempty"`
	// desired is the gang's desired size.
	// +optional
	Desired int32 `json:"desired,omitempty"`
	// granted is how many workers are reserved now.
	// +optional
	Granted int32 `json:"granted,omitempty"`
	// running is how many workers run.
	// +optional
	Running int32 `json:"running,omitempty"`
	// succeeded is how many workers succeeded.
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// failed is how many workers failed.
	// +optional
	Failed int32 `json:"failed,omitempty"`
}

// ConditionType is the type of a PhasedTraining condition.
type ConditionType string

// Condition types. At most one of Queued, Starting, Running, Succeeded,
// Failed, Infeasible and Invalid is True at a time; status.state names it.
// Starting: a gang is reserved but fewer than its min workers run yet.
const (
	ConditionQueued     ConditionType = "Queued"
	ConditionStarting   ConditionType = "Starting"
	ConditionRunning    ConditionType = "Running"
	ConditionSucceeded  ConditionType = "Succeeded"
	ConditionFailed     ConditionType = "Failed"
	ConditionInfeasible ConditionType = "Infeasible"
	ConditionInvalid    ConditionType = "Invalid"
)

// Condition reasons (CamelCase, as metav1.Condition requires).
const (
	ReasonWaitingForCapacity = "WaitingForCapacity"
	ReasonBackoff            = "Backoff"
	ReasonGangReserved       = "GangReserved"
	ReasonGangStarting       = "GangStarting"
	ReasonPhaseRunning       = "PhaseRunning"
	ReasonAllPhasesEnded     = "AllPhasesEnded"
	ReasonPhaseFailed        = "PhaseFailed"
	ReasonPhaseTimedOut      = "PhaseTimedOut"
	ReasonStartFailed        = "StartFailed"
	ReasonExpressionError    = "ExpressionError"
	ReasonGangNeverFits      = "GangNeverFits"
	ReasonSpecInvalid        = "SpecInvalid"

	// ReasonWaitingForPriorityClass: Queued, and the pipeline names a
	// PriorityClass the cluster does not have; it is not queued for
	// capacity until the class exists.
	ReasonWaitingForPriorityClass = "WaitingForPriorityClass"
)
