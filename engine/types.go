package engine

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ResourceName names a resource: "nvidia.com/gpu", "cpu", "memory", or any
// extended resource.
type ResourceName string

// ResourceList maps resource names to amounts in milli-units (what
// resource.Quantity.MilliValue returns): 1 GPU is 1000, 500m CPU is 500, 1Ki
// of memory is 1024000. One unit for every resource keeps the engine free of
// per-resource special cases.
type ResourceList map[ResourceName]int64

// Milli converts whole units to the engine's milli-units.
func Milli(units int64) int64 { return units * 1000 }

// GangKey identifies one attempt of one phase of one pipeline.
type GangKey struct {
	// Pipeline is "namespace/name" of the PhasedTraining.
	Pipeline string
	// Phase is the phase's name.
	Phase string
	// Iteration is the iterate loop's iteration (0 outside a loop).
	Iteration int32
	// Attempt counts retries (0 for the first attempt).
	Attempt int32
}

func (k GangKey) String() string {
	return fmt.Sprintf("%s/%s#%d.%d", k.Pipeline, k.Phase, k.Iteration, k.Attempt)
}

// Node is one node as the engine sees it.
type Node struct {
	Name   string
	Labels map[string]string
	Taints []corev1.Taint
	// Unschedulable is spec.unschedulable (a cordoned node).
	Unschedulable bool
	// Allocatable is status.allocatable.
	Allocatable ResourceList
	// Used is the sum of the requests of the node's non-terminal pods that
	// phasegang does not manage: capacity the engine must not promise.
	Used ResourceList
	// Leaving is the part of Used that comes back by itself: pods being
	// deleted, and phasegang's own pods whose grant ended (they are
	// deleted next). A node overcommitted only because of them is waited
	// out; one overcommitted by pods that stay displaces workers.
	Leaving ResourceList
	// LastPod names ("namespace/name") the most recently created pod on
	// the node that no grant covers and that is not leaving: the likeliest
	// taker of reserved capacity, named when the node is found
	// overcommitted. Empty when unknown.
	LastPod string
	// HostPorts are the host ports the node's pods that no grant covers
	// bind: no worker binding a conflicting one is placed there.
	HostPorts []HostPort
	// Domain is the node's topology path: the values of the cluster's
	// topology level labels, top level first (block, rack, host). An
	// empty value leaves the node out of that level and every level
	// below it: a gang with a Topology on such a level never uses it.
	Domain []string
}

// Topology places a gang by the cluster's topology levels (indices into
// Node.Domain; topology.go).
type Topology struct {
	// Level is the level the gang is placed at; LevelName its label key,
	// for messages. -1: the phase names a level the cluster does not
	// have (the gang can never fit).
	Level     int
	LevelName string
	// Required keeps every worker in one domain of Level, or the gang
	// waits; otherwise the workers go into as few domains of Level as
	// possible (one if one fits, else within one domain of the level
	// above if that fits, and so on).
	Required bool
	// SliceSize > 1 places the workers in slices of that many consecutive
	// indices, each slice within one domain of SliceLevel (at or below
	// Level; a level above Level counts as Level). An elastic gang grows
	// by whole slices.
	SliceSize      int32
	SliceLevel     int
	SliceLevelName string
	// Near are the nodes an earlier phase's workers ran on
	// (sameDomainAs): the gang goes into the domain of Level holding most
	// of them, if it fits there; with Required it waits for that domain.
	Near []string
}

// Constraints restrict the nodes a worker may use; they are the worker pod
// template's own scheduling fields, evaluated with kube-scheduler's helpers.
type Constraints struct {
	NodeSelector map[string]string
	Affinity     *corev1.Affinity
	Tolerations  []corev1.Toleration
}

