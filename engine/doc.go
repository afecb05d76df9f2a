// Package engine is phasegang's pure gang-scheduling core. It decides; the
// controller and the simulator apply.
//
// One cycle:
//
//	Snapshot{Now, Nodes, Ledger, Queue, Upcoming, Fence, Quotas, Queues}
//	       │
//	       ▼
//	┌────────────┐  release   grants whose phase ended or whose node is gone
//	│   State    │──────────▶
//	│            │  displace  unbound workers whose node another pod took:
//	│            │──────────▶ move them where they fit, or release the gang
//	│            │            whole; move refused workers that fit cleanly
//	│ nodes ×    │  admit     queue order: priority ▸ pipeline age ▸ name;
//	│ resources, │──────────▶ reserve min workers of each gang at once,
//	│ ledger,    │            reclaiming younger elastic surplus if needed;
//	│ queue,     │            only if its tenant queue (nominal + borrowable
//	│ tenant     │            from its cohort) and its namespace's quotas
//	│ queues,    │            admit them all; queues in fair-share order;
//	│ quotas     │            backfill behind a blocked head until it starves,
//	│            │            then fence the nodes it drains
//	│            │  grow      elastic gangs ahead of every blocked gang
//	│            │──────────▶ grow toward desired
//	│            │  explain   Waiting (numbers) / Infeasible (never fits)
//	└────────────┘──────────▶
//	       │
//	       ▼
//	Plan{Releases, Moves, Refused, Shrinks, Reserves, Grows, Waiting, Infeasible, Fence, Queues}
//
// The engine never reads the clock (time is Snapshot.Now or Cycle's
// argument), never does I/O, and imports neither client-go nor
// controller-runtime: a test enforces it. It uses k8s.io/api types and
// kube-scheduler's component-helpers only to evaluate node affinity and
// taints exactly as the scheduler does; it parses no pod spec (the
// driver turns a worker's spec into its footprint, host ports and quota
// facts).
//
// Two ways to drive it: Schedule(cfg, snapshot) for a caller that rebuilds
// its view every cycle (the controller after a restart), or a long-lived
// State updated incrementally (Submit, Release, AddNode, Cycle), which is
// what the simulator does.
//
// Glossary: a gang is one phase attempt's workers, admitted all at once; a
// grant (reservation) pins each worker to a node; the ledger is the set of
// grants; a worker is unbound until its pod is bound where granted, and
// only unbound workers are ever moved; the head is the first gang in
// queue order that does not fit; backfill is admitting gangs behind it;
// the starvation bound ends backfill onto the head's fence, the nodes it
// drains; elastic surplus is the workers of a grant above its min, the
// only thing ever reclaimed.
package engine
