package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/phases"
)

// The suite's targets (judge), one case each, on made-up figures:
// makespan, average JCT, p99 JCT and LB in seconds.
func TestSuiteTargets(t *testing.T) {
	t.Run("queues", testQueueTarget)
	type figs struct{ makespan, avg, p99 float64 }
	const lb = 100.0
	cases := map[string]struct {
		pg        figs
		baselines []figs
		maxOverLB float64
		want      []string
	}{
		"better on one, worse on another: no failure": {
			pg: figs{110, 50, 100}, baselines: []figs{{105, 60, 100}},
		},
		"better by 1% or less: no failure": {
			pg: figs{101, 50, 100}, baselines: []figs{{100, 50, 100}},
		},
		"better on one, as good on the rest: dominated": {
			pg: figs{110, 50, 100}, baselines: []figs{{105, 50, 100}},
			want: []string{"dominated by whole-job (makespan +4.8%)"},
		},
		"average JCT above the best, whoever is better elsewhere": {
			pg: figs{100, 60, 100}, baselines: []figs{{120, 50, 100}},
			want: []string{"JCT avg +20.0% vs whole-job"},
		},
		"a packing a baseline finds is not lost": {
			pg: figs{104, 50, 100}, baselines: []figs{{102, 55, 100}},
			want: []string{"makespan 1.040 × LB where whole-job packs it in 1.020 × LB"},
		},
		"within the slack of a packed baseline": {
			pg: figs{103, 50, 100}, baselines: []figs{{100, 55, 100}},
		},
		"a workload's own bound": {
			pg: figs{111, 50, 100}, baselines: []figs{{130, 60, 120}}, maxOverLB: 1.10,
			want: []string{"makespan 1.110 × LB, above 1.10"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := func(p Policy, f figs) *Result {
				return &Result{Policy: p, Metrics: Metrics{Pipelines: 1, Finished: 1, Makespan: f.makespan, JCTAvg: f.avg, JCTP99: f.p99, LowerBound: lb, JCTAvgLowerBound: 10}}
			}
			row := SuiteRow{Workload: SuiteWorkload{Name: name, MaxMakespanOverLB: tc.maxOverLB}, Results: []*Result{res(PolicyPhasegang, tc.pg)}}
			for _, b := range tc.baselines {
				row.Results = append(row.Results, res(PolicyWholeJob, b))
			}
			row.judge()
			if !slices.Equal(row.Failures, tc.want) {
				t.Errorf("failures %q, want %q", row.Failures, tc.want)
			}
		})
	}
}

// The queue target: a workload with QueueTarget fails when some queue
// held less than 90% of its entitlement in an hour in which it had work
// waiting, and names the worst queue's worst hour.
func testQueueTarget(t *testing.T) {
	m := Metrics{Pipelines: 1, Finished: 1, Makespan: 100, JCTAvg: 50, JCTP99: 100, LowerBound: 100, JCTAvgLowerBound: 10}
	fair := &Fairness{Queues: []QueueMetrics{
		{Queue: "a", WaitingHours: 5, WaitingShort: 1, WaitingWorst: 0.8},
		{Queue: "b", WaitingHours: 4, WaitingShort: 2, WaitingWorst: 0.5},
		{Queue: "c", WaitingHours: 3, WaitingWorst: 0.95},
	}}
	for _, tc := range []struct {
		target bool
		fair   *Fairness
		want   []string
	}{
		{target: true, fair: fair, want: []string{"a queue held < 90% of its entitlement in 3 of 12 queue-hours with work waiting (worst b: 50.0%)"}},
		{target: false, fair: fair},
		{target: true, fair: &Fairness{Queues: []QueueMetrics{{Queue: "a", WaitingHours: 5, WaitingWorst: 0.9}}}},
		{target: true},
	} {
		row := SuiteRow{Workload: SuiteWorkload{Name: "q", QueueTarget: tc.target}, Results: []*Result{
			{Policy: PolicyPhasegang, Metrics: m, Fairness: tc.fair}, {Policy: PolicyWholeJob, Metrics: m},
		}}
		row.judge()
		if !slices.Equal(row.Failures, tc.want) {
			t.Errorf("target %v: failures %q, want %q", tc.target, row.Failures, tc.want)
		}
	}
}

// Each class's time to admission is from arrival to its first phase's
// last start: a preempted attempt's start does not count.
func TestClassAdmissions(t *testing.T) {
	sc := &Scenario{Workload: []Workload{
		{Count: 2, Interval: dur(10 * time.Second)},
		{Arrival: dur(5 * time.Second)},
		{},
	}}
	for i, name := range []string{"small", "large", "other"} {
		w := &sc.Workload[i]
		w.Training.Name, w.Training.Namespace = name, "q"
		w.Training.Spec.Phases = []v1alpha1.Phase{{Name: "run"}}
		if name != "other" {
			w.Training.Labels = map[string]string{"class": name}
		}
	}
	at := func(p string, started time.Duration) PhaseRecord {
		return PhaseRecord{Pipeline: p, Instance: phases.Instance{Name: "run"}, Started: started}
	}
	got := classAdmissions(sc, "class", []PhaseRecord{
		at("q/small-0", 4*time.Second),  // waited 4s
		at("q/small-1", 12*time.Second), // preempted, then
		at("q/small-1", 30*time.Second), // re-admitted: 20s after arrival
		at("q/large", 65*time.Second),   // 60s
		at("q/other", time.Second),      // no class
	})
	want := []ClassAdmission{{"small", 2, 12}, {"large", 1, 60}}
	if !slices.Equal(got, want) {
		t.Errorf("class admissions %+v, want %+v", got, want)
	}
}
