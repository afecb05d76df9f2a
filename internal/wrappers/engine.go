package wrappers

import (
	"time"

	"github.com/phasegang/phasegang/engine"
)

// The engine's values, for engine-level tests (package engine_test and the
// property harness): nodes, gangs, grants, tenant queues and quotas in
// whole units, on the engine's own clock.
//
//	nodes := []engine.Node{wrappers.EngineNode("a", 8), wrappers.EngineNode("b", 8)}
//	r := wrappers.Gang("p", 2, 4, 0, wrappers.InQueue("team-a"))
//	g := wrappers.Grant(r, wrappers.Repeat("a", 4))

// EngineT0 is the engine tests' time zero; a Gang's age counts minutes
// from it.
var EngineT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Resource names of the engine tests.
const (
	GPU    engine.ResourceName = "nvidia.com/gpu"
	CPU    engine.ResourceName = "cpu"
	Memory engine.ResourceName = "memory"
)

// Gi is one GiB of memory in the engine's milli-units.
const Gi = int64(1) << 30 * 1000

// EngineNode is a node with gpus GPUs, 64 CPUs and 512Gi of memory, no
// labels, no taints, nothing used.
func EngineNode(name string, gpus int64) engine.Node {
	return engine.Node{Name: name, Allocatable: engine.ResourceList{
		GPU: engine.Milli(gpus), CPU: engine.Milli(64), Memory: 512 * Gi,
	}}
}

// GangOpt edits a request made by Gang.
type GangOpt func(*engine.Request)

// Gang is the request of pipeline "ns/"+p's train gang: min..desired
// one-GPU workers, created and queued at EngineT0 plus age minutes.
func Gang(p string, min, desired int32, age int, opts ...GangOpt) engine.Request {
	created := EngineT0.Add(time.Duration(age) * time.Minute)
	r := engine.Request{
		Gang: GangKey(p), Created: created, Queued: created,
		Min: min, Desired: desired, Footprint: engine.ResourceList{GPU: engine.Milli(1)},
	}
	for _, o := range opts {
		o(&r)
	}
	return r
}

// GangKey is the key of pipeline "ns/"+p's train gang (attempt 0).
func GangKey(p string) engine.GangKey { return engine.GangKey{Pipeline: "ns/" + p, Phase: "train"} }

// InQueue puts the gang in tenant queue q.
func InQueue(q string) GangOpt { return func(r *engine.Request) { r.Queue = q } }

// HostPort makes each worker ask for host port port.
func HostPort(port int32) GangOpt {
	return func(r *engine.Request) { r.HostPorts = []engine.HostPort{{Port: port}} }
}

// OnePerNode spreads the gang's workers one per node.
func OnePerNode() GangOpt { return func(r *engine.Request) { r.OnePerNode = true } }

// Grant is a grant of r with worker i on nodes[i] and the given workers
// unbound.
func Grant(r engine.Request, nodes []string, unbound ...int32) engine.Grant {
	return engine.Grant{Request: r, Workers: nodes, Unbound: unbound}
}

// Repeat is node n times: the nodes of n workers on one node.
func Repeat(node string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = node
	}
	return out
}

// EngineQueue is a tenant queue of nominal GPUs, in cohort (if not "").
func EngineQueue(name, cohort string, nominal int64) engine.Queue {
	return engine.Queue{Name: name, Cohort: cohort, Resources: map[engine.ResourceName]engine.QueueQuota{GPU: {Nominal: engine.Milli(nominal)}}}
}

// EngineQuota is namespace ns's ResourceQuota name of hard GPUs.
func EngineQuota(ns, name string, hard int64) engine.Quota {
	return engine.Quota{Namespace: ns, Name: name, Hard: engine.ResourceList{GPU: engine.Milli(hard)}}
}

// TopoLevels are the engine tests' topology levels: block, rack, host.
var TopoLevels = []string{"example.com/block", "example.com/rack", "kubernetes.io/hostname"}

// TopoNode is EngineNode(name, gpus) in block/rack (its host level is
// its name) with used GPUs taken by pods no grant covers.
func TopoNode(name string, gpus, used int64, block, rack string) engine.Node {
	n := EngineNode(name, gpus)
	n.Domain = []string{block, rack, name}
	if used > 0 {
		n.Used = engine.ResourceList{GPU: engine.Milli(used)}
	}
	return n
}

// Topo places the gang by level l of TopoLevels: required or preferred.
func Topo(l int, required bool) GangOpt {
	return func(r *engine.Request) {
		r.Topology = &engine.Topology{Level: l, LevelName: TopoLevels[l], Required: required}
	}
}

// Slices places the gang (which has a Topo) in slices of size within one
// domain of level l.
func Slices(size int32, l int) GangOpt {
	return func(r *engine.Request) {
		r.Topology.SliceSize, r.Topology.SliceLevel, r.Topology.SliceLevelName = size, l, TopoLevels[l]
	}
}

// Near asks the gang (which has a Topo) for the domain of the nodes an
// earlier phase ran on (sameDomainAs).
func Near(nodes ...string) GangOpt { return func(r *engine.Request) { r.Topology.Near = nodes } }
