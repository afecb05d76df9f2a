// Package eventqueue is the discrete-event queue behind phasegang's
// virtual clocks: the simulator (sim) and the engine's property
// harness both run their event loops on it, so both order time the same
// way. Events pop earliest first; events at the same instant pop in the
// order they were pushed, so a run is deterministic.
package eventqueue
