// Package phases compiles a PhasedTraining spec into a Pipeline and runs its
// state machine. It is pure: no I/O, no clients, time is passed in. The
// controller, the admission webhook, the CLI and the simulator all use it,
// so they agree on what is valid and on what happens next.
//
// # The DAG
//
// spec.phases form a DAG through dependsOn. A phase is queued (its gang
// submitted to the engine) once every phase it depends on has ended
// Succeeded or Skipped. A Skipped dependency counts as ended so that an
// optional step (when: false) does not block the rest of the pipeline.
// Compile rejects unknown names, self dependencies and cycles, reporting the
// cycle in run order ("train → validate → train") because that is how users
// read a pipeline.
//
// # Iterate
//
// spec.iterate repeats a chain of phases (for example train → validate).
// Inside an iteration the chain phases follow their dependsOn, each
// dependency read at the same iteration. Iteration i+1 starts only after
// every chain phase of iteration i ended; then iterate.until is evaluated
// (it sees iteration i): true stops the loop (early stopping), false starts
// iteration i+1 unless i+1 == maxIterations. A phase outside the chain that
// depends (even transitively) on a chain phase runs once, after the loop,
// and sees the last iteration. The chain must be closed: a phase outside it
// cannot be both downstream and upstream of chain phases, because it would
// have to run inside every iteration while being declared to run once.
//
// # Expressions
//
// when, iterate.until and expression success policies use expr-lang
// (github.com/expr-lang/expr), compiled once per spec against types built
// for that spec with reflect.StructOf. Undefined names are compile errors:
// a typo in a phase name or an output key is rejected at admission rather
// than discovered hours into a run. Every expression must be boolean.
//
// when and until see:
//
//	iteration                      int: the current iteration (0 without a loop)
//	phases.<name>.state            "Pending", "Queued", "Starting", "Running", "Succeeded", "Failed" or "Skipped"
//	phases.<name>.workers          int: granted workers
//	phases.<name>.succeeded        int (also failed, running)
//	phases.<name>.attempt          int: 0 for the first attempt
//	phases.<name>.iteration        int: the iteration of the instance seen
//	phases.<name>.outputs.<key>    string: a declared output
//
// Names with '-' use brackets: phases["train-big"].state. Outputs are
// strings because termination messages are; convert with expr's builtins:
//
//	float(phases.validate.outputs.accuracy) >= 0.9
//	phases["train-big"].state == "Succeeded" && iteration < 3
//
// Reading an output the phase did not report is an evaluation error (not
// ""), so a missing metric cannot silently skip a phase or end a loop; an
// evaluation error in when or until fails the pipeline with the field path.
// Guard with the state when a phase may be skipped:
// phases.validate.state == "Skipped" || float(phases.validate.outputs.accuracy) > 0.9.
//
// A success policy expression sees this phase's workers, succeeded, failed,
// running (ints) and outputs.<key>. Note that expr's / is float division:
// with 5 workers, succeeded >= workers / 2 needs 3; write
// succeeded >= int(workers / 2) for integer division.
//
// # State machine
//
// Pipeline.Next(status, observations, now) reads the status (one entry per
// phase, iteration and attempt) and what the controller observed of running
// gangs, and returns a Step: instances to queue, instances skipped, attempts
// that ended, gangs to requeue after a start timeout, and the pipeline's
// state. Pipeline.Apply writes a Step into a status. Next applies its own
// decisions to a copy and decides again until nothing changes, so one call
// goes as far as the observations allow, and calling it again on the
// applied status decides nothing: reconciles are idempotent.
//
//   - Success policy: AllWorkers succeeds when every granted worker
//     succeeded and fails as soon as one fails; Chief follows worker 0; an
//     expression succeeds when true and fails when false once every worker
//     ended (an evaluation error while workers still run means "not yet").
//   - Retries: a failed attempt below maxRetries queues attempt+1 (without
//     re-evaluating when: the dependencies did not change); otherwise the
//     pipeline fails, naming the phase.
//   - timeout: a Running attempt whose workers started more than timeout
//     ago fails (and may be retried).
//   - startTimeout: a reserved gang whose workers are not all running
//     startTimeout after the reservation is released and the same attempt
//     requeued with notBefore = now + backoff (10s doubling per start timeout,
//     capped at 10 minutes): what blocked it (image pulls, a bad node) is
//     unlikely to clear at once, and its reservation blocks other gangs.
//   - A refused pod (Observation.Refused: a quota, an admission webhook)
//     is a start failure too: the gang is released whole and requeued with
//     the same backoff. More than startBackoffLimit start failures in a row
//     (default 3), or a refusal that cannot pass (an invalid pod), fail the
//     attempt with the last reason ("did not start ..."), and maxRetries
//     applies; a requeue restarts the attempt's queuedTime (the wait is
//     queueing only), never its pipeline's age.
//   - A lost worker (Observation.Lost: preempted, evicted, deleted by
//     someone else) releases the whole gang and requeues the same attempt
//     at once, without backoff or a spent retry: a gang is never re-created
//     one worker at a time.
//   - Step.Wake tells the controller when to look again for timeouts and
//     backoffs without a new event.
package phases