// Request is one gang that wants capacity: a phase attempt that is queued, or
// a granted elastic gang that may grow.
type Request struct {
	Gang GangKey
	// Priority orders the queue: higher first.
	Priority int32
	// Created is the pipeline's creation time. Every phase of a pipeline
	// carries it, so a later phase keeps the pipeline's place in the queue.
	Created time.Time
	// Queued is when this phase attempt entered the queue; the starvation
	// bound is measured from it.
	Queued time.Time
	// NotBefore holds the request back until then (backoff after a start
	// timeout).
	NotBefore time.Time
	// Min and Desired size the gang; 1 <= Min <= Desired.
	Min, Desired int32
	// Footprint is one worker's effective pod request (containers, sidecars,
	// init containers and overhead, as kube-scheduler computes it).
	Footprint ResourceList
	// Constraints restrict the nodes a worker may use.
	Constraints Constraints
	// HostPorts are the host ports one worker binds (HostPortsOf): no two
	// workers with conflicting ones share a node, so a gang with any has
	// at most one worker per node (hostports.go).
	HostPorts []HostPort
	// OnePerNode keeps the gang's workers on distinct nodes: the
	// template's required pod anti-affinity on kubernetes.io/hostname
	// selects the gang's own workers (phases.SpreadsOwnWorkers).
	OnePerNode bool
	// Quota is what the namespace's ResourceQuotas read of a worker
	// beyond its Footprint (limits, scope facts); see Snapshot.Quotas.
	Quota QuotaFacts
	// Queue names the tenant queue the gang is admitted against (the
	// pipeline's spec.queueName); "" is the queue named DefaultQueue, if
	// there is one, else none. See Snapshot.Queues.
	Queue string
	// Topology places the gang by domain; nil: topology plays no part.
	Topology *Topology
	// Spread puts a gang that one node can hold on the node with the
	// MOST room rather than the least (best fit): kube-scheduler's
	// default LeastAllocated scoring. phasegang never sets it; the
	// simulator's kueue policy does for the pods kube-scheduler places
	// one at a time once Kueue admits a Job.
	Spread bool
}

// Grant is a reservation in the ledger: the nodes of a gang's workers.
type Grant struct {
	Request
	// Workers[i] is the node reserved for worker i. len(Workers) is the
	// granted size, between Min and Desired.
	Workers []string
	// Release asks the engine to release the grant in this cycle (the phase
	// ended, the pipeline was deleted, or the gang missed its start timeout).
	Release bool
	// LostNode names a removed node that held one of its workers; the next
	// cycle releases the grant with reason NodeLost. A grant whose worker
	// names a node missing from the snapshot is treated the same way.
	LostNode string
	// Unbound lists the workers whose pods are not bound to their granted
	// node yet (not created, or Pending): their capacity is only
	// promised, and kube-scheduler, which does not see grants, may give
	// it to another pod. The engine moves such a worker when its node can
	// no longer hold it (see displace.go). Workers not listed are bound,
	// or not known to be unbound, and are never moved: a started gang is
	// never touched.
	Unbound []int32
	// Refused lists unbound workers kube-scheduler refused to bind on
	// their granted node (PodScheduled False, Unschedulable) for a reason
	// moving may cure (not a missing volume). The engine moves each to
	// another node that fits it on free capacity, or leaves it and says
	// so (Plan.Refused).
	Refused []RefusedWorker
}

// RefusedWorker is a granted worker kube-scheduler refused to bind.
type RefusedWorker struct {
	Index int32
	// Message is kube-scheduler's reason (the PodScheduled message).
	Message string
	// Moved counts how often this worker was moved for a refusal already
	// (moves whose Message begins with RefusedMovePrefix). The engine
	// moves a refused worker once: a reason kube-scheduler finds on every
	// node would otherwise have its pod deleted and made again forever.
	Moved int32
}

// Snapshot is everything one scheduling cycle reads.
type Snapshot struct {
	// Now is the cycle's time; the engine never reads the clock.
	Now   time.Time
	Nodes []Node
	// Ledger holds the current grants, rebuilt from PhasedTraining statuses.
	Ledger []Grant
	// Queue holds the gangs waiting for a first grant.
	Queue []Request
	// Upcoming holds the phases the pipelines will queue later (not queued
	// yet). The engine checks each against the empty cluster: a pipeline
	// with one that can never fit is reported Infeasible at once, naming
	// that phase, and none of its queued gangs is admitted, so it spends
	// no capacity on phases whose successors could never run.
	Upcoming []Request
	// Fence is the previous cycle's Plan.Fence (may be nil); carrying it
	// keeps a starving head's drain set stable from cycle to cycle.
	Fence *Fence
	// Nominated is the previous cycle's Plan.Nominated: the queued gangs
	// that gangs were preempted for. Carried, they keep reclaiming their
	// queue's nominal quota until admitted, so a borrower preempted for
	// one is not admitted again ahead of it the next cycle.
	Nominated []GangKey
	// Quotas are the namespaces' ResourceQuotas (a gang's namespace is
	// its key's Pipeline up to the "/"): a gang is granted only if every
	// quota that applies to its workers admits all of them at once.
	Quotas []Quota
	// Queues are the tenant queues (TenantQueues): a gang is granted only
	// if its queue's use plus its Min workers stay within the queue's
	// nominal quota plus what it may borrow from its cohort. Without
	// queues nothing is limited by one.
	Queues []Queue
}

