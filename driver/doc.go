// Package driver is the glue between a PhasedTraining and the engine,
// shared by the controller and the simulator so that what the simulator
// measures is what the controller does. It is pure: plain functions of
// data, no client, no clock (time is an argument), and a test keeps
// client-go and controller-runtime out of it.
//
//	PhasedTraining + status ──Demand──▶ engine requests (ledger, queue, upcoming)
//	engine.Plan ──ApplyPlan──▶ per-pipeline status changes + events
//	workers observed + now ──Advance──▶ next status + events (phases.Next, Apply,
//	                                     history, stop what must stop, conditions)
//	status + pods ──SyncWorkers──▶ pods to create / delete
//
// The controller reads the cluster, calls these, and writes what they
// return; the simulator plays the cluster with a virtual clock and calls
// the very same functions.
package driver
