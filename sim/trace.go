package sim

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// TraceOptions turn a GPU-cluster job trace into a workload. A trace job
// is one gang of num_gpus one-GPU workers; phasegang sees it as a
// train → validate → test pipeline. That split is an ASSUMPTION (public
// traces record jobs, not phases): by default train takes 80% of the
// job's duration with its GPUs (elastic: min ⌈g/2⌉, desired g), validate
// 10% with max(1, g/4) GPUs, test 10% with 1 GPU.
type TraceOptions struct {
	// Split is the train/validate/test share of a job's duration.
	Split [3]float64
	// MinGPUs drops jobs with fewer GPUs (0 keeps all).
	MinGPUs int
	// Skip drops jobs arriving in the first Skip of the trace; Window keeps
	// only jobs arriving within Window after that (0: all).
	Skip, Window time.Duration
	// Clip caps each job's duration (0: no cap).
	Clip time.Duration
	// Limit keeps the first Limit jobs after filtering (0: all).
	Limit int
	// Rigid makes train a rigid gang of g (no elasticity).
	Rigid bool
	// Teams, if > 0, shares the cluster between that many tenant queues
	// of equal nominal quota in one cohort: the trace's busiest teams
	// (Philly's virtual clusters, its cluster column, by GPU-hours in the
	// slice; a trace without one is dealt out in turn), each a queue
	// team-<name>. The other teams' jobs are dropped.
	Teams int
	// ReclaimGrace is the queues' reclaimGracePeriod, with
	// reclaimWithinCohort Any (nil: no preemption spec, reclaimWithinCohort
	// Never: borrowed quota comes back only as the borrowers' phases end).
	ReclaimGrace *time.Duration
}

// DefaultTraceOptions is the documented 80/10/10 split.
func DefaultTraceOptions() TraceOptions { return TraceOptions{Split: [3]float64{0.8, 0.1, 0.1}} }

// TraceJob is one job of a trace.
type TraceJob struct {
	Arrival  time.Duration
	Duration time.Duration
	GPUs     int
	// Team is who submitted it: Philly's virtual cluster ("" if the
	// trace does not say).
	Team string
}

// ReadTrace reads a Philly (timestamp,duration,num_gpus,gpu_time,cluster)
// or Tiresias (job_id,num_gpu,submit_time,iterations,model_name,duration,
// interval) CSV, told apart by its header. Jobs come back sorted by
// arrival, the first at 0.
func ReadTrace(r io.Reader) ([]TraceJob, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("reading trace header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	var parse func(rec []string) (TraceJob, error)
	switch {
	case has(col, "timestamp", "duration", "num_gpus"):
		parse = func(rec []string) (TraceJob, error) {
			ts, err := time.Parse(time.DateTime, rec[col["timestamp"]])
			if err != nil {
				return TraceJob{}, err
			}
			d, err1 := strconv.ParseFloat(rec[col["duration"]], 64)
			g, err2 := strconv.Atoi(rec[col["num_gpus"]])
			j := TraceJob{Arrival: time.Duration(ts.Unix()) * time.Second, Duration: seconds(d), GPUs: g}
			if c, ok := col["cluster"]; ok && c < len(rec) {
				j.Team = strings.TrimSpace(rec[c])
			}
			return j, errors.Join(err1, err2)
		}
	case has(col, "num_gpu", "submit_time", "duration"):
		parse = func(rec []string) (TraceJob, error) {
			s, err0 := strconv.ParseFloat(rec[col["submit_time"]], 64)
			d, err1 := strconv.ParseFloat(rec[col["duration"]], 64)
			g, err2 := strconv.Atoi(rec[col["num_gpu"]])
			return TraceJob{Arrival: seconds(s), Duration: seconds(d), GPUs: g}, errors.Join(err0, err1, err2)
		}
	default:
		return nil, fmt.Errorf("unknown trace format: header %q is neither Philly (timestamp,duration,num_gpus,...) nor Tiresias (job_id,num_gpu,submit_time,...)", strings.Join(header, ","))
	}
	var jobs []TraceJob
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("trace line %d: %w", line, err)
		}
		j, err := parse(rec)
		if err != nil {
			return nil, fmt.Errorf("trace line %d: %w", line, err)
		}
		if j.GPUs < 1 || j.Duration <= 0 {
			continue
		}
		jobs = append(jobs, j)
	}
	slices.SortStableFunc(jobs, func(a, b TraceJob) int { return int(a.Arrival - b.Arrival) })
	if len(jobs) > 0 {
		first := jobs[0].Arrival
		for i := range jobs {
			jobs[i].Arrival -= first
		}
	}
	return jobs, nil
}

