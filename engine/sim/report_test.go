package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Under the table, every pipeline that did not finish is named with its
// state and why, grouped by state; a run where all finished adds nothing.
func TestWriteUnfinished(t *testing.T) {
	p := func(name, state, msg string) PipelineResult {
		return PipelineResult{Name: name, State: state, Message: msg}
	}
	var many []PipelineResult
	for i := range maxUnfinishedLines + 3 {
		many = append(many, p(fmt.Sprintf("ml/p-%02d", i), StateUnfinished, "never started"))
	}
	for name, tc := range map[string]struct {
		pipelines []PipelineResult
		want      []string
	}{
		"all finished": {pipelines: []PipelineResult{p("ml/a", "Succeeded", "done")}},
		"every state": {
			pipelines: []PipelineResult{
				p("ml/a", "Succeeded", "done"),
				p("ml/b", StateInfeasible, "needs 9 workers"),
				p("ml/c", StateUnfinished, "never started "),
				p("ml/long-name", StateDeadlocked, "holds 3 workers"),
				p("ml/e", "Failed", "train failed"),
				p("ml/f", StateDeadlocked, "holds 1 workers"),
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
			if err := WriteUnfinished(&out, &Result{Policy: PolicyPerPod, Pipelines: tc.pipelines}); err != nil {
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

// The queued columns are per pipeline under every policy: the mean and
// p99 of PipelineResult.Queueing over the pipelines that ended, not of
// Result.Waits (one per gang, so one per phase under most policies and one
// per pipeline under whole-job).
func TestQueuedIsPerPipeline(t *testing.T) {
	sc := loadScenario(t, "../../examples/simulate/seed-deadlock.yaml")
	for _, p := range Policies {
		t.Run(string(p), func(t *testing.T) {
			r := run(t, sc, p)
			var q []float64
			for _, pr := range r.Pipelines {
				if ended(pr) {
					q = append(q, pr.Queueing.Seconds())
				}
			}
			if len(q) == 0 {
				t.Fatal("no pipeline ended")
			}
			m := r.Metrics
			if m.QueuedAvg != mean(q) || m.QueuedP99 != quantile(q, 0.99) {
				t.Errorf("queued avg %v p99 %v, want %v %v (the pipelines' Queueing)", m.QueuedAvg, m.QueuedP99, mean(q), quantile(q, 0.99))
			}
		})
	}
	// Waits do not count: three phase waits of one pipeline are one
	// pipeline's queueing.
	r := &Result{
		Pipelines: []PipelineResult{{Name: "a", State: "Succeeded", Finish: time.Hour, Queueing: 30 * time.Minute}},
		Waits:     []time.Duration{10 * time.Minute, 10 * time.Minute, 10 * time.Minute},
	}
	r.computeMetrics(&Scenario{})
	if r.Metrics.QueuedAvg != 1800 || r.Metrics.QueuedP99 != 1800 {
		t.Errorf("queued avg %v p99 %v, want 1800 1800", r.Metrics.QueuedAvg, r.Metrics.QueuedP99)
	}
}

// A run in which some pipeline never finished has an infinite makespan and
// no utilization: "∞" and "-" in the table, null in JSON (not -1, which
// reads as seconds). Finite figures encode as encoding/json would.
func TestMetricsNeverFinished(t *testing.T) {
	done := func(name string, finish time.Duration) PipelineResult {
		return PipelineResult{Name: name, State: "Succeeded", Finish: finish}
	}
	for name, tc := range map[string]struct {
		pipelines []PipelineResult
		table     []string // in the table's row
		json      map[string]any
	}{
		"all finished": {
			pipelines: []PipelineResult{done("a", time.Hour), done("b", 2*time.Hour)},
			table:     []string{"2/2", " 2h00m ", " 50.0% "},
			json:      map[string]any{"makespanSeconds": 7200.0, "gpuUtilization": 0.5},
		},
		"one deadlocked": {
			pipelines: []PipelineResult{done("a", time.Hour), {Name: "b", State: StateDeadlocked}},
			table:     []string{"1/2", " ∞ ", " - "},
			json:      map[string]any{"makespanSeconds": nil, "gpuUtilization": nil},
		},
		"every pipeline infeasible": { // nothing ran: not ∞, not negative
			pipelines: []PipelineResult{{Name: "b", State: StateInfeasible, Arrival: time.Hour}},
			table:     []string{"0/1", " 0s ", " 0.0% "},
			json:      map[string]any{"makespanSeconds": 0.0, "gpuUtilization": 0.0},
		},
		"one unfinished": {
			pipelines: []PipelineResult{{Name: "b", State: StateUnfinished}},
			table:     []string{"0/1", " ∞ ", " - "},
			json:      map[string]any{"makespanSeconds": nil, "gpuUtilization": nil},
		},
	} {
		t.Run(name, func(t *testing.T) {
			// 4 of 8 GPUs busy for 2h.
			r := &Result{Policy: PolicyPerPod, GPUs: 8, BusyGPUSeconds: 4 * 7200, Pipelines: tc.pipelines}
			r.computeMetrics(&Scenario{})
			var table bytes.Buffer
			if err := WriteTable(&table, []*Result{r}); err != nil {
				t.Fatal(err)
			}
			row := lines(table.String())[1] + " "
			for _, want := range tc.table {
				if !strings.Contains(row, want) {
					t.Errorf("table row %q lacks %q", row, want)
				}
			}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var got struct{ Metrics map[string]any }
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.json {
				if v, ok := got.Metrics[k]; !ok || v != want {
					t.Errorf("%s = %v (present: %v), want %v in %s", k, v, ok, want, b)
				}
			}
		})
	}
	// Finite metrics: the same bytes as encoding/json's own encoding.
	type plain Metrics
	m := Metrics{Pipelines: 3, Finished: 3, Makespan: 1.5, LowerBound: 1, Utilization: 0.5, QueuedP99: 2, DecisionsPerSec: 7}
	for _, m := range []Metrics{m, {}} {
		got, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(plain(m))
		if string(got) != string(want) {
			t.Errorf("MarshalJSON:\n got %s\nwant %s", got, want)
		}
	}
}