// Config tunes the policy.
type Config struct {
	// StarvationBound is how long the head of the queue may wait while
	// smaller gangs backfill around it. Past it, no gang is admitted onto
	// the nodes the head is waiting for. Zero means strict order.
	StarvationBound time.Duration
	// SkipWaiting leaves Plan.Waiting empty. The simulator sets it: it
	// never reads the explanations, and building them for thousands of
	// queued gangs every cycle would dominate its run time.
	SkipWaiting bool
	// StrictFIFO admits gangs strictly in queue order (per tenant queue,
	// with queues): once a gang gets nothing, none behind it is tried in
	// that cycle, and nothing backfills around it. It is the simulator's
	// strict-fifo baseline (Kueue's StrictFIFO queueing, a plain gang
	// scheduler), not a setting of the controller.
	StrictFIFO bool
}

// DefaultConfig is the configuration used when none is given.
func DefaultConfig() Config { return Config{StarvationBound: 10 * time.Minute} }

// Plan is the engine's decision for one cycle. Apply Releases first, then
// Moves and Shrinks, then Reserves and Grows.
type Plan struct {
	// Releases are grants to drop: their phase ended, a worker's node is
	// gone, or a worker's node was taken and no other node fits it.
	Releases []Release
	// Moves re-place unbound workers of granted gangs whose node can no
	// longer hold them (or kube-scheduler refused them) on nodes that fit.
	Moves []Move
	// Refused lists workers kube-scheduler refused that no other node
	// fits now: they stay where they are reserved.
	Refused []Refusal
	// Reserves are new grants: every worker of the gang placed at once.
	Reserves []Reservation
	// Grows add workers to granted elastic gangs.
	Grows []Reservation
	// Shrinks remove surplus workers (above Min) from elastic gangs.
	Shrinks []Shrink
	// Waiting explains every queued gang that got nothing.
	Waiting []Wait
	// Infeasible lists gangs that cannot fit even in the empty cluster,
	// queued or upcoming (Snapshot.Upcoming, State.Expect).
	Infeasible []Infeasible
	// Fence is the drain set of a starving head, to pass to the next cycle.
	Fence *Fence
	// Nominated lists the queued gangs that gangs were preempted for and
	// that are not admitted yet, to pass to the next cycle
	// (Snapshot.Nominated).
	Nominated []GangKey
	// Queues reports each tenant queue's use after the cycle, in name
	// order (empty without queues, or with Config.SkipWaiting).
	Queues []QueueUsage
	// Preemptions are whole borrowing gangs stopped to give quota back to
	// a lender whose gang waited past its reclaimGracePeriod (preempt.go);
	// each is in Releases too, with reason ReleasePreempted.
	Preemptions []Preemption
	// Recheck is the next instant at which time alone may change a
	// decision (a backoff ends, a gang reaches its starvation bound or
	// its queue's reclaimGracePeriod); zero if none is ahead. A caller
	// that runs cycles only on events (the simulator) runs one then.
	Recheck time.Time
}

// Release drops a whole grant.
type Release struct {
	Gang   GangKey
	Reason ReleaseReason
	// Message says why, for events and status.
	Message string
}

// ReleaseReason says why a grant was released.
type ReleaseReason string

// Release reasons.
const (
	ReleaseRequested ReleaseReason = "Requested"
	ReleaseNodeLost  ReleaseReason = "NodeLost"
	// ReleaseDisplaced: a pod no grant covers took the capacity of an
	// unbound worker's node and no other node fits the worker; like a
	// lost node, the caller queues the same attempt again.
	ReleaseDisplaced ReleaseReason = "Displaced"
)

// Move re-places workers of one granted gang: each keeps its index and
// gets a new node. The rest of the grant stays.
type Move struct {
	Gang    GangKey
	Reason  MoveReason
	Workers []MovedWorker
	// Message says why and where to, for events and status.
	Message string
}

