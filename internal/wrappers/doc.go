// Package wrappers builds the API objects tests need, tersely and in one
// place for the whole module (in the style of Kueue's pkg/util/testing and
// JobSet's wrappers):
//
//	wrappers.MakePT("job").Phase("train", 8).GPUs(1).Desired(16).
//		Status(wrappers.Running("train", "n1", "n2")).Obj()
//
// What it builds: PhasedTrainings (MakePT, a fixture as stored; NewPT, as a
// user applies it, for the end-to-end tests), worker pod templates
// (MakeTemplate), phase statuses (Running, Starting, Queued, PhaseIn and
// the MakePS builder; Status for a whole PhasedTrainingStatus), pods
// (MakePod, Edit with Bound and Terminated), nodes (MakeNode, GPUNode,
// NodeResources for a simulator's node pool), TenantQueues (MakeQueue)
// and ResourceQuotas (MakeQuota).
//
// Every builder is plain data: no client, no clock. Test files of phases,
// engine, driver, sim, controllers and test/e2e use it instead of keeping
// builders of their own.
//
// wrappers never imports phases, driver, sim or controllers: their own (package-internal) tests import wrappers, and
// Go refuses that cycle. So what needs one of them takes it as an
// argument: Compiled(t, driver.Compile, pt) compiles a fixture or fails
// the test, and a pod that driver.BuildWorkerPod made is finished with
// Edit(pod, Bound(node, phase), Terminated(msgs...)). The simulator's own
// types (sim.Scenario, NodePool, Workload) stay plain literals in sim's
// tests, with wrappers' PhasedTrainings and NodeResources inside.
package wrappers
