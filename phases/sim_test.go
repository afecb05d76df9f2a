package phases

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// simulate drives a pipeline to its end with a fake engine that starts
// every queued gang at once and finishes every running one with result.
// It returns the instances in the order they ran and the final step.
func simulate(t *testing.T, p *Pipeline, result func(Instance) Observation) ([]string, Step) {
	t.Helper()
	st := &v1alpha1.PhasedTrainingStatus{}
	now := wrappers.T0
	var ran []string
	for range 100 {
		obs := Observations{}
		for i := range st.Phases {
			e := &st.Phases[i]
			if e.State == Queued {
				e.State, e.ReservedTime, e.StartTime = Running, wrappers.Time(now), wrappers.Time(now)
			}
			if e.State == Running {
				in := Instance{e.Name, e.Iteration, e.Attempt}
				obs[in] = result(in)
				ran = append(ran, in.String())
			}
		}
		step := p.Next(st, obs, now)
		p.Apply(st, step, now)
		for _, s := range step.Skip {
			ran = append(ran, "skip "+s.Instance.String())
		}
		if step.State != v1alpha1.PipelineRunning {
			return ran, step
		}
		now = now.Add(time.Minute)
	}
	t.Fatal("pipeline did not end")
	return nil, Step{}
}

func TestSimulateLoop(t *testing.T) {
	acc := map[int32]string{0: "0.5", 1: "0.7", 2: "0.95"}
	result := func(in Instance) Observation {
		o := allOK(8)
		if in.Name == "validate" {
			o.Outputs = map[string]string{"accuracy": acc[in.Iteration]}
		}
		if in.Name == "train" && in.Iteration == 1 && in.Attempt == 0 {
			o = Observation{Granted: 8, Failed: 1}
		}
		return o
	}
	for _, max := range []int32{2, 5} {
		t.Run(fmt.Sprint("max ", max), func(t *testing.T) {
			pt := loopPT(max).Obj()
			pt.Spec.Phases[1].MaxRetries = 1 // train
			ran, step := simulate(t, wrappers.Compiled(t, Compile, pt), result)
			want := []string{"prep#0.0", "train#0.0", "validate#0.0", "train#1.0", "train#1.1", "validate#1.0"}
			if max == 5 {
				want = append(want, "train#2.0", "validate#2.0")
			}
			want = append(want, "test#0.0")
			if d := cmp.Diff(want, ran); d != "" {
				t.Errorf("ran (-want +got):\n%s", d)
			}
			wantIt := map[int32]int32{2: 1, 5: 2}[max]
			if step.State != v1alpha1.PipelineSucceeded || step.Iteration != wantIt {
				t.Errorf("final step = %+v, want Succeeded at iteration %d", step, wantIt)
			}
		})
	}
}
