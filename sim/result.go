package sim

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/phasegang/phasegang/apis/v1alpha1"
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
	// Statuses are the pipelines' final statuses, by "namespace/name"
	// (when Options.Record).
	Statuses map[string]*v1alpha1.PhasedTrainingStatus `json:"-"`
	// Waits are the queueing delays of every gang (the table's queued
	// columns are per pipeline: PipelineResult.Queueing).
	Waits                  []time.Duration `json:"-"`
	BusyGPUSeconds         float64         `json:"busyGPUSeconds"`
	IdleReservedGPUSeconds float64         `json:"idleReservedGPUSeconds"`
	Deadlocked             []string        `json:"deadlocked,omitempty"`
	Cycles                 int             `json:"engineCycles"`
	Placements             int             `json:"workerPlacements"`
	EngineWall             time.Duration   `json:"engineWallNanos,omitempty"`
	Wall                   time.Duration   `json:"wallNanos,omitempty"`
	Metrics                Metrics         `json:"metrics"`
	// Fairness is per tenant queue (nil without queues).
	Fairness *Fairness `json:"fairness,omitempty"`
}

// Metrics summarize a run. Times are seconds.
type Metrics struct {
	Pipelines  int `json:"pipelines"`
	Finished   int `json:"finished"`
	Failed     int `json:"failed"`
	Deadlocked int `json:"deadlocked"`
	Unfinished int `json:"unfinished"`
	Infeasible int `json:"infeasible"`
	// Makespan is first arrival to last finish; +Inf (null in JSON) if
	// some pipeline never finished.
	Makespan   float64 `json:"makespanSeconds"`
	LowerBound float64 `json:"lowerBoundSeconds"`
	// JCTAvgLowerBound is a lower bound on any schedule's average JCT:
	// the mean of the pipelines' critical paths at desired size (see
	// JCTAvgLowerBound).
	JCTAvgLowerBound float64 `json:"jctAvgLowerBoundSeconds"`
	// Utilization is NaN (null in JSON) when the makespan is infinite.
	Utilization float64 `json:"gpuUtilization"`
	JCTAvg      float64 `json:"jctAvgSeconds"`
	JCTP50      float64 `json:"jctP50Seconds"`
	JCTP99      float64 `json:"jctP99Seconds"`
	// QueuedAvg and QueuedP99 are over the pipelines that ended, of each
	// one's PipelineResult.Queueing: the same measure under every policy.
	QueuedAvg float64 `json:"queuedAvgSeconds"`
	QueuedP99 float64 `json:"queuedP99Seconds"`
	IdleGPUh  float64 `json:"reservedIdleGPUHours"`
	// DecisionsPerSec is worker placements per second of engine time (0
	// when unmeasured).
	DecisionsPerSec float64 `json:"decisionsPerSecond,omitempty"`
}

func (r *Result) computeMetrics(sc *Scenario) {
	m := &r.Metrics
	var jcts, queued []float64
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
		if p.Ended() {
			jcts = append(jcts, p.JCT().Seconds())
			queued = append(queued, p.Queueing.Seconds())
			last = max(last, p.Finish)
		}
	}
	if m.Pipelines == 0 {
		return
	}
	if m.Deadlocked+m.Unfinished > 0 {
		m.Makespan = math.Inf(1) // never: some pipeline did not finish
	} else {
		// 0 if nothing ended (every pipeline infeasible), not negative.
		m.Makespan = max(last-first, 0).Seconds()
	}
	can := runnable(sc)
	m.LowerBound = LowerBound(can).Seconds()
	m.JCTAvgLowerBound = JCTAvgLowerBound(can).Seconds()
	switch {
	case math.IsInf(m.Makespan, 1):
		// Phases of unfinished pipelines ran past the last finish (the
		// ratio would pass 100%), and GPUs held by deadlocked ones stay
		// idle forever: no utilization to speak of.
		m.Utilization = math.NaN()
	case last > first && r.GPUs > 0:
		m.Utilization = r.BusyGPUSeconds / (float64(r.GPUs) * (last - first).Seconds())
	}
	m.JCTAvg, m.JCTP50, m.JCTP99 = mean(jcts), quantile(jcts, 0.5), quantile(jcts, 0.99)
	// Per pipeline, not per gang: whole-job queues one gang per pipeline
	// and the other policies one per phase, so per-gang waits would not
	// compare.
	m.QueuedAvg, m.QueuedP99 = mean(queued), quantile(queued, 0.99)
	m.IdleGPUh = r.IdleReservedGPUSeconds / 3600
	if r.EngineWall > 0 {
		m.DecisionsPerSec = float64(r.Placements) / r.EngineWall.Seconds()
	}
}

// Ended reports whether a pipeline ran to its end (succeeded or failed):
// only then are its JCT and its queueing complete.
func (p PipelineResult) Ended() bool { return p.State == "Succeeded" || p.State == "Failed" }

// MarshalJSON writes every non-finite figure (the makespan of a run in
// which some pipeline never finished) as null: JSON has no ∞, and a
// sentinel such as -1 would read as a number of seconds.
func (m Metrics) MarshalJSON() ([]byte, error) { return marshalFinite(reflect.ValueOf(m)) }

// marshalFinite encodes a struct as encoding/json does (field order, tag
// names, omitempty), with non-finite floats as null.
func marshalFinite(v reflect.Value) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" || (strings.Contains(opts, "omitempty") && fv.IsZero()) {
			continue
		}
		if name == "" {
			name = f.Name
		}
		val := []byte("null")
		if !fv.CanFloat() || !math.IsInf(fv.Float(), 0) && !math.IsNaN(fv.Float()) {
			var err error
			if val, err = json.Marshal(fv.Interface()); err != nil {
				return nil, err
			}
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(name)
		b.Write(key)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
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

// simpleLowerBound is a lower bound on any schedule's makespan (from the first
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
func simpleLowerBound(sc *Scenario) time.Duration {
	type job struct {
		arrival time.Duration
		cp      time.Duration
		work    float64
	}
	var jobs []job
	gpus := float64(sc.Cluster.GPUs())
	for i := range sc.Workload {
		w := &sc.Workload[i]
		cp, work := criticalPath(w, sc.Scaling)
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

// JCTAvgLowerBound is a lower bound on any schedule's average JCT over
// all the scenario's pipelines: no pipeline ends before its arrival plus
// its critical path at desired size (a phase runs no faster than at
// desired, under linear and sub-linear scaling alike), so neither does
// the mean. Like LowerBound it counts every phase once, so a phase that a
// `when` skips is counted though it never runs.
func JCTAvgLowerBound(sc *Scenario) time.Duration {
	var sum time.Duration
	n := 0
	for i := range sc.Workload {
		w := &sc.Workload[i]
		cp, _ := criticalPath(w, sc.Scaling)
		count := max(w.Count, 1)
		sum += time.Duration(count) * cp
		n += count
	}
	if n == 0 {
		return 0
	}
	return sum / time.Duration(n)
}

// criticalPath returns a workload's longest dependency chain of run times
// and its work in GPU-seconds (each phase once, at desired size).
func criticalPath(w *Workload, scaling *Scaling) (time.Duration, float64) {
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
		work += w.Runtimes[p.Name].Duration.Seconds() * scaling.boundWidth(int(p.Gang.Min), int(p.Gang.DesiredOrMin())) * g
	}
	return cp, work
}
