// Package eventqueue is the discrete-event queue and loop behind
// phasegang's virtual clocks: the simulator (sim) and the engine's
// property harness both run on Queue and Loop, so both order time and
// settle an instant the same way. Events pop earliest first; events at the
// same instant pop in the order they were pushed, so a run is
// deterministic. Loop handles an instant's events, then reruns the
// caller's settle step (progress, a scheduling cycle) until it changes
// nothing, within caps.
package eventqueue