func has(col map[string]int, names ...string) bool {
	for _, n := range names {
		if _, ok := col[n]; !ok {
			return false
		}
	}
	return true
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// FilterTrace applies the options' slice, GPU filter, teams, clip and
// limit.
func FilterTrace(jobs []TraceJob, o TraceOptions) []TraceJob {
	jobs = sliceTrace(jobs, o)
	if o.Teams > 0 {
		jobs = keepTeams(jobs, o.Teams)
	}
	if o.Limit > 0 && len(jobs) > o.Limit {
		jobs = jobs[:o.Limit]
	}
	return jobs
}

// keepTeams keeps the jobs of the n teams with the most GPU-hours (ties
// by name), or, when the trace names no team, deals the jobs out to n
// teams in turn (t0, t1, ...).
func keepTeams(jobs []TraceJob, n int) []TraceJob {
	work := map[string]float64{}
	for _, j := range jobs {
		work[j.Team] += j.Duration.Hours() * float64(j.GPUs)
	}
	if _, anonymous := work[""]; anonymous && len(work) == 1 {
		out := slices.Clone(jobs)
		for i := range out {
			out[i].Team = fmt.Sprintf("t%d", i%n)
		}
		return out
	}
	teams := slices.Collect(maps.Keys(work))
	slices.SortFunc(teams, func(a, b string) int {
		return cmp.Or(cmp.Compare(work[b], work[a]), strings.Compare(a, b))
	})
	keep := teams[:min(n, len(teams))]
	var out []TraceJob
	for _, j := range jobs {
		if slices.Contains(keep, j.Team) {
			out = append(out, j)
		}
	}
	// The slice starts at its first kept job.
	if len(out) > 0 {
		base := out[0].Arrival
		for i := range out {
			out[i].Arrival -= base
		}
	}
	return out
}

// sliceTrace keeps the jobs of the window with enough GPUs, from 0,
// clipped.
func sliceTrace(jobs []TraceJob, o TraceOptions) []TraceJob {
	var out []TraceJob
	var base time.Duration = -1
	for _, j := range jobs {
		if j.Arrival < o.Skip || (o.Window > 0 && j.Arrival >= o.Skip+o.Window) || j.GPUs < o.MinGPUs {
			continue
		}
		if base < 0 {
			base = j.Arrival
		}
		j.Arrival -= base
		if o.Clip > 0 && j.Duration > o.Clip {
			j.Duration = o.Clip
		}
		out = append(out, j)
	}
	return out
}

// TraceScenario turns trace jobs into a scenario on nodes × gpusPerNode.
func TraceScenario(name string, jobs []TraceJob, o TraceOptions, nodes, gpusPerNode int) *Scenario {
	sc := &Scenario{Name: name, Cluster: Cluster{NodePools: []NodePool{{
		Name: "gpu", Count: nodes,
		Allocatable: corev1.ResourceList{"nvidia.com/gpu": qty(strconv.Itoa(gpusPerNode)), "cpu": qty(strconv.Itoa(8 * gpusPerNode)), "pods": qty("110")},
	}}}}
	// Pipelines of the same size share one spec and one compiled Pipeline.
	specs := map[int]*v1alpha1.PhasedTraining{}
	for i, j := range jobs {
		pt, ok := specs[j.GPUs]
		if !ok {
			pt = tracePipeline(j.GPUs, o.Rigid)
			specs[j.GPUs] = pt
		}
		w := Workload{
			Training: *pt,
			Arrival:  dur(j.Arrival),
			Runtimes: map[string]metav1.Duration{},
			specKey:  pt.Name,
		}
		w.Training.ObjectMeta = metav1.ObjectMeta{Name: fmt.Sprintf("job-%05d", i), Namespace: "trace"}
		if o.Teams > 0 {
			w.Training.Namespace = teamQueue(j.Team)
			w.Training.Spec.QueueName = teamQueue(j.Team)
			w.specKey += "/" + j.Team
		}
		for k, phase := range []string{"train", "validate", "test"} {
			d := time.Duration(float64(j.Duration) * o.Split[k])
			w.Runtimes[phase] = dur(max(d, time.Second))
		}
		sc.Workload = append(sc.Workload, w)
	}
	if o.Teams > 0 {
		sc.Queues = teamQueues(jobs, nodes*gpusPerNode, o.ReclaimGrace)
	}
	return sc
}

func teamQueue(team string) string { return "team-" + strings.ToLower(team) }

// teamQueues are the jobs' teams' queues, in one cohort, sharing gpus
// equally (the first ones get the remainder): each lends what it does not
// use and may borrow all the others lend.
func teamQueues(jobs []TraceJob, gpus int, grace *time.Duration) []v1alpha1.TenantQueue {
	var names []string
	for _, j := range jobs {
		if q := teamQueue(j.Team); !slices.Contains(names, q) {
			names = append(names, q)
		}
	}
	slices.Sort(names)
	var out []v1alpha1.TenantQueue
	for i, name := range names {
		share := gpus / len(names)
		if i < gpus%len(names) {
			share++
		}
		tq := v1alpha1.TenantQueue{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.TenantQueueSpec{
				Cohort:    "trace",
				Resources: []v1alpha1.QueueResource{{Name: string(gpuResource), NominalQuota: *resource.NewQuantity(int64(share), resource.DecimalSI)}},
			},
		}
		if grace != nil {
			tq.Spec.Preemption = &v1alpha1.QueuePreemption{ReclaimWithinCohort: v1alpha1.PreemptAny, ReclaimGracePeriod: &metav1.Duration{Duration: *grace}}
		}
		out = append(out, tq)
	}
	return out
}

// tracePipeline is the train → validate → test pipeline of a g-GPU job.
func tracePipeline(g int, rigid bool) *v1alpha1.PhasedTraining {
	trainMin := int32(math.Ceil(float64(g) / 2))
	if rigid {
		trainMin = int32(g)
	}
	desired := int32(g)
	phase := func(name string, min, desired int32, deps ...string) v1alpha1.Phase {
		return v1alpha1.Phase{
			Name: name, DependsOn: deps, Gang: v1alpha1.Gang{Min: min, Desired: &desired},
			SuccessPolicy: v1alpha1.SuccessPolicyAllWorkers,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "worker", Image: "trainer",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": qty("1"), "cpu": qty("4")}, Limits: corev1.ResourceList{"nvidia.com/gpu": qty("1")}},
			}}}},
		}
	}
	val := int32(max(1, g/4))
	return &v1alpha1.PhasedTraining{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("g%d", g)},
		Spec: v1alpha1.PhasedTrainingSpec{Phases: []v1alpha1.Phase{
			phase("train", trainMin, desired),
			phase("validate", val, val, "train"),
			phase("test", 1, 1, "validate"),
		}},
	}
}

// SizeCluster picks a node count for a trace: enough nodes for its largest
// job, and for its mean GPU demand (GPU-seconds over the span from the
// first arrival to the last job's end, were it to start at once) at 80%
// utilization.
func SizeCluster(jobs []TraceJob, gpusPerNode int) int {
	var work float64
	largest := 1
	var span time.Duration
	for _, j := range jobs {
		work += j.Duration.Seconds() * float64(j.GPUs)
		largest = max(largest, j.GPUs)
		span = max(span, j.Arrival+j.Duration)
	}
	need := float64(largest)
	if span > 0 {
		need = max(need, work/span.Seconds()/0.8)
	}
	return int(math.Ceil(need / float64(gpusPerNode)))
}
