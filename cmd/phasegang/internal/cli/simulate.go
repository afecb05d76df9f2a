package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/examples"
	"github.com/phasegang/phasegang/sim"
	"github.com/phasegang/phasegang/sim/report"
)

type simulateFlags struct {
	trace           string
	nodes, gpus     int
	split           string
	minGPUs, limit  int
	skip, window    time.Duration
	clip            time.Duration
	policy          string
	compare         bool
	starvationBound time.Duration
	output          string
	csv, gantt      string
	stats           bool
	progress        string
	otlp            string
	suite           bool
	suiteWorkloads  string
	efficiency      float64
	resizeCost      time.Duration
	teams           int
	reclaimGrace    time.Duration
	queueChart      string
}

func newSimulate() *cobra.Command {
	f := &simulateFlags{}
	cmd := &cobra.Command{
		Use:   "simulate [SCENARIO.yaml]",
		Short: "Run the scheduling engine on a virtual cluster (a scenario, a trace, or the built-in seed scenario)",
		Long: `simulate drives phasegang's engine with a virtual clock over a virtual cluster:
no cluster needed, no sleeping, deterministic.

With no argument it runs the built-in seed scenario (examples/simulate/seed-deadlock.yaml):
12 train (8 GPUs, elastic from 4) → validate (2) → test (1) pipelines on
2 nodes × 8 GPUs; 9 arrive one every 15 minutes, 3 more at once at 1h10m.
With --trace it reads a Philly or Tiresias CSV; each job becomes a
train (80%, elastic min ⌈g/2⌉..g) → validate (10%, max(1,g/4)) → test (10%, 1)
pipeline. That split is an assumption: traces record jobs, not phases.
A workload on which no pipeline can ever run (no GPUs, no pods resource, a
nodeSelector that no node matches, ...) is refused, with the reason.

--compare runs every policy on the same workload and prints one table:
  phasegang        per-phase gangs, released between phases, elastic
  per-pod          one pod at a time, FCFS, no gang (the default scheduler)
  whole-job        one gang for the largest phase, held through all phases
  per-phase-rigid  per-phase gangs, always at desired size
  strict-fifo      per-phase gangs at desired size, strictly in queue order, no backfill`,
		Example: `  phasegang simulate --compare
  phasegang simulate examples/simulate/seed-deadlock.yaml --policy per-pod
  phasegang simulate --trace tiresias-60job.csv --nodes 32 --gpus-per-node 4 --compare
  phasegang simulate --trace philly.csv --min-gpus 2 --window 24h --clip 24h --nodes 32 --compare --gantt day.svg
  phasegang simulate --suite`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSimulate(cmd.OutOrStdout(), cmd.ErrOrStderr(), f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.trace, "trace", "", "read a Philly or Tiresias trace CSV instead of a scenario")
	fl.IntVar(&f.nodes, "nodes", 0, "trace cluster: number of nodes (default: sized to the trace's load)")
	fl.IntVar(&f.gpus, "gpus-per-node", 8, "trace cluster: GPUs per node")
	fl.StringVar(&f.split, "split", "0.8,0.1,0.1", "trace: train,validate,test share of each job's duration")
	fl.IntVar(&f.minGPUs, "min-gpus", 0, "trace: keep jobs with at least this many GPUs")
	fl.IntVar(&f.limit, "limit", 0, "trace: keep the first N jobs")
	fl.DurationVar(&f.skip, "skip", 0, "trace: drop jobs arriving in the first DURATION of the trace")
	fl.DurationVar(&f.window, "window", 0, "trace: keep jobs arriving within DURATION after --skip")
	fl.DurationVar(&f.clip, "clip", 0, "trace: cap each job's duration")
	fl.StringVar(&f.policy, "policy", string(sim.PolicyPhasegang), "policy: phasegang, per-pod, whole-job, per-phase-rigid or strict-fifo")
	fl.BoolVar(&f.compare, "compare", false, "run every policy on the same workload, one table")
	fl.DurationVar(&f.starvationBound, "starvation-bound", engine.DefaultConfig().StarvationBound, "how long the queue's head waits while smaller gangs backfill")
	fl.StringVarP(&f.output, "output", "o", "table", "output: table or json")
	fl.StringVar(&f.csv, "csv", "", "write one row per pipeline (and policy) to this CSV file")
	fl.StringVar(&f.gantt, "gantt", "", "write a GPU-occupancy chart (per node, coloured by pipeline and phase) to FILE.svg or FILE.png; with --compare, one file per policy")
	fl.BoolVar(&f.stats, "stats", false, "print wall time, engine time and peak memory (the benchmark figures)")
	fl.StringVar(&f.otlp, "otlp", "", "export one OpenTelemetry trace per simulated pipeline (virtual timestamps from 2026-01-01) to ENDPOINT: host:port for OTLP/gRPC, http(s)://host:port for OTLP/HTTP; see docs/tracing.md")
	fl.BoolVar(&f.suite, "suite", false, "run the policy suite (fixed workloads, every policy) and fail where phasegang misses one of its targets (no baseline dominates it; JCT avg within 1% of the best; a packing a baseline finds kept); see docs/simulator.md")
	fl.StringVar(&f.suiteWorkloads, "suite-workloads", "", "with --suite: run only these workloads (comma-separated names)")
	fl.DurationVar(&f.resizeCost, "resize-cost", 0, "scaling model: the progress an elastic phase loses each time it grows or shrinks while running (its framework's re-rendezvous and checkpoint reload), e.g. 2m (default: the scenario's, else 0); with --suite, for every workload")
	fl.Float64Var(&f.efficiency, "efficiency-per-doubling", 0, "scaling model: the parallel efficiency an elastic phase keeps each time its workers double, in [0.5, 1] (1: linear; default: the scenario's scaling, else linear); with --suite, for every workload")
	fl.IntVar(&f.teams, "teams", 0, "trace: share the cluster between the N busiest teams (Philly's virtual clusters; else jobs dealt out in turn), each a TenantQueue team-NAME of equal nominal quota in one cohort; prints each queue's share of its entitlement")
	fl.DurationVar(&f.reclaimGrace, "reclaim-grace", 10*time.Minute, "with --teams: the queues' reclaimGracePeriod (reclaimWithinCohort Any); negative: no preemption spec (reclaimWithinCohort Never): borrowed quota comes back only as the borrowers' phases end")
	fl.StringVar(&f.queueChart, "queue-chart", "", "write each tenant queue's GPUs held and entitled over time to FILE.svg (scenarios with queues); with --compare, one file per policy")
	fl.StringVar(&f.progress, "progress", "auto", "progress bar on stderr: auto (a terminal, runs over 2s), always, never")
	return cmd
}

func runSimulate(stdout, stderr io.Writer, f *simulateFlags, args []string) error {
	if f.suite {
		return runSuite(stdout, stderr, f, args)
	}
	sc, err := loadWorkload(stderr, f, args)
	if err != nil {
		return err
	}
	if sc.Scaling, err = scalingFlag(f, sc.Scaling); err != nil {
		return err
	}
	policies, err := simulatePolicies(f)
	if err != nil {
		return err
	}
	if f.output != "table" && f.output != "json" {
		return fmt.Errorf("--output %q: want table or json", f.output)
	}
	var exp *simExporter
	if f.otlp != "" {
		if exp, err = newSimExporter(f.otlp); err != nil {
			return err
		}
		defer exp.shutdown(stderr)
	}
	var results []*sim.Result
	for _, p := range policies {
		r, err := simulatePolicy(stderr, f, sc, p, exp)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	if err := writeResults(stdout, f.output, results); err != nil {
		return err
	}
	if err := writeSimulateFiles(f, sc, results); err != nil {
		return err
	}
	if f.stats {
		printStats(stdout, results)
	}
	return nil
}

// simulatePolicies are the policies to run: every one with --compare,
// else the one --policy names.
func simulatePolicies(f *simulateFlags) ([]sim.Policy, error) {
	if f.compare {
		return sim.Policies, nil
	}
	p, err := sim.ParsePolicy(f.policy)
	if err != nil {
		return nil, err
	}
	return []sim.Policy{p}, nil
}

// simulatePolicy runs sc under policy p, with a progress bar and, when exp
// is set, one exported trace per pipeline.
func simulatePolicy(stderr io.Writer, f *simulateFlags, sc *sim.Scenario, p sim.Policy, exp *simExporter) (*sim.Result, error) {
	opts := sim.Options{
		Policy: p,
		Engine: &engine.Config{StarvationBound: f.starvationBound},
		Record: f.gantt != "",
		Clock:  time.Now,
	}
	bar := newProgressBar(stderr, f.progress, string(p))
	opts.Progress = bar.update
	var pt *simPolicyTracer
	if exp != nil {
		pt = exp.policy(p)
		opts.Observer = pt.observe
	}
	r, err := sim.Run(sc, opts)
	bar.done()
	if err != nil {
		return nil, err
	}
	if pt != nil {
		pt.finish(r)
	}
	return r, nil
}

// writeSimulateFiles writes the files the flags ask for: --csv, --gantt
// and --queue-chart.
func writeSimulateFiles(f *simulateFlags, sc *sim.Scenario, results []*sim.Result) error {
	if f.csv != "" {
		if err := writeFile(f.csv, func(w io.Writer) error {
			for _, r := range results {
				if err := report.WriteCSV(w, r); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if f.gantt != "" {
		if err := writeGantts(f.gantt, sc, results); err != nil {
			return err
		}
	}
	if f.queueChart != "" {
		if err := writeQueueCharts(f.queueChart, results); err != nil {
			return err
		}
	}
	return nil
}

// printStats prints the benchmark figures of --stats.
func printStats(stdout io.Writer, results []*sim.Result) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	for _, r := range results {
		fmt.Fprintf(stdout, "%s: %d pipelines, wall %.1fs, engine %.1fs in %d cycles (%.0f placements/s)\n",
			r.Policy, len(r.Pipelines), r.Wall.Seconds(), r.EngineWall.Seconds(), r.Cycles, r.Metrics.DecisionsPerSec)
	}
	fmt.Fprintf(stdout, "peak memory (max RSS): %d MiB\n", ru.Maxrss/1024)
}

// loadWorkload reads the scenario (or trace) and refuses one on which no
// pipeline can ever run: simulating it would only print "0/N finished".
func loadWorkload(stderr io.Writer, f *simulateFlags, args []string) (*sim.Scenario, error) {
	if f.trace != "" {
		if len(args) > 0 {
			return nil, fmt.Errorf("give a scenario file or --trace, not both")
		}
		sc, err := loadTraceScenario(stderr, f)
		if err == nil {
			if err = sim.CheckRunnable(sc); err != nil {
				err = fmt.Errorf("%s: %w", f.trace, err)
			}
		}
		return sc, err
	}
	name, data := "built-in seed scenario", examples.SeedScenario
	if len(args) == 1 {
		var err error
		name = args[0]
		if data, err = os.ReadFile(name); err != nil {
			return nil, err
		}
	}
	sc, err := sim.LoadScenario(data)
	if err == nil {
		err = sim.CheckRunnable(sc)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return sc, nil
}

func loadTraceScenario(stderr io.Writer, f *simulateFlags) (*sim.Scenario, error) {
	o := sim.DefaultTraceOptions()
	parts := strings.Split(f.split, ",")
	if len(parts) != 3 {
		return nil, fmt.Errorf("--split %q: want three shares, e.g. 0.8,0.1,0.1", f.split)
	}
	var sum float64
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("--split %q: share %d is not a positive number", f.split, i+1)
		}
		o.Split[i], sum = v, sum+v
	}
	if math.Abs(sum-1) > 1e-6 {
		return nil, fmt.Errorf("--split %q: shares add up to %g, want 1", f.split, sum)
	}
	o.MinGPUs, o.Limit, o.Skip, o.Window, o.Clip = f.minGPUs, f.limit, f.skip, f.window, f.clip
	if f.teams < 0 {
		return nil, fmt.Errorf("--teams %d: want a number of teams >= 1", f.teams)
	}
	o.Teams = f.teams
	if f.reclaimGrace >= 0 {
		g := f.reclaimGrace
		o.ReclaimGrace = &g
	}
	file, err := os.Open(f.trace)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	jobs, err := sim.ReadTrace(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.trace, err)
	}
	jobs = sim.FilterTrace(jobs, o)
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%s: no job left after the filters", f.trace)
	}
	if f.gpus < 1 {
		return nil, fmt.Errorf("--gpus-per-node must be at least 1")
	}
	nodes := f.nodes
	if nodes == 0 {
		nodes = sim.SizeCluster(jobs, f.gpus)
		fmt.Fprintf(stderr, "trace cluster: %d nodes × %d GPUs (sized to the trace's mean load at 80%% utilization; set --nodes to choose)\n", nodes, f.gpus)
	}
	return sim.TraceScenario(filepath.Base(f.trace), jobs, o, nodes, f.gpus), nil
}

func writeResults(w io.Writer, format string, results []*sim.Result) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	if len(results) > 0 {
		fmt.Fprintf(w, "scenario %s: %d pipelines on %d GPUs\n", results[0].Scenario, len(results[0].Pipelines), results[0].GPUs)
	}
	if err := report.WriteTable(w, results); err != nil {
		return err
	}
	if err := report.WriteFairness(w, results); err != nil {
		return err
	}
	for _, r := range results {
		if err := report.WriteUnfinished(w, r); err != nil {
			return err
		}
	}
	return nil
}

func writeGantts(path string, sc *sim.Scenario, results []*sim.Result) error {
	var nodes []string
	gpus := map[string]int{}
	for _, n := range sc.Cluster.Nodes() {
		nodes = append(nodes, n.Name)
		gpus[n.Name] = int(n.Allocatable["nvidia.com/gpu"] / 1000)
	}
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".svg" && ext != ".png" {
		return fmt.Errorf("--gantt %q: want a .svg or .png file", path)
	}
	for _, r := range results {
		out := path
		if len(results) > 1 {
			out = strings.TrimSuffix(path, filepath.Ext(path)) + "-" + string(r.Policy) + ext
		}
		err := writeFile(out, func(w io.Writer) error {
			if ext == ".png" {
				return report.WritePNG(w, r, nodes, gpus)
			}
			return report.WriteGantt(w, r, nodes, gpus)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func writeQueueCharts(path string, results []*sim.Result) error {
	ext := filepath.Ext(path)
	if strings.ToLower(ext) != ".svg" {
		return fmt.Errorf("--queue-chart %q: want a .svg file", path)
	}
	for _, r := range results {
		out := path
		if len(results) > 1 {
			out = strings.TrimSuffix(path, ext) + "-" + string(r.Policy) + ext
		}
		if err := writeFile(out, func(w io.Writer) error { return report.WriteQueueChart(w, r) }); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// progressBar draws "policy [=====>    ] 42%" on a terminal's stderr for
// runs that last more than a couple of seconds.
type progressBar struct {
	w       io.Writer
	label   string
	enabled bool
	start   time.Time
	drawn   bool
}

func newProgressBar(w io.Writer, mode, label string) *progressBar {
	b := &progressBar{w: w, label: label, start: time.Now()}
	switch mode {
	case "always":
		b.enabled = true
	case "auto":
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				b.enabled = true
			}
		}
	}
	return b
}

func (b *progressBar) update(now, last time.Duration) {
	if !b.enabled || (!b.drawn && time.Since(b.start) < 2*time.Second) {
		return
	}
	frac := 1.0
	if last > 0 {
		frac = min(1, float64(now)/float64(last))
	}
	const width = 30
	n := int(frac * width)
	fmt.Fprintf(b.w, "\r%-16s [%s%s] %3.0f%%  %s", b.label, strings.Repeat("=", n), strings.Repeat(" ", width-n), 100*frac, time.Since(b.start).Round(time.Second))
	b.drawn = true
}

func (b *progressBar) done() {
	if b.drawn {
		fmt.Fprintf(b.w, "\r%s\r", strings.Repeat(" ", 70))
	}
}

// scalingFlag is the scaling model --efficiency-per-doubling and
// --resize-cost ask for (each on top of def's other field), or def when
// neither is given.
func scalingFlag(f *simulateFlags, def *sim.Scaling) (*sim.Scaling, error) {
	if f.efficiency == 0 && f.resizeCost == 0 {
		return def, nil
	}
	s := &sim.Scaling{}
	if def != nil {
		*s = *def
	}
	flag := "--resize-cost"
	if f.efficiency != 0 {
		s.EfficiencyPerDoubling, flag = f.efficiency, "--efficiency-per-doubling"
	}
	if f.resizeCost != 0 {
		s.ResizeCost.Duration = f.resizeCost
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return s, nil
}
