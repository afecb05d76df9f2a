// Package planner keeps the scratch planner that docs/simulator.md's
// paragraphs from "A planner in the engine" on quote: an online planner
// that replays the simulator under each of the engine's rules and follows
// the best. It is an experiment, not part of phasegang, and it is kept as
// a patch so that its figures can be rerun after the build that gave them
// is gone.
//
// planner.patch applies to commit 47fd934. It adds to the engine two
// switches a test sets for every cycle (a queued elastic gang takes older
// gangs' surplus once k of them queue; growth goes to the youngest gang
// first), adds each phase's starting width to the simulator's records,
// and adds the planner as sim/planner_scratch_test.go; its doc comment
// lists the environment variables that pick the variant. Those
// switches are not rules phasegang has, which is why the patch is not on
// main. From the repository's root:
//
//	git worktree add /tmp/planner 47fd934
//	git -C /tmp/planner apply "$PWD/hack/planner/planner.patch"
//	cd /tmp/planner/sim && X_SUITE=seed X_E=0.9 X_STEP=1m X_BASEGUARD=0.8 X_ROBUST=1 X_BASEVIEW=forecast X_LEARN=fit X_GATE=0.1 X_MINN=1 go test -run '^TestScratchEnginePlanner$' -v -timeout 3h .
//
// prints the planner that learns the run times and the scaling on the
// seed under 0.9 efficiency per doubling ("Learning the work and the
// scaling", in docs/simulator.md): 1.0948 × LB. The test in this package
// runs those commands in a temporary directory and checks that figure.
// seed-jitter-5.yaml and seed-jitter-15.yaml are the seed with each
// pipeline's run times drawn a little off (their headers say how), for
// X_SCENARIO.
package planner
