package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/phasegang/phasegang/examples"
	"github.com/phasegang/phasegang/sim"
)

func main() {
	o, err := parseArgs(os.Args[1:])
	if err == nil {
		err = run(o, os.Stdout)
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "ageorder:", err)
		os.Exit(2)
	}
}

// seedTarget is the suite's target for the seed, its first workload:
// its makespan at most this × LB.
var seedTarget = sim.SuiteWorkloads(examples.SeedScenario)[0].MaxMakespanOverLB

// meetsTarget reports whether o ends by the seed's target over lb.
func meetsTarget(o outcome, lb float64) bool { return o.makespan <= seedTarget*lb }

// options are the command's flags.
type options struct {
	efficiency float64
	seed       uint64
	n          int
	estimates  bool
	variants   bool
}

func parseArgs(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("ageorder", flag.ContinueOnError)
	fs.Float64Var(&o.efficiency, "efficiency-per-doubling", 0.9, "the trains' parallel efficiency per doubling of workers, in [0.5, 1]")
	fs.Uint64Var(&o.seed, "seed", 1, "the search's random seed")
	fs.IntVar(&o.n, "n", 150000, "widths to try in the search")
	fs.BoolVar(&o.estimates, "estimates", false, "print only the planner's figures with its trains' run times estimated within ±10%, ±20% and ±50% (-seed ignored)")
	fs.BoolVar(&o.variants, "variants", false, "print only phasegang's and the planner's figures on 15 variants of the seed: its burst at 1h00m to 1h20m, its other pipelines 14, 15 or 16 minutes apart (-seed and -n ignored)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.estimates && o.variants {
		return o, errors.New("-estimates and -variants: give one")
	}
	if o.efficiency < 0.5 || o.efficiency > 1 {
		return o, fmt.Errorf("-efficiency-per-doubling %v: want a value in [0.5, 1]", o.efficiency)
	}
	if o.n < 1 {
		return o, fmt.Errorf("-n %d: want at least 1", o.n)
	}
	return o, nil
}

// run prints the seed's figures: the engine's, the model's at full
// width, each online rule's and the hindsight search's best.
func run(o options, w io.Writer) error {
	e, n := o.efficiency, o.n
	if o.variants {
		return runVariants(e, w)
	}
	engine, err := runEngine(e)
	if err != nil {
		return err
	}
	pipes := pipelinesOf(engine)
	lb := engine.Metrics.LowerBound
	line := func(name string, makespan, jct float64) {
		fmt.Fprintf(w, "  %-46s %9s  %.4f  %9s\n", name, seconds(makespan), makespan/lb, seconds(jct))
	}
	fmt.Fprintf(w, "seed scenario, efficiency %.2f per doubling: LB %s, %.2f × LB %s\n", e, seconds(lb), seedTarget, seconds(seedTarget*lb))
	fmt.Fprintf(w, "  %-46s %9s  %6s  %9s\n", "schedule", "makespan", "× LB", "JCT avg")
	line("phasegang (the engine)", engine.Metrics.Makespan, engine.Metrics.JCTAvg)
	if o.estimates {
		runEstimates(pipes, e, line)
		return nil
	}
	own := simulate(pipes, uniform(len(pipes), trainMax), e)
	line("this model, every train up to 8", own.makespan, own.jctAvg)
	youngest := uniform(len(pipes), trainMax)
	youngest.youngestFirst = true
	yo := simulate(pipes, youngest, e)
	line("every train up to 8, the youngest grows first", yo.makespan, yo.jctAvg)
	for _, r := range rules() {
		out := simulate(pipes, withRule(len(pipes), r), e)
		line(r.name, out.makespan, out.jctAvg)
	}
	tb, tx := bestRule(pipes, e, tableRules(len(pipes)))
	line("best of 1250 caps by younger trains queued:", tb.makespan, tb.jctAvg)
	fmt.Fprintf(w, "    %s\n", tableName(tx))
	kb, kx := bestRule(pipes, e, takeRules(len(pipes)))
	line("best of 16 takes of older trains' GPUs:", kb.makespan, kb.jctAvg)
	fmt.Fprintf(w, "    %s (leaves the age order)\n", takeName(kx))
	both := takeTableRules(len(pipes))
	outs := outcomes(pipes, e, both)
	met := 0
	for _, o := range outs {
		if meetsTarget(o, lb) {
			met++
		}
	}
	b := best(outs, func(int) bool { return true })
	line(fmt.Sprintf("best of %d takes with caps:", len(both)), outs[b].makespan, outs[b].jctAvg)
	fmt.Fprintf(w, "    %s, %s; %d of them end by %.2f × LB\n", takeName(both[b]), tableName(both[b]), met, seedTarget)
	u := best(outs, func(i int) bool { return capsNothing(both[i]) })
	line("  the best of them that caps nothing", outs[u].makespan, outs[u].jctAvg)
	fmt.Fprintf(w, "    %s, %s\n", takeName(both[u]), tableName(both[u]))
	rules := plannerRules(len(pipes))
	for _, knows := range []bool{true, false} {
		name := "a planner knowing run times and scaling"
		if !knows {
			name = "a planner knowing run times, scaling linear"
		}
		pl := planner{e: e, knowsScaling: knows, rules: rules}.plan(pipes).result()
		line(name, pl.makespan, pl.jctAvg)
	}
	best, x := search(pipes, e, o.seed, n)
	line(fmt.Sprintf("best of %d widths chosen in hindsight", n), best.makespan, best.jctAvg)
	fmt.Fprintf(w, "validates and tests of the best waited at most %s once ready\n", seconds(best.maxRigidWait))
	fmt.Fprintln(w, describe(pipes, x))
	return nil
}

