package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TenantQueue is one tenant's (a team's) share of the cluster: a nominal
// quota per resource that the engine admits its PhasedTrainings' gangs
// against, in the same decision that places them on nodes. Queues that
// name the same cohort lend each other the nominal quota they do not use,
// within each one's lendingLimit and borrowingLimit. PhasedTrainings reach
// a queue by spec.queueName; one without it goes to the queue named
// "default", if there is one. A cluster without TenantQueues schedules as
// if queues did not exist.
//
// It is cluster-scoped because quota is a cluster administrator's
// decision: a namespace's users must not be able to raise their own.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=tq,categories=phasegang
// +kubebuilder:printcolumn:name="Cohort",type=string,JSONPath=`.spec.cohort`
// +kubebuilder:printcolumn:name="Usage",type=string,JSONPath=`.status.usage`,description="per resource, what the queue's granted gangs hold / its nominal quota, and what it borrows from its cohort"
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.pendingGangs`,description="gangs of the queue waiting for a first grant"
// +kubebuilder:printcolumn:name="Admitted",type=integer,JSONPath=`.status.admittedGangs`,description="gangs of the queue holding a grant"
// +kubebuilder:printcolumn:name="Weight",type=string,JSONPath=`.spec.fairSharing.weight`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TenantQueue struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the queue's quota, cohort, fair-sharing weight and
	// preemption policy.
	// +required
	Spec TenantQueueSpec `json:"spec"`

	// status is what the queue's gangs use now; written only by the
	// controller.
	// +optional
	Status TenantQueueStatus `json:"status,omitempty"`
}

// TenantQueueList is a list of TenantQueue.
//
// +kubebuilder:object:root=true
type TenantQueueList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the TenantQueues.
	// +required
	Items []TenantQueue `json:"items"`
}

// DefaultQueueName names the queue that PhasedTrainings without
// spec.queueName go to. A name rather than a flag on the queue: the API
// server keeps names unique, so there is never a second default to
// resolve (Kueue's LocalQueue defaulting uses the same name).
const DefaultQueueName = "default"

// TenantQueueSpec is a queue's quota and policy.
//
// +kubebuilder:validation:XValidation:rule="has(self.cohort) || self.resources.all(r, !has(r.borrowingLimit) && !has(r.lendingLimit))",message="borrowingLimit and lendingLimit need a cohort to borrow from and lend to",fieldPath=".resources",reason=FieldValueForbidden
type TenantQueueSpec struct {
	// resources lists the queue's quota per resource. A gang of the queue
	// is granted only if, for every resource listed here, the queue's use
	// plus the gang's min workers stay within the nominal quota plus what
	// the queue may borrow from its cohort. A resource not listed is not
	// limited by the queue.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Resources []QueueResource `json:"resources"`

	// cohort names the group of queues this one borrows from and lends
	// to: the queues that name the same cohort lend each other the
	// nominal quota they do not use. Unset: the queue neither borrows nor
	// lends.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Cohort string `json:"cohort,omitempty"`

	// fairSharing orders the queues against each other: the queue whose
	// use is furthest below its nominal quota, relative to its weight,
	// has its next gang considered first.
	// +optional
	FairSharing *FairSharing `json:"fairSharing,omitempty"`

	// preemption says what the queue may take back, and from whom, when
	// its gangs wait: quota its cohort borrowed (reclaimWithinCohort), at
	// phase boundaries and past reclaimGracePeriod by preempting
	// borrowing gangs whole, and its own quota from its lower-priority
	// gangs (withinQueue). See docs/queues.md.
	// +optional
	Preemption *QueuePreemption `json:"preemption,omitempty"`
}

// QueueResource is a queue's quota of one resource.
//
// Its quantities are int-or-string, like a ResourceQuota's, with a
// maxLength: the bound is what lets CEL's cost estimator price the rules
// below low (an unbounded string costs as much as the largest request).
// The rules convert with string() first, so `8` and "8" read alike, and
// leave a value that is not a quantity to the pattern's error.
//
// +kubebuilder:validation:XValidation:rule="!has(self.lendingLimit) || !isQuantity(string(self.lendingLimit)) || !isQuantity(string(self.nominalQuota)) || quantity(string(self.lendingLimit)).compareTo(quantity(string(self.nominalQuota))) <= 0",message="lendingLimit must not exceed nominalQuota",fieldPath=".lendingLimit"
// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self.nominalQuota)) || !quantity(string(self.nominalQuota)).isLessThan(quantity('0'))",message="nominalQuota must not be negative",fieldPath=".nominalQuota"
// +kubebuilder:validation:XValidation:rule="!has(self.borrowingLimit) || !isQuantity(string(self.borrowingLimit)) || !quantity(string(self.borrowingLimit)).isLessThan(quantity('0'))",message="borrowingLimit must not be negative",fieldPath=".borrowingLimit"
// +kubebuilder:validation:XValidation:rule="!has(self.lendingLimit) || !isQuantity(string(self.lendingLimit)) || !quantity(string(self.lendingLimit)).isLessThan(quantity('0'))",message="lendingLimit must not be negative",fieldPath=".lendingLimit"
type QueueResource struct {
	// name is the resource as worker pods request it: nvidia.com/gpu,
	// cpu, memory, or "pods" to count workers.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Name string `json:"name"`

	// nominalQuota is what the queue is entitled to: its gangs may always
	// hold this much (when the nodes have room), and what they leave
	// unused its cohort may borrow.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`
	NominalQuota resource.Quantity `json:"nominalQuota"`

	// borrowingLimit bounds what the queue may use beyond nominalQuota,
	// borrowed from its cohort. Unset: as much as the cohort lends.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`
	BorrowingLimit *resource.Quantity `json:"borrowingLimit,omitempty"`

	// lendingLimit bounds how much of nominalQuota the cohort may borrow
	// when the queue leaves it unused; the rest is the queue's alone.
	// Unset: all of it.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`
	LendingLimit *resource.Quantity `json:"lendingLimit,omitempty"`
}

