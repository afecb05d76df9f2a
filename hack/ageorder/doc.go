// Command ageorder searches the schedules of the seed scenario
// (examples/simulate/seed-deadlock.yaml) that keep phasegang's age order,
// for the shortest makespan: how close to the lower bound a scheduler can
// get on the seed without letting a younger pipeline's phase pass an older
// one's.
//
// It is an analysis tool, not part of phasegang: docs/simulator.md
// ("What the age order leaves") quotes its output. It models the seed
// alone (trains of 8 one-GPU workers, elastic from 4; validates of 2 and
// tests of 1 for 10 minutes each; 16 GPUs), with an event loop of its own
// that keeps the engine's order:
//
//   - every phase queues with its pipeline's age (arrival, then name);
//   - a ready gang starts when its min fits once younger running trains
//     give back their surplus above min; a younger gang starts only when
//     an older one does not fit (backfill);
//   - free GPUs left after the walk go to running trains.
//
// Its one free choice is each train's width: the width the train starts
// at, and a cap on its growth. With every width at 8 and growth oldest
// first it is phasegang's run; the test checks that against the engine
// (sim.Run). It prints that run, then simple online rules (rules.go: a
// cap fixed, held while trains queue, or at the trains' equal share), the
// best of 1,250 caps set by how many younger trains queue, the best of 16
// rules that leave the age order (a queued train takes older trains' GPUs
// above a floor) alone and with each of the 1,250 caps (how many of
// those 20,000 end by 1.10 × LB, and the best that caps nothing), an
// online planner that knows the run times (planner.go), then the best a
// random local search finds over widths chosen in hindsight (each train's
// start width and a cap that may change once, at a 5-minute mark), which
// no online scheduler can choose.
//
//	go run ./hack/ageorder -efficiency-per-doubling 0.9 -seed 1 -n 150000
//
// With -estimates it prints only the planner's runs with each train's run
// time off by up to ±10%, ±20% and ±50% (five draws each):
//
//	go run ./hack/ageorder -efficiency-per-doubling 0.9 -estimates
//
// With -variants it prints only phasegang's and the planner's figures on
// 15 seeds a few minutes off the seed (its burst at 1h00m to 1h20m, its
// other pipelines 14 to 16 minutes apart), each against its own LB:
// whether what meets the target on the seed meets it on its neighbours.
//
//	go run ./hack/ageorder -efficiency-per-doubling 0.9 -variants
package main
