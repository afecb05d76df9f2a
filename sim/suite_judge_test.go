package sim

import (
	"slices"
	"testing"
)

// The suite's targets (judge), one case each, on made-up figures:
// makespan, average JCT, p99 JCT and LB in seconds.
func TestSuiteTargets(t *testing.T) {
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
