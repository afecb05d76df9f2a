package sim

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/phasegang/phasegang/phases"
)

// Pipeline end states in a simulation.
const (
	StateUnfinished = "Unfinished"
	StateDeadlocked = "Deadlocked"
	StateInfeasible = "Infeasible"
)

// PipelineResult is one pipeline's fate.
type PipelineResult struct {
	Name    string        `json:"name"`
	State   string        `json:"state"`
	Arrival time.Duration `json:"arrival"`
	// Finish is when it ended (0 if it never did).
	Finish time.Duration `json:"finish"`
	// Queueing sums its phases' waits for a gang.
	Queueing time.Duration `json:"queueing"`
	Phases   int           `json:"phases"`
	Message  string        `json:"message,omitempty"`
}

// JCT is the job completion time (finish - arrival).
func (p PipelineResult) JCT() time.Duration { return p.Finish - p.Arrival }

// Interval is one worker of one phase attempt on one node.
type Interval struct {
	Node      string
	Pipeline  string
	Phase     string
	Iteration int32
	Attempt   int32
	Worker    int32
	GPUs      float64
	Start     time.Duration
	End       time.Duration
	// Idle marks a worker that held its GPU without running: a per-pod
	// pod waiting for the rest of its gang.
	Idle bool
}

// PhaseRecord describes one ended phase attempt (for tracing).
type PhaseRecord struct {
	Pipeline               string
	Instance               phases.Instance
	Queued, Started, Ended time.Duration
	Workers, Min, Desired  int32
	Nodes                  []string
	Failed                 bool
	Grows, Shrinks         int
	// GPUs is what one worker requests.
	GPUs float64
	// Resizes lists the gang's grows and shrinks, in order.
	Resizes []Resize
}

// Resize is one grow or shrink of a running gang.
type Resize struct {
	At time.Duration
	// Workers is the gang's size after it.
	Workers int32
	Grow    bool
}

// Result is a run's outcome and metrics.
type Result struct {
	Scenario  string           `json:"scenario"`
	Policy    Policy           `json:"policy"`
	GPUs      int64            `json:"gpus"`
	Pipelines []PipelineResult `json:"-"`
	Intervals []Interval       `json:"-"`
	// Waits are the queueing delays of every gang.
	Waits                  []time.Duration `json:"-"`
	BusyGPUSeconds         float64         `json:"busyGPUSeconds"`
	IdleReservedGPUSeconds float64         `json:"idleReservedGPUSeconds"`
	Deadlocked             []string        `json:"deadlocked,omitempty"`
	Cycles                 int             `json:"engineCycles"`
	Placements             int             `json:"workerPlacements"`
	EngineWall             time.Duration   `json:"engineWallNanos,omitempty"`
	Wall                   time.Duration   `json:"wallNanos,omitempty"`
	Metrics                Metrics         `json:"metrics"`
}

// Metrics summarize a run. Times are seconds.
type Metrics struct {
	Pipelines  int `json:"pipelines"`
	Finished   int `json:"finished"`
	Failed     int `json:"failed"`
	Deadlocked int `json:"deadlocked"`
	Unfinished int `json:"unfinished"`
	Infeasible int `json:"infeasible"`
	// Makespan is first arrival to last finish; -1 if some pipeline never finished.
	Makespan    float64 `json:"makespanSeconds"`
	LowerBound  float64 `json:"lowerBoundSeconds"`
	Utilization float64 `json:"gpuUtilization"`
	JCTAvg      float64 `json:"jctAvgSeconds"`
	JCTP50      float64 `json:"jctP50Seconds"`
	JCTP99      float64 `json:"jctP99Seconds"`
	WaitAvg     float64 `json:"queueAvgSeconds"`
	WaitP99     float64 `json:"queueP99Seconds"`
	IdleGPUh    float64 `json:"reservedIdleGPUHours"`
	// DecisionsPerSec is worker placements per second of engine time (0
	// when unmeasured).
	DecisionsPerSec float64 `json:"decisionsPerSecond,omitempty"`
}