// MovedWorker is one worker of a Move.
type MovedWorker struct {
	Index    int32
	From, To string
}

// MoveReason says why workers were moved.
type MoveReason string

// Move reasons.
const (
	// MoveDisplaced: a pod no grant covers took the worker's node's capacity.
	MoveDisplaced MoveReason = "Displaced"
	// MoveRefused: kube-scheduler refused the worker on its node.
	MoveRefused MoveReason = "Refused"
)

// Refusal is a refused worker the engine could not move: no other node
// fits it on free capacity now.
type Refusal struct {
	Gang  GangKey
	Index int32
	Node  string
	// Message says so, with kube-scheduler's reason.
	Message string
}

// Reservation places workers of a gang. For a Reserve, Workers holds every
// worker of the new grant (indices 0..n-1); for a Grow, the added workers,
// with indices continuing the grant's.
type Reservation struct {
	Gang    GangKey
	Workers []WorkerPlacement
}

// WorkerPlacement pins one worker index to one node.
type WorkerPlacement struct {
	Index int32
	Node  string
}

// Shrink removes the highest-index workers of an elastic grant.
type Shrink struct {
	Gang GangKey
	// Workers are the removed workers (highest indices first).
	Workers []WorkerPlacement
	// For is the gang that needed the capacity.
	For GangKey
}

// Fence is the set of nodes reserved for draining toward a starving head.
type Fence struct {
	Head  GangKey
	Nodes []string
}

// WaitReason says why a queued gang got nothing.
type WaitReason string

// Wait reasons.
const (
	// WaitCapacity: not enough free capacity on matching nodes now.
	WaitCapacity WaitReason = "Capacity"
	// WaitBehindHead: it would fit, but on nodes drained for a starving head.
	WaitBehindHead WaitReason = "BehindStarvingHead"
	// WaitBackoff: the request's NotBefore has not passed.
	WaitBackoff WaitReason = "Backoff"
	// WaitPipelineCannotFinish: another phase of its pipeline, queued or
	// upcoming, can never fit (Plan.Infeasible names it).
	WaitPipelineCannotFinish WaitReason = "PipelineCannotFinish"
	// WaitQuota: a ResourceQuota of its namespace does not admit its
	// workers now (Wait.Quota says which, with the numbers).
	WaitQuota WaitReason = "Quota"
	// WaitQueue: its tenant queue does not admit its workers now, or does
	// not exist (Wait.Queue says which, with the numbers).
	WaitQueue WaitReason = "Queue"
)

// Wait explains, with numbers, why a gang is still queued.
type Wait struct {
	Gang   GangKey
	Reason WaitReason
	// Ahead is how many gangs waiting for capacity are ahead of this one
	// in its queue's order (priority, then pipeline age); AheadIn names
	// that queue, "" when no tenant queue exists (the whole cluster).
	// It is a place in the order, not a bound on when the gang starts:
	// younger gangs that fit free capacity may start first (backfill)
	// until the gang at the head waits past the starvation bound.
	Ahead   int
	AheadIn string
	// Min is the number of workers needed at once; Footprint is one worker's.
	Min       int32
	Footprint ResourceList
	// FitNow is how many of its workers fit on free capacity now, across
	// NodesWithRoom nodes; LargestBlock is the most on any one node.
	FitNow        int32
	NodesWithRoom int
	LargestBlock  int32
	// MatchingNodes is how many nodes pass the constraints.
	MatchingNodes int
	// Starving is true when the gang is the head and past the starvation
	// bound: the nodes in Plan.Fence are draining for it.
	Starving bool
	// NotBefore is when a gang in backoff may be placed again.
	NotBefore time.Time
	// Quota is the quota a WaitQuota gang waits for.
	Quota *QuotaShortfall
	// Queue is the queue a WaitQueue gang waits for.
	Queue *QueueShortfall
	// Topology says, for a gang with a Topology, which level is short
	// and the best domain's numbers ("" otherwise).
	Topology string
}

// Infeasible says why a gang cannot fit even in the empty cluster.
type Infeasible struct {
	Gang GangKey
	// Message is a sentence with the numbers.
	Message string
	// Nodes says the nodes rule it out (no current node, even empty,
	// holds a worker, or all of them together not the gang), not a quota
	// or tenant queue: more nodes would let it in.
	Nodes bool
}
