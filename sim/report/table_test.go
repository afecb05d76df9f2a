package report

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phasegang/phasegang/sim"
)

// Under the table, every pipeline that did not finish is named with its
// state and why, grouped by state; a run where all finished adds nothing.
func TestWriteUnfinished(t *testing.T) {
	p := func(name, state, msg string) sim.PipelineResult {
		return sim.PipelineResult{Name: name, State: state, Message: msg}
	}
	var many []sim.PipelineResult
	for i := range maxUnfinishedLines + 3 {
		many = append(many, p(fmt.Sprintf("ml/p-%02d", i), sim.StateUnfinished, "never started"))
	}
	for name, tc := range map[string]struct {
		pipelines []sim.PipelineResult
		want      []string
	}{
		"all finished": {pipelines: []sim.PipelineResult{p("ml/a", "Succeeded", "done")}},
		"every state": {
			pipelines: []sim.PipelineResult{
				p("ml/a", "Succeeded", "done"),
				p("ml/b", sim.StateInfeasible, "needs 9 workers"),
				p("ml/c", sim.StateUnfinished, "never started "),
				p("ml/long-name", sim.StateDeadlocked, "holds 3 workers"),
				p("ml/e", "Failed", "train failed"),
				p("ml/f", sim.StateDeadlocked, "holds 1 workers"),
			},
			want: []string{
				"per-pod: 5 of 6 pipelines did not finish (2 deadlocked, 1 unfinished, 1 infeasible, 1 failed):",
				"  ml/long-name  Deadlocked  holds 3 workers",
				"  ml/f          Deadlocked  holds 1 workers",
				"  ml/c          Unfinished  never started",
				"  ml/b          Infeasible  needs 9 workers",
				"  ml/e          Failed      train failed",
			},
		},
		"a long list is cut": {
			pipelines: many,
			want: append(append([]string{"per-pod: 53 of 53 pipelines did not finish (53 unfinished):"},
				func() (out []string) {
					for _, q := range many[:maxUnfinishedLines] {
						out = append(out, "  "+q.Name+"  Unfinished  never started")
					}
					return out
				}()...), "  … and 3 more (--csv lists every pipeline)"),
		},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := WriteUnfinished(&out, &sim.Result{Policy: sim.PolicyPerPod, Pipelines: tc.pipelines}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, lines(out.String())); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// The table shows an infinite makespan (a pipeline never finished) as
// "∞" and an undefined utilization (NaN) as "-"; sim's
// TestMetricsNeverFinished checks that a run yields those figures.
func TestTableNeverFinished(t *testing.T) {
	for name, tc := range map[string]struct {
		m     sim.Metrics
		table []string // in the table's row
	}{
		"all finished":              {sim.Metrics{Pipelines: 2, Finished: 2, Makespan: 7200, Utilization: 0.5}, []string{"2/2", " 2h00m ", " 50.0% "}},
		"one deadlocked":            {sim.Metrics{Pipelines: 2, Finished: 1, Deadlocked: 1, Makespan: math.Inf(1), Utilization: math.NaN()}, []string{"1/2", " ∞ ", " - "}},
		"every pipeline infeasible": {sim.Metrics{Pipelines: 1}, []string{"0/1", " 0s ", " 0.0% "}},
		"one unfinished":            {sim.Metrics{Pipelines: 1, Unfinished: 1, Makespan: math.Inf(1), Utilization: math.NaN()}, []string{"0/1", " ∞ ", " - "}},
	} {
		t.Run(name, func(t *testing.T) {
			var table bytes.Buffer
			if err := WriteTable(&table, []*sim.Result{{Policy: sim.PolicyPerPod, Metrics: tc.m}}); err != nil {
				t.Fatal(err)
			}
			row := lines(table.String())[1] + " "
			for _, want := range tc.table {
				if !strings.Contains(row, want) {
					t.Errorf("table row %q lacks %q", row, want)
				}
			}
		})
	}
}
