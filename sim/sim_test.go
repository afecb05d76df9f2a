package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

func loadScenario(t *testing.T, path string) *Scenario {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := LoadScenario(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return sc
}

func loadTrace(t testing.TB, path string, o TraceOptions, nodes, gpus int) *Scenario {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	jobs, err := ReadTrace(f)
	if err != nil {
		t.Fatal(err)
	}
	return TraceScenario(filepath.Base(path), FilterTrace(jobs, o), o, nodes, gpus)
}

func run(t *testing.T, sc *Scenario, p Policy) *Result {
	t.Helper()
	r, err := Run(sc, Options{Policy: p, Record: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The seed problem: per-pod scheduling deadlocks, phasegang does not.
func TestSeedScenarioPerPodDeadlocksPhasegangFinishes(t *testing.T) {
	sc := loadScenario(t, "testdata/seed-one-node.yaml")

	perPod := run(t, sc, PolicyPerPod)
	if perPod.Metrics.Deadlocked == 0 || perPod.Metrics.Finished != 0 {
		t.Fatalf("per-pod: want a deadlock with nothing finished, got %+v", perPod.Metrics)
	}
	// Each deadlocked pipeline holds some but not all of its 8 workers.
	for _, p := range perPod.Pipelines {
		if p.State == StateDeadlocked && !strings.Contains(p.Message, "holds 1 workers") {
			t.Errorf("%s: %s", p.Name, p.Message)
		}
	}

	pg := run(t, sc, PolicyPhasegang)
	if pg.Metrics.Finished != 12 || pg.Metrics.Deadlocked != 0 {
		t.Fatalf("phasegang: want 12 finished, got %+v", pg.Metrics)
	}
	// Nothing ever runs a partial gang: every phase attempt has 8 workers.
	workers := map[string]int{}
	for _, iv := range pg.Intervals {
		workers[fmt.Sprintf("%s/%s#%d.%d", iv.Pipeline, iv.Phase, iv.Iteration, iv.Attempt)]++
	}
	if len(workers) != 36 {
		t.Errorf("want 36 phase attempts (12 × train, validate, test), got %d", len(workers))
	}
	for k, n := range workers {
		if n != 8 {
			t.Errorf("%s ran with %d workers, want 8", k, n)
		}
	}
	// One 8-GPU node, 40 minutes of 8-GPU work per pipeline: the schedule
	// is as short as it can be.
	if pg.Metrics.Makespan != pg.Metrics.LowerBound || pg.Metrics.Makespan != (8*time.Hour).Seconds() {
		t.Errorf("makespan %v, LB %v, want both 8h", pg.Metrics.Makespan, pg.Metrics.LowerBound)
	}
}

// Every policy's schedule respects node capacity at every instant.
func TestEveryPolicyRespectsCapacity(t *testing.T) {
	scenarios := map[string]*Scenario{
		"seed":     loadScenario(t, "../examples/simulate/seed-deadlock.yaml"),
		"mixed":    loadScenario(t, "testdata/mixed.yaml"),
		"tiresias": loadTrace(t, "testdata/tiresias-60job.csv", DefaultTraceOptions(), 8, 4),
		"philly":   loadTrace(t, "testdata/philly-slice.csv", DefaultTraceOptions(), 8, 8),
	}
	for name, sc := range scenarios {
		capacity := map[string]float64{}
		for _, n := range sc.Cluster.Nodes() {
			capacity[n.Name] = float64(n.Allocatable["nvidia.com/gpu"]) / 1000
		}
		for _, p := range Policies {
			t.Run(name+"/"+string(p), func(t *testing.T) {
				r := run(t, sc, p)
				if len(r.Intervals) == 0 && len(r.Deadlocked) == 0 {
					t.Fatal("no worker ran, and nothing deadlocked")
				}
				type edge struct {
					at   time.Duration
					gpus float64
				}
				byNode := map[string][]edge{}
				for _, iv := range r.Intervals {
					if iv.End < iv.Start {
						t.Fatalf("interval ends before it starts: %+v", iv)
					}
					byNode[iv.Node] = append(byNode[iv.Node], edge{iv.Start, iv.GPUs}, edge{iv.End, -iv.GPUs})
				}
				for node, edges := range byNode {
					// Ends before starts at the same instant: a released GPU
					// is reused at once.
					slices.SortFunc(edges, func(a, b edge) int {
						if a.at != b.at {
							return int(a.at - b.at)
						}
						return int(a.gpus - b.gpus)
					})
					var used float64
					for _, e := range edges {
						used += e.gpus
						if used > capacity[node]+1e-9 {
							t.Fatalf("node %s holds %.0f GPUs at %v, capacity %.0f", node, used, e.at, capacity[node])
						}
					}
				}
			})
		}
	}
}

func TestDeterministic(t *testing.T) {
	sc := loadTrace(t, "testdata/philly-slice.csv", DefaultTraceOptions(), 8, 8)
	a, b := run(t, sc, PolicyPhasegang), run(t, sc, PolicyPhasegang)
	if diff := cmp.Diff(a.Pipelines, b.Pipelines); diff != "" {
		t.Errorf("two runs differ:\n%s", diff)
	}
}

func TestElasticGrowsAndIsFasterThanRigid(t *testing.T) {
	sc := loadScenario(t, "testdata/mixed.yaml")
	pg, rigid := run(t, sc, PolicyPhasegang), run(t, sc, PolicyRigid)
	if pg.Metrics.Finished != pg.Metrics.Pipelines || rigid.Metrics.Finished != rigid.Metrics.Pipelines {
		t.Fatalf("not everything finished: %+v / %+v", pg.Metrics, rigid.Metrics)
	}
	if pg.Metrics.JCTAvg >= rigid.Metrics.JCTAvg {
		t.Errorf("elastic avg JCT %.0fs is not below rigid %.0fs", pg.Metrics.JCTAvg, rigid.Metrics.JCTAvg)
	}
}

func TestFailureInjectionRetries(t *testing.T) {
	sc := loadScenario(t, "testdata/mixed.yaml")
	r := run(t, sc, PolicyPhasegang)
	attempts := map[int32]bool{}
	for _, iv := range r.Intervals {
		if iv.Pipeline == "ml/flaky" && iv.Phase == "train" {
			attempts[iv.Attempt] = true
		}
	}
	if !attempts[0] || !attempts[1] {
		t.Errorf("want train attempts 0 (failed) and 1 (retry), got %v", attempts)
	}
	for _, p := range r.Pipelines {
		if p.Name == "ml/flaky" && p.State != "Succeeded" {
			t.Errorf("flaky: %s %s", p.State, p.Message)
		}
	}
}

func TestReadTraceFormats(t *testing.T) {
	for _, tc := range []struct {
		file  string
		jobs  int
		first TraceJob
	}{
		{"testdata/tiresias-60job.csv", 60, TraceJob{Arrival: 0, Duration: 164 * time.Second, GPUs: 1}},
		{"testdata/philly-slice.csv", 200, TraceJob{}},
	} {
		f, err := os.Open(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := ReadTrace(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != tc.jobs {
			t.Errorf("%s: %d jobs, want %d", tc.file, len(jobs), tc.jobs)
		}
		if tc.first != (TraceJob{}) && jobs[0] != tc.first {
			t.Errorf("%s: first job %+v, want %+v", tc.file, jobs[0], tc.first)
		}
		for i := 1; i < len(jobs); i++ {
			if jobs[i].Arrival < jobs[i-1].Arrival {
				t.Fatalf("%s: not sorted by arrival at %d", tc.file, i)
			}
		}
	}
	if _, err := ReadTrace(strings.NewReader("a,b\n1,2\n")); err == nil || !strings.Contains(err.Error(), "unknown trace format") {
		t.Errorf("want an unknown-format error, got %v", err)
	}
}

func TestLoadScenarioErrorsNameTheField(t *testing.T) {
	bad := `
cluster: {nodePools: [{name: gpu, count: 1, allocatable: {nvidia.com/gpu: "8"}}]}
workload:
- runtimes: {train: 1h}
  training:
    metadata: {name: x}
    spec:
      phases:
      - name: train
        dependsOn: [trian]
        gang: {min: 2}
        template: {spec: {containers: [{name: w, image: i}]}}
`
	_, err := LoadScenario([]byte(bad))
	if err == nil || !strings.Contains(err.Error(), `workload[0].training.spec.phases[0].dependsOn[0]`) {
		t.Fatalf("want an error naming the field, got %v", err)
	}
}

func TestLoadScenarioBadValuesNameTheField(t *testing.T) {
	bad := `
cluster: {nodePools: [{name: gpu, count: 1, allocatable: {nvidia.com/gpu: "8x"}}]}
nodeFailures: [{node: gpu-0, at: 5min}]
workload:
- runtimes: {train: 1h}
  training:
    metadata: {name: x}
    spec:
      phases:
      - name: train
        gang: {min: 2}
        template: {spec: {containers: [{name: w, image: i}]}}
`
	_, err := LoadScenario([]byte(bad))
	for _, want := range []string{
		`nodeFailures[0].at: invalid duration "5min"`,
		`cluster.nodePools[0].allocatable[nvidia.com/gpu]: invalid quantity "8x"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error containing %q, got %v", want, err)
		}
	}
}

// TestTraceTeams: --teams keeps the busiest teams' jobs, each in its own
// queue of an equal share of the cluster, in one cohort; a trace that
// names no team is dealt out in turn.
func TestTraceTeams(t *testing.T) {
	const csv = `timestamp,duration,num_gpus,gpu_time,cluster
2017-10-01 00:00:00,3600,8,28800,big
2017-10-01 00:10:00,3600,1,3600,small
2017-10-01 00:20:00,7200,2,14400,mid
2017-10-01 00:30:00,3600,4,14400,big
`
	jobs, err := ReadTrace(strings.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultTraceOptions()
	o.Teams = 2
	grace := 5 * time.Minute
	o.ReclaimGrace = &grace
	kept := FilterTrace(jobs, o)
	var teams []string
	for _, j := range kept {
		teams = append(teams, j.Team)
	}
	if got := strings.Join(teams, ","); got != "big,mid,big" {
		t.Fatalf("teams of the kept jobs %s, want big,mid,big (small has the fewest GPU-hours)", got)
	}
	if kept[0].Arrival != 0 || kept[1].Arrival != 20*time.Minute {
		t.Errorf("arrivals %v, %v; want 0 and 20m", kept[0].Arrival, kept[1].Arrival)
	}
	sc := TraceScenario("teams", kept, o, 3, 8)
	if len(sc.Queues) != 2 {
		t.Fatalf("%d queues, want 2", len(sc.Queues))
	}
	for i, want := range []struct {
		name    string
		nominal int64
	}{{"team-big", 12}, {"team-mid", 12}} {
		q := sc.Queues[i]
		if q.Name != want.name || q.Spec.Cohort != "trace" || q.Spec.Resources[0].NominalQuota.Value() != want.nominal {
			t.Errorf("queue %d: %s in %q with %v, want %s in trace with %d", i, q.Name, q.Spec.Cohort, q.Spec.Resources[0].NominalQuota.String(), want.name, want.nominal)
		}
		if p := q.Spec.Preemption; p == nil || p.ReclaimWithinCohort != v1alpha1.PreemptAny || p.ReclaimGracePeriod.Duration != grace {
			t.Errorf("queue %s: preemption %+v, want Any after %v", q.Name, p, grace)
		}
	}
	if got := sc.Workload[1].Training.Spec.QueueName; got != "team-mid" {
		t.Errorf("second job's queue %q, want team-mid", got)
	}
	if err := sc.validate(); err != nil {
		t.Errorf("the scenario does not validate: %v", err)
	}

	anonymous, err := ReadTrace(strings.NewReader("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n1,1,0,1,m,60,0\n2,1,10,1,m,60,0\n3,1,20,1,m,60,0\n"))
	if err != nil {
		t.Fatal(err)
	}
	teams = nil
	for _, j := range FilterTrace(anonymous, o) {
		teams = append(teams, j.Team)
	}
	if got := strings.Join(teams, ","); got != "t0,t1,t0" {
		t.Errorf("a trace without teams dealt out as %s, want t0,t1,t0", got)
	}
}
