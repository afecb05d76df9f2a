package sim

import (
	"bytes"
	"embed"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"time"
)

// The policy suite (issue 16): a fixed set of workloads, each run under
// every policy, and phasegang's figures against the best baseline's.

//go:embed testdata/suite testdata/tiresias-60job.csv
var suiteFiles embed.FS

// SuiteWorkload is one workload of the policy suite.
type SuiteWorkload struct {
	Name string
	// Shape says in a few words what the workload tests.
	Shape string
	// Load builds its scenario (afresh: a run defaults the scenario's
	// specs in place).
	Load func() (*Scenario, error)
	// MaxMakespanOverLB, when set, is a target of its own: phasegang's
	// makespan is at most this × LB (the seed: 1.10).
	MaxMakespanOverLB float64
	// QueueTarget, on a workload with tenant queues, is a target of its
	// own: every queue gets at least 90% of its entitlement in every hour
	// in which it has work waiting (queueFailure).
	QueueTarget bool
	// ClassLabel, when set, is the label whose value is a pipeline's
	// class: the suite reports each class's average time to admission
	// under phasegang (SuiteRow.Admission).
	ClassLabel string
}

// WithScaling returns the workloads run under the scaling model s
// instead of their own.
func WithScaling(ws []SuiteWorkload, s *Scaling) []SuiteWorkload {
	out := make([]SuiteWorkload, len(ws))
	for i, w := range ws {
		load := w.Load
		w.Load = func() (*Scenario, error) {
			sc, err := load()
			if err == nil {
				sc.Scaling = s
			}
			return sc, err
		}
		out[i] = w
	}
	return out
}

// SuiteTolerance is the margin of the suite's targets (see judge): 1%.
const SuiteTolerance = 0.01

// suiteTrace is a suite workload cut from a trace: a CSV slice in
// testdata (testdata/suite/README.md says how each was cut) and the
// options that turn it into a scenario.
func suiteTrace(name, shape, file string, clip time.Duration, nodes, gpusPerNode int) SuiteWorkload {
	return suiteTraceWith(name, shape, file, clip, nodes, gpusPerNode, nil)
}

// suiteTeamTrace is suiteTrace with the trace's busiest teams (Philly's
// virtual clusters) as that many tenant queues of equal nominal quota in
// one cohort (TraceOptions.Teams), reclaiming borrowed quota after grace
// (nil: no preemption spec, so reclaimWithinCohort Never: borrowed quota
// comes back only as the borrowers' phases end). The queue target applies.
func suiteTeamTrace(name, shape, file string, nodes, gpusPerNode, teams int, grace *time.Duration) SuiteWorkload {
	w := suiteTraceWith(name, shape, file, 24*time.Hour, nodes, gpusPerNode, func(o *TraceOptions) {
		o.Teams, o.ReclaimGrace = teams, grace
	})
	w.QueueTarget = true
	return w
}