// runEstimates prints the planner's runs (knowing the scaling) with each
// train's run time estimated within ±10%, ±20% and ±50%: a factor per
// pipeline drawn uniformly from [1 − spread, 1 + spread], five draws each
// (PCG seeds 1 to 5).
func runEstimates(pipes []pipeline, e float64, line func(string, float64, float64)) {
	rules := plannerRules(len(pipes))
	for _, spread := range []float64{0.1, 0.2, 0.5} {
		for draw := uint64(1); draw <= 5; draw++ {
			rng := rand.New(rand.NewPCG(draw, 0))
			estimate := make([]float64, len(pipes))
			for p := range estimate {
				estimate[p] = 1 - spread + 2*spread*rng.Float64()
			}
			r := planner{e: e, knowsScaling: true, rules: rules, estimate: estimate}.plan(pipes).result()
			line(fmt.Sprintf("a planner, run times within ±%.0f%% (draw %d)", 100*spread, draw), r.makespan, r.jctAvg)
		}
	}
}

// runVariants prints phasegang's figures and the planner's (knowing run
// times and scaling) on the seed with its burst of three pipelines
// arriving at 1h00m to 1h20m and its nine other pipelines 14, 15 or 16
// minutes apart: whether what meets the target on the seed meets it on
// seeds a few minutes off.
func runVariants(e float64, w io.Writer) error {
	fmt.Fprintf(w, "seed variants, efficiency %.2f per doubling: × each variant's LB\n", e)
	fmt.Fprintf(w, "  %-8s  %-5s  %8s  %9s  %6s  %7s  %11s\n", "burst at", "apart", "LB", "phasegang", "model", "planner", "its JCT avg")
	met, total := 0, 0
	var rules []widths // the planner's, built once: every variant has the seed's 12 pipelines
	for burst := time.Hour; burst <= 80*time.Minute; burst += 5 * time.Minute {
		for apart := 14 * time.Minute; apart <= 16*time.Minute; apart += time.Minute {
			engine, err := runEngineOn(e, seedVariant(burst, apart))
			if err != nil {
				return err
			}
			pipes := pipelinesOf(engine)
			lb := engine.Metrics.LowerBound
			own := simulate(pipes, uniform(len(pipes), trainMax), e)
			if rules == nil {
				rules = plannerRules(len(pipes))
			}
			pl := planner{e: e, knowsScaling: true, rules: rules}.plan(pipes).result()
			fmt.Fprintf(w, "  %-8s  %-5s  %8s  %9.4f  %6.4f  %7.4f  %11s\n", shortDuration(burst), shortDuration(apart), seconds(lb),
				engine.Metrics.Makespan/lb, own.makespan/lb, pl.makespan/lb, seconds(pl.jctAvg))
			total++
			if meetsTarget(pl, lb) {
				met++
			}
		}
	}
	fmt.Fprintf(w, "the planner ends %d of the %d by %.2f × LB\n", met, total, seedTarget)
	return nil
}