func (r *Result) computeMetrics(sc *Scenario) {
	m := &r.Metrics
	var jcts []float64
	first, last := time.Duration(math.MaxInt64), time.Duration(0)
	for _, p := range r.Pipelines {
		m.Pipelines++
		first = min(first, p.Arrival)
		switch p.State {
		case "Succeeded":
			m.Finished++
		case "Failed":
			m.Failed++
		case StateDeadlocked:
			m.Deadlocked++
		case StateInfeasible:
			m.Infeasible++
		default:
			m.Unfinished++
		}
		if p.State == "Succeeded" || p.State == "Failed" {
			jcts = append(jcts, p.JCT().Seconds())
			last = max(last, p.Finish)
		}
	}
	if m.Pipelines == 0 {
		return
	}
	if m.Deadlocked+m.Unfinished > 0 {
		m.Makespan = -1 // never: some pipeline did not finish
	} else {
		m.Makespan = (last - first).Seconds()
	}
	m.LowerBound = LowerBound(sc).Seconds()
	busyUntil := last
	if busyUntil > first && r.GPUs > 0 {
		m.Utilization = r.BusyGPUSeconds / (float64(r.GPUs) * (busyUntil - first).Seconds())
	}
	m.JCTAvg, m.JCTP50, m.JCTP99 = mean(jcts), quantile(jcts, 0.5), quantile(jcts, 0.99)
	waits := make([]float64, len(r.Waits))
	for i, w := range r.Waits {
		waits[i] = w.Seconds()
	}
	m.WaitAvg, m.WaitP99 = mean(waits), quantile(waits, 0.99)
	m.IdleGPUh = r.IdleReservedGPUSeconds / 3600
	if r.EngineWall > 0 {
		m.DecisionsPerSec = float64(r.Placements) / r.EngineWall.Seconds()
	}
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// quantile is the nearest-rank quantile.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// LowerBound is a lower bound on any schedule's makespan (from the first
// arrival to the last finish):
//
//	LB = max( max_p (a_p − a_first + CP_p),
//	          max_r (r − a_first + W(≥ r) / G) )
//
// where CP_p is pipeline p's critical path (the longest chain of phase run
// times through its DAG at desired size; an iterate loop counts once),
// W(≥ r) the GPU-seconds of the pipelines arriving at or after r, and G
// the cluster's GPUs. No scheduler can finish a pipeline before its
// critical path has run, nor do the work that arrives after r faster than
// all GPUs at once.
func LowerBound(sc *Scenario) time.Duration {
	type job struct {
		arrival time.Duration
		cp      time.Duration
		work    float64
	}
	var jobs []job
	gpus := float64(sc.Cluster.GPUs())
	for i := range sc.Workload {
		w := &sc.Workload[i]
		cp, work := criticalPath(w)
		for r := range max(w.Count, 1) {
			jobs = append(jobs, job{arrival: w.Arrival.Duration + time.Duration(r)*w.Interval.Duration, cp: cp, work: work})
		}
	}
	if len(jobs) == 0 {
		return 0
	}
	slices.SortFunc(jobs, func(a, b job) int { return int(a.arrival - b.arrival) })
	first := jobs[0].arrival
	var lb time.Duration
	for _, j := range jobs {
		lb = max(lb, j.arrival-first+j.cp)
	}
	if gpus > 0 {
		var suffix float64
		for i := len(jobs) - 1; i >= 0; i-- {
			suffix += jobs[i].work
			if i > 0 && jobs[i-1].arrival == jobs[i].arrival {
				continue
			}
			lb = max(lb, jobs[i].arrival-first+time.Duration(suffix/gpus*float64(time.Second)))
		}
	}
	return lb
}

// criticalPath returns a workload's longest dependency chain of run times
// and its work in GPU-seconds (each phase once, at desired size).
func criticalPath(w *Workload) (time.Duration, float64) {
	spec := w.Training.Spec
	finish := map[string]time.Duration{}
	var work float64
	var visit func(name string, depth int) time.Duration
	byName := map[string]int{}
	for i, p := range spec.Phases {
		byName[p.Name] = i
	}
	visit = func(name string, depth int) time.Duration {
		if f, ok := finish[name]; ok {
			return f
		}
		i, ok := byName[name]
		if !ok || depth > len(spec.Phases) {
			return 0
		}
		var start time.Duration
		for _, d := range spec.Phases[i].DependsOn {
			start = max(start, visit(d, depth+1))
		}
		finish[name] = start + w.Runtimes[name].Duration
		return finish[name]
	}
	var cp time.Duration
	for _, p := range spec.Phases {
		cp = max(cp, visit(p.Name, 0))
		q := p.Template.Spec.Containers
		var g float64
		for _, c := range q {
			if v, ok := c.Resources.Requests[gpuResource]; ok {
				g += float64(v.MilliValue()) / 1000
			}
		}
		work += w.Runtimes[p.Name].Duration.Seconds() * float64(p.Gang.DesiredOrMin()) * g
	}
	return cp, work
}

// WriteTable prints results side by side, one row per policy.
func WriteTable(w io.Writer, results []*Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tfinished\tdeadlocked\tmakespan\tLB\tutil\tJCT avg\tJCT p50\tJCT p99\tqueue avg\tqueue p99\tidle GPU·h\tdecisions/s\t")
	for _, r := range results {
		m := r.Metrics
		dps := "-"
		if m.DecisionsPerSec > 0 {
			dps = strconv.FormatFloat(m.DecisionsPerSec, 'f', 0, 64)
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%d\t%s\t%s\t%.1f%%\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\t\n",
			r.Policy, m.Finished, m.Pipelines, m.Deadlocked,
			human(m.Makespan), human(m.LowerBound), 100*m.Utilization,
			human(m.JCTAvg), human(m.JCTP50), human(m.JCTP99), human(m.WaitAvg), human(m.WaitP99),
			m.IdleGPUh, dps)
	}
	return tw.Flush()
}

// human renders seconds compactly: 45s, 12m30s, 3h05m, 2d04h, ∞.
func human(sec float64) string {
	if sec < 0 || math.IsInf(sec, 1) {
		return "∞"
	}
	d := time.Duration(sec * float64(time.Second)).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}

// WriteDeadlocks lists the pipelines that hold workers but can never finish.
func WriteDeadlocks(w io.Writer, r *Result) {
	if len(r.Deadlocked) == 0 {
		return
	}
	fmt.Fprintf(w, "%s: %d pipelines deadlocked (hold workers, can never complete):\n", r.Policy, len(r.Deadlocked))
	for _, p := range r.Pipelines {
		if p.State == StateDeadlocked {
			fmt.Fprintf(w, "  %s: %s\n", p.Name, p.Message)
		}
	}
}

// WriteCSV writes one row per pipeline.
func WriteCSV(w io.Writer, r *Result) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"policy", "pipeline", "state", "arrival_s", "finish_s", "jct_s", "queueing_s", "phases", "message"})
	for _, p := range r.Pipelines {
		finish, jct := "", ""
		if p.State == "Succeeded" || p.State == "Failed" {
			finish, jct = secs(p.Finish), secs(p.JCT())
		}
		_ = cw.Write([]string{string(r.Policy), p.Name, p.State, secs(p.Arrival), finish, jct, secs(p.Queueing), strconv.Itoa(p.Phases), strings.TrimSpace(p.Message)})
	}
	cw.Flush()
	return cw.Error()
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