func suiteTraceWith(name, shape, file string, clip time.Duration, nodes, gpusPerNode int, options func(*TraceOptions)) SuiteWorkload {
	return SuiteWorkload{Name: name, Shape: shape, Load: func() (*Scenario, error) {
		data, err := suiteFiles.ReadFile(file)
		if err != nil {
			return nil, err
		}
		jobs, err := ReadTrace(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		o := DefaultTraceOptions()
		o.Clip = clip
		if options != nil {
			options(&o)
		}
		return TraceScenario(name, FilterTrace(jobs, o), o, nodes, gpusPerNode), nil
	}}
}

// withNodeFailures adds node failures to a workload's scenario (the
// trace slices record none).
func withNodeFailures(w SuiteWorkload, failures ...NodeFailure) SuiteWorkload {
	load := w.Load
	w.Load = func() (*Scenario, error) {
		sc, err := load()
		if err == nil {
			sc.NodeFailures = append(sc.NodeFailures, failures...)
		}
		return sc, err
	}
	return w
}

// withQueueTarget makes a tenant-queue workload check the queue target
// and report the average time to admission of the classes its pipelines'
// label classLabel names.
func withQueueTarget(w SuiteWorkload, classLabel string) SuiteWorkload {
	w.QueueTarget, w.ClassLabel = true, classLabel
	return w
}

func suiteScenario(name, shape string, data func() ([]byte, error)) SuiteWorkload {
	return SuiteWorkload{Name: name, Shape: shape, Load: func() (*Scenario, error) {
		b, err := data()
		if err != nil {
			return nil, err
		}
		sc, err := LoadScenario(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		sc.Name = name
		return sc, nil
	}}
}

func withMaxMakespanOverLB(w SuiteWorkload, max float64) SuiteWorkload {
	w.MaxMakespanOverLB = max
	return w
}

func suiteFile(path string) func() ([]byte, error) {
	return func() ([]byte, error) { return suiteFiles.ReadFile(path) }
}

// SuiteWorkloads is the policy suite, the seed scenario (the YAML of
// examples/simulate/seed-deadlock.yaml, which the caller embeds) first.
func SuiteWorkloads(seed []byte) []SuiteWorkload {
	const day = 24 * time.Hour
	return []SuiteWorkload{
		withMaxMakespanOverLB(suiteScenario("seed", "built-in seed scenario: 12 elastic 8-GPU pipelines, 2×8 GPUs",
			func() ([]byte, error) { return seed, nil }), 1.10),
		suiteTrace("tiresias-60", "Tiresias 60 jobs, 4×4 GPUs", "testdata/tiresias-60job.csv", 0, 4, 4),
		suiteTrace("philly-day51", "Philly day 51, ≥2 GPUs, 32×8 GPUs", "testdata/suite/philly-day51.csv", day, 32, 8),
		suiteTrace("philly-day28-gangs", "gang-heavy: day 28, ≥2 GPUs (8 of 32), 25×8", "testdata/suite/philly-day28-gangs.csv", day, 25, 8),
		suiteTrace("philly-day33-small", "all-small: day 33, one cluster's 2-GPU jobs, 16×8", "testdata/suite/philly-day33-small.csv", day, 16, 8),
		suiteTrace("philly-day77-mixed", "mixed: day 77, one cluster, 1-16 GPUs, 3×8", "testdata/suite/philly-day77-mixed.csv", day, 3, 8),
		suiteTrace("philly-day96-quiet", "quiet day: day 96, every job, 2×8", "testdata/suite/philly-day96-quiet.csv", day, 2, 8),
		suiteScenario("wave-burst", "53 whole-node gangs in 9 waves that fill 32×8 exactly", suiteFile("testdata/suite/wave-burst.yaml")),
		suiteScenario("fragmentation", "2×8-GPU workers among 1-GPU workers, 8×8", suiteFile("testdata/suite/fragmentation.yaml")),
		suiteScenario("elastic-heavy", "wide elastic trains (min 1-2, desired 8-16), 4×8", suiteFile("testdata/suite/elastic-heavy.yaml")),
		suiteScenario("wave-burst-rigid", "53 rigid whole-node gangs at once, 9 exact waves, 32×8", suiteFile("testdata/suite/wave-burst-rigid.yaml")),
		suiteScenario("wave-burst-rigid-phased", "the same, each train → validate → test", suiteFile("testdata/suite/wave-burst-rigid-phased.yaml")),
		suiteScenario("infeasible-bystanders", "3 pipelines that fit beside 2 Infeasible ones, 4×2", suiteFile("testdata/suite/infeasible-bystanders.yaml")),
		suiteScenario("infeasible-bystanders-alone", "the same 3 pipelines alone, 4×2", suiteFile("testdata/suite/infeasible-bystanders-alone.yaml")),
		// The peers' own benchmarks and two more Philly days (issue 31;
		// testdata/suite/README.md says how each was derived).
		withQueueTarget(suiteScenario("kueue-baseline", "Kueue's scheduler perf generator: 6 queues in a cohort, small/medium/large, 120 GPUs",
			suiteFile("testdata/suite/kueue-baseline.yaml")), "kueue.x-k8s.io/performance-scheduler-class"),
		suiteScenario("knavigator-gang", "knavigator's gang benchmark: 53 rigid gangs of 1-32 nodes at once, 32×8", suiteFile("testdata/suite/knavigator-gang.yaml")),
		suiteScenario("schedperf-gang-10x3", "scheduler_perf GangScheduling 100Nodes_10Gangs: 10 gangs × 3 CPU pods", suiteFile("testdata/suite/schedperf-gang-10x3.yaml")),
		suiteScenario("schedperf-gang-3x1000", "scheduler_perf GangScheduling 5000Nodes_3Gangs: 3 gangs × 1000 CPU pods", suiteFile("testdata/suite/schedperf-gang-3x1000.yaml")),
		suiteTrace("philly-day105-onegpu", "mostly 1-GPU, rare 32-GPU gangs: day 105, every job, 8×8", "testdata/suite/philly-day105-onegpu.csv", day, 8, 8),
		withNodeFailures(suiteTrace("philly-day72-failures", "node failures: day 72, one cluster, 1-16 GPUs, 4×8 losing 2 nodes", "testdata/suite/philly-day72-failures.csv", day, 4, 8),
			NodeFailure{Node: "gpu-3", At: dur(6 * time.Hour)}, NodeFailure{Node: "gpu-2", At: dur(14 * time.Hour)}),
		// Topology (issue 33): a copy of examples/simulate/topology-racks.yaml
		// (TestSuiteTopologyIsTheExample keeps them equal).
		suiteScenario("topology-racks", "preferred-rack trains of 8-32 1-GPU workers, 8 racks of 4×8, 0.8 per extra rack", suiteFile("testdata/suite/topology-racks.yaml")),
		// Tenant queues from the traces' own teams (Philly's virtual
		// clusters), added before the fence rule for borrowers: slices
		// already in the suite, shared by their busiest teams.
		suiteTeamTrace("philly-day51-teams", "day 51's 4 busiest teams as 4 queues in a cohort, no preemption, 32×8", "testdata/suite/philly-day51.csv", 32, 8, 4, nil),
		suiteTeamTrace("philly-day28-teams", "day 28's 4 busiest teams as queues, reclaim after 5m, 25×8", "testdata/suite/philly-day28-gangs.csv", 25, 8, 4, new(5*time.Minute)),
		suiteTeamTrace("philly-day105-teams", "day 105's 3 busiest teams as queues (one mostly 1-GPU), reclaim after 5m, 8×8", "testdata/suite/philly-day105-onegpu.csv", 8, 8, 3, new(5*time.Minute)),
	}
}

// SuiteMetrics are the metrics the suite compares.
var SuiteMetrics = []string{"makespan", "JCT avg", "JCT p99"}

func suiteMetric(m Metrics, i int) float64 {
	return [...]float64{m.Makespan, m.JCTAvg, m.JCTP99}[i]
}

// SuiteRow is one workload's outcome.
type SuiteRow struct {
	Workload  SuiteWorkload
	Pipelines int
	GPUs      int64
	// Results has one run per policy, phasegang first.
	Results []*Result
	// MakespanOverLB is phasegang's makespan ÷ LB.
	MakespanOverLB float64
	// JCTAvgOverLB is phasegang's average JCT ÷ its lower bound
	// (JCTAvgLowerBound).
	JCTAvgOverLB float64
	// Ratio[i] is phasegang's SuiteMetrics[i] ÷ the best counting
	// baseline's, which is Best[i] ("" when no baseline counts).
	Ratio [3]float64
	Best  [3]Policy
	// Excluded lists baselines that do not count: they left pipelines
	// deadlocked or unfinished, so their JCTs cover only some pipelines.
	Excluded []Policy
	// Failures says what fails, e.g. "JCT avg +4.5% vs per-phase-rigid".
	Failures []string
	// Admission is each class's average time to admission under
	// phasegang (with Workload.ClassLabel).
	Admission []ClassAdmission
}

// RunSuite runs every workload under every policy, workloads in parallel.
func RunSuite(ws []SuiteWorkload) ([]SuiteRow, error) {
	rows := make([]SuiteRow, len(ws))
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			rows[i], errs[i] = runSuiteWorkload(ws[i])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("suite workload %s: %w", ws[i].Name, err)
		}
	}
	return rows, nil
}