// FairSharing is a queue's weight in the order across queues.
type FairSharing struct {
	// weight scales the queue's share: the queue with the lowest share
	// (its dominant resource's use divided by its nominal quota, divided
	// by the weight) goes first. A queue of weight 2 may use twice the
	// fraction of its nominal quota before another queue of weight 1
	// goes ahead of it. Defaults to 1.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`
	// +kubebuilder:default="1"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || quantity(string(self)).isGreaterThan(quantity('0'))",message="weight must be greater than 0"
	Weight *resource.Quantity `json:"weight,omitempty"`
}

// PreemptionPolicy says which gangs a queue may take capacity back from,
// as Kueue names the choices.
// +kubebuilder:validation:Enum=Never;LowerPriority;Any
type PreemptionPolicy string

// Preemption policies.
const (
	PreemptNever         PreemptionPolicy = "Never"
	PreemptLowerPriority PreemptionPolicy = "LowerPriority"
	PreemptAny           PreemptionPolicy = "Any"
)

// QueuePreemption is what a queue may take back when its gangs wait.
type QueuePreemption struct {
	// withinQueue: whether a gang of the queue that has waited longer
	// than reclaimGracePeriod for the queue's own nominal quota preempts
	// the queue's running gangs that hold it: LowerPriority, those of
	// lower priority; Any, also those of equal priority and a younger
	// pipeline (never an older one, which queue order puts ahead).
	// Elastic surplus is shrunk first, then whole gangs are preempted, and
	// nothing unless that lets the waiting gang in. With
	// reclaimWithinCohort too, a gang that fits within the nominal quota
	// only once those are gone takes them and what the cohort borrows in
	// one preemption, as Kueue does. Needs reclaimGracePeriod; Never: the
	// queue's gangs wait for its phases to end.
	// +optional
	// +kubebuilder:default=Never
	WithinQueue PreemptionPolicy `json:"withinQueue,omitempty"`

	// reclaimWithinCohort: whether the queue takes back the nominal quota
	// its cohort borrowed when its own gangs need it (LowerPriority: only
	// from gangs of lower priority than the waiting one; Any). Today the
	// quota is taken back at phase boundaries only: while one of this
	// queue's gangs waits for its nominal quota, a borrowing queue's next
	// phase is not admitted on borrowed quota. With reclaimGracePeriod
	// set, borrowing gangs still running after it are preempted whole.
	// +optional
	// +kubebuilder:default=Never
	ReclaimWithinCohort PreemptionPolicy `json:"reclaimWithinCohort,omitempty"`

	// reclaimGracePeriod is how long a gang of the queue waits (from when
	// it was queued) for the nominal quota its cohort borrowed, or (with
	// withinQueue) that the queue's own lower-priority gangs hold, before
	// those gangs are preempted whole to give it back: their pods are
	// deleted with their normal grace period and their phases queued
	// again as the same attempt. Unset: nothing is preempted; the quota
	// comes back at phase boundaries only. Acted on with
	// reclaimWithinCohort or withinQueue LowerPriority or Any. A duration
	// such as 0s, 90s, 30m or 1h30m.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$') && duration(self) >= duration('0s')`,message="must be a duration of at least 0",messageExpression=`self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$') ? 'must not be negative' : 'must be a duration such as 90s, 30m or 1h30m (numbers with units ns, us, ms, s, m or h)'`
	ReclaimGracePeriod *metav1.Duration `json:"reclaimGracePeriod,omitempty"`
}

// TenantQueueStatus is what a queue's gangs use now, as the scheduler's
// last cycle saw it.
type TenantQueueStatus struct {
	// conditions are the queue's conditions (reserved for later use).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// resources are, for each resource the queue limits (in name
	// order), its nominal quota, what its granted gangs
	// hold and what it borrows from its cohort.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Resources []QueueResourceUsage `json:"resources,omitempty"`

	// usage renders resources for kubectl get tq's Usage column, e.g.
	// "cpu: 0/256, nvidia.com/gpu: 12/8 (4 borrowed)": used/nominal per
	// resource. It is for people: programs read resources.
	// +optional
	Usage string `json:"usage,omitempty"`

	// pendingGangs counts the queue's gangs waiting for a first grant.
	// +optional
	PendingGangs int32 `json:"pendingGangs,omitempty"`

	// admittedGangs counts the queue's gangs holding a grant.
	// +optional
	AdmittedGangs int32 `json:"admittedGangs,omitempty"`
}

// QueueResourceUsage is a queue's quota and use of one resource.
type QueueResourceUsage struct {
	// name is the resource, as in spec.resources.
	// +required
	Name string `json:"name"`

	// nominal is the queue's nominalQuota of the resource.
	// +required
	Nominal resource.Quantity `json:"nominal"`

	// used is what the queue's granted gangs hold of the resource, from
	// the grant until the phase ends.
	// +required
	Used resource.Quantity `json:"used"`

	// borrowed is what the queue uses beyond nominal, lent by its cohort:
	// max(0, used - nominal).
	// +required
	Borrowed resource.Quantity `json:"borrowed"`
}
