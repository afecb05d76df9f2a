// Package sim is phasegang's discrete-event simulator: the very same engine
// (package engine) driven by a virtual clock over a virtual cluster, with
// the very same phase state machine (package phases) deciding what each
// pipeline does next. Nothing sleeps; a run is deterministic. Like the
// controller (package controllers) it is an adapter of the engine built on
// package driver: it stands in for the API server, the kubelets and the
// clock, and calls the driver's functions as the controller does.
//
// A Scenario holds node pools and PhasedTraining objects (the YAML a user
// applies to a cluster) plus what only a simulation needs: arrival times,
// phase run times, outputs and injected failures. A GPU-cluster trace
// (Philly or Tiresias CSV) becomes a Scenario through TraceScenario, with
// an assumed train/validate/test split of each job.
//
// Run simulates one Policy: phasegang itself, or a baseline the
// alternatives embody (per-pod, whole-job, per-phase-rigid), each on the
// same capacity model, so a table compares like with like. Under per-pod
// the seed's deadlock appears: the run stops when nothing can progress and
// reports the pipelines holding workers that can never complete.
//
// A Result carries the run's figures (Metrics, with the lower bounds of
// LowerBound and JCTAvgLowerBound, and the tenant queues' Fairness);
// package sim/report turns Results into tables, CSV, Gantt charts and
// queue charts, and RunSuite's rows into the policy suite's table.
package sim