func runSuiteWorkload(w SuiteWorkload) (SuiteRow, error) {
	row := SuiteRow{Workload: w}
	sc, err := w.Load()
	if err != nil {
		return row, err
	}
	if err := CheckRunnable(sc); err != nil {
		return row, err
	}
	var records []PhaseRecord
	for _, p := range Policies {
		o := Options{Policy: p}
		if p == PolicyPhasegang && w.ClassLabel != "" {
			o.Observer = func(r PhaseRecord) { records = append(records, r) }
		}
		r, err := Run(sc, o)
		if err != nil {
			return row, err
		}
		row.Results = append(row.Results, r)
	}
	if w.ClassLabel != "" {
		row.Admission = classAdmissions(sc, w.ClassLabel, records)
	}
	row.judge()
	return row, nil
}

// The suite's targets (issue 31), each checked per workload:
//
//   - no counting baseline dominates phasegang: none is more than
//     SuiteTolerance better on one of makespan, average JCT and p99 JCT
//     without being more than SuiteTolerance worse on another;
//   - phasegang's average JCT is at most (1 + SuiteTolerance) × the best
//     baseline's;
//   - a packing a simpler policy finds is not lost: where some baseline's
//     makespan is at most PackedLB × LB, phasegang's is at most
//     PackedLBSlack × LB;
//   - where the workload sets MaxMakespanOverLB (the seed), phasegang's
//     makespan is within it;
//   - where it sets QueueTarget (the tenant-queue workloads), every
//     queue gets at least 90% of its entitlement in every hour in which
//     it has work waiting.
const (
	PackedLB      = 1.02
	PackedLBSlack = 1.03
)

