// Package controllers runs phasegang on a Kubernetes cluster. It
// translates and applies; the engine decides.
//
//   - Scheduler (one per cluster, leader-elected) reads Nodes, Pods and
//     PhasedTrainings from the manager's cache, builds an engine.Snapshot
//     (the ledger is rebuilt from the statuses every cycle, so a restart
//     loses and doubles nothing), asks engine.Schedule for a Plan, and
//     writes each grant (worker → node) into the PhasedTraining's status.
//     It keeps the statuses it wrote as assumptions until the cache shows
//     them, so a stale cache never grants the same capacity twice.
//   - Reconciler (per PhasedTraining) validates the spec (an invalid one
//     gets condition Invalid with field paths and is never scheduled),
//     observes the worker pods, lets phases.Pipeline.Next decide, writes
//     the status once, and only then creates the reserved workers' pods,
//     pinned to their nodes, and deletes pods that are no longer reserved.
//     A status that only queues phases is the exception (a new
//     pipeline's first, or a phase's end that hands over to its
//     successors): the reconciler proposes it (Scheduler.Propose) and the
//     scheduler stores it with its first decision on them, in one write.
//
// Worker pods get deterministic names, owner references, labels, a
// headless Service per pipeline for stable peer names, and the
// environment distributed trainers read (PHASEGANG_*, TF_CONFIG,
// RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT).
package controllers