// seedVariant moves the seed's burst to arrive at burst and spaces its
// other pipelines apart.
func seedVariant(burst, apart time.Duration) func(*sim.Scenario) {
	return func(sc *sim.Scenario) {
		sc.Workload[0].Interval.Duration = apart
		sc.Workload[1].Arrival.Duration = burst
	}
}

// shortDuration prints 1h0m0s as 1h00m and 14m0s as 14m.
func shortDuration(d time.Duration) string {
	if d < time.Hour {
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// runEngine runs phasegang on the seed, for its pipelines and figures.
func runEngine(e float64) (*sim.Result, error) { return runEngineOn(e, nil) }

// runEngineOn runs phasegang on the seed as vary changes it (nil: the
// seed itself).
func runEngineOn(e float64, vary func(*sim.Scenario)) (*sim.Result, error) {
	sc, err := sim.LoadScenario(examples.SeedScenario)
	if err != nil {
		return nil, err
	}
	if vary != nil {
		vary(sc)
	}
	sc.Scaling = &sim.Scaling{EfficiencyPerDoubling: e}
	return sim.Run(sc, sim.Options{Policy: sim.PolicyPhasegang})
}

// pipelinesOf lists the run's pipelines in age order.
func pipelinesOf(r *sim.Result) []pipeline {
	var pipes []pipeline
	for _, p := range r.Pipelines {
		pipes = append(pipes, pipeline{name: p.Name, arrival: p.Arrival.Seconds()})
	}
	slices.SortFunc(pipes, func(a, b pipeline) int {
		return cmp.Or(cmp.Compare(a.arrival, b.arrival), strings.Compare(a.name, b.name))
	})
	return pipes
}

// search is a random local search over the trains' widths: a fifth of
// the tries are fresh random widths, the rest change one to three
// pipelines' widths of the best so far (and now and then the growth
// order). Ties on makespan go to the lower average JCT.
func search(pipes []pipeline, e float64, seed uint64, n int) (outcome, widths) {
	rng := rand.New(rand.NewPCG(seed, 0))
	width := func() int { return trainMin + rng.IntN(trainMax-trainMin+1) }
	mark := func() float64 { return float64(300 * rng.IntN(49)) } // 0 … 4h
	var best outcome
	var bestX widths
	for i := range n {
		var x widths
		if i == 0 || rng.Float64() < 0.2 {
			x = uniform(len(pipes), trainMax)
			for p := range pipes {
				x.start[p], x.capBefore[p], x.capAfter[p], x.capAt[p] = width(), width(), width(), mark()
			}
			x.youngestFirst = rng.IntN(2) == 1
		} else {
			x = bestX.clone()
			for range 1 + rng.IntN(3) {
				p := rng.IntN(len(pipes))
				switch rng.IntN(3) {
				case 0:
					x.capBefore[p] = width()
				case 1:
					x.capAfter[p] = width()
				default:
					x.capAt[p] = mark()
				}
				x.start[p] = width()
			}
			if rng.Float64() < 0.05 {
				x.youngestFirst = !x.youngestFirst
			}
		}
		o := simulate(pipes, x, e)
		if i == 0 || o.beats(best) {
			best, bestX = o, x
		}
	}
	return best, bestX
}

func (x widths) clone() widths {
	return widths{start: slices.Clone(x.start), capBefore: slices.Clone(x.capBefore), capAfter: slices.Clone(x.capAfter),
		capAt: slices.Clone(x.capAt), youngestFirst: x.youngestFirst}
}

// describe prints the widths, one pipeline per line.
func describe(pipes []pipeline, x widths) string {
	var b strings.Builder
	order := "oldest"
	if x.youngestFirst {
		order = "youngest"
	}
	fmt.Fprintf(&b, "its widths (growth goes to the %s train first):\n", order)
	for p, pp := range pipes {
		fmt.Fprintf(&b, "  %-10s starts with up to %d, grows to at most %d before %s and %d from then\n",
			pp.name, x.start[p], x.capBefore[p], seconds(x.capAt[p]), x.capAfter[p])
	}
	return strings.TrimRight(b.String(), "\n")
}

func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}