// judge compares phasegang (Results[0]) with the baselines that count:
// the table's ratios, then the targets.
func (row *SuiteRow) judge() {
	pg := row.Results[0]
	m := pg.Metrics
	row.Pipelines, row.GPUs = m.Pipelines, pg.GPUs
	row.MakespanOverLB = ratio(m.Makespan, m.LowerBound)
	row.JCTAvgOverLB = ratio(m.JCTAvg, m.JCTAvgLowerBound)
	if m.Deadlocked+m.Unfinished > 0 {
		row.Failures = append(row.Failures, fmt.Sprintf("phasegang left %d pipelines unfinished", m.Deadlocked+m.Unfinished))
	}
	baselines := row.countingBaselines()
	row.bestPerMetric(baselines)
	dominated := false
	for _, b := range baselines {
		if why := dominates(b.Metrics, m); why != "" && !dominated {
			// One dominating baseline says it; the first in Policies.
			row.Failures = append(row.Failures, fmt.Sprintf("dominated by %s (%s)", b.Policy, why))
			dominated = true
		}
	}
	if jct := 1; !dominated && row.Best[jct] != "" && row.Ratio[jct] > 1+SuiteTolerance {
		row.Failures = append(row.Failures, fmt.Sprintf("JCT avg %+.1f%% vs %s", 100*(row.Ratio[jct]-1), row.Best[jct]))
	}
	for _, b := range baselines {
		if bl := ratio(b.Metrics.Makespan, m.LowerBound); bl <= PackedLB && row.MakespanOverLB > PackedLBSlack {
			row.Failures = append(row.Failures, fmt.Sprintf("makespan %.3f × LB where %s packs it in %.3f × LB", row.MakespanOverLB, b.Policy, bl))
			break
		}
	}
	if max := row.Workload.MaxMakespanOverLB; max > 0 && row.MakespanOverLB > max {
		row.Failures = append(row.Failures, fmt.Sprintf("makespan %.3f × LB, above %.2f", row.MakespanOverLB, max))
	}
	if row.Workload.QueueTarget {
		if why := queueFailure(pg.Fairness); why != "" {
			row.Failures = append(row.Failures, why)
		}
	}
}

// countingBaselines are the baselines that finished every pipeline (the
// others' JCTs cover only some, see Excluded).
func (row *SuiteRow) countingBaselines() []*Result {
	var out []*Result
	for _, r := range row.Results[1:] {
		if r.Metrics.Deadlocked+r.Metrics.Unfinished > 0 {
			row.Excluded = append(row.Excluded, r.Policy)
			continue
		}
		out = append(out, r)
	}
	return out
}

// bestPerMetric fills the table's ratios: phasegang ÷ the best baseline
// on each metric.
func (row *SuiteRow) bestPerMetric(baselines []*Result) {
	m := row.Results[0].Metrics
	for i := range SuiteMetrics {
		best := math.Inf(1)
		for _, b := range baselines {
			if v := suiteMetric(b.Metrics, i); v < best {
				best, row.Best[i] = v, b.Policy
			}
		}
		if row.Best[i] == "" {
			row.Ratio[i] = math.NaN()
			continue
		}
		row.Ratio[i] = ratio(suiteMetric(m, i), best)
	}
}

// dominates says how b dominates pg ("" if it does not): more than
// SuiteTolerance better on some metric and not more than SuiteTolerance
// worse on any.
func dominates(b, pg Metrics) string {
	var better []string
	for i, name := range SuiteMetrics {
		r := ratio(suiteMetric(pg, i), suiteMetric(b, i))
		switch {
		case ratio(suiteMetric(b, i), suiteMetric(pg, i)) > 1+SuiteTolerance:
			return "" // worse on this one
		case r > 1+SuiteTolerance:
			better = append(better, fmt.Sprintf("%s %+.1f%%", name, 100*(r-1)))
		}
	}
	return strings.Join(better, ", ")
}

// ratio is a ÷ b, 1 when both are 0 (nothing to compare), +Inf when only
// b is 0 or a is infinite.
func ratio(a, b float64) float64 {
	switch {
	case math.IsInf(a, 1):
		return math.Inf(1)
	case b == 0 && a == 0:
		return 1
	case b == 0:
		return math.Inf(1)
	}
	return a / b
}
