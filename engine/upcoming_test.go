package engine_test

import (
	"strings"
	"testing"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

func gpuRequest(pipeline, phase string, min int32, gpus int64) engine.Request {
	return engine.Request{
		Gang: engine.GangKey{Pipeline: pipeline, Phase: phase}, Min: min, Desired: min,
		Created: Epoch, Queued: Epoch, Footprint: engine.ResourceList{wrappers.GPU: engine.Milli(gpus)},
	}
}

// A pipeline whose later phase can never fit runs nothing: its queued
// first phase is not admitted, the upcoming phase is reported Infeasible
// with the numbers, and other pipelines are not held back. Both entry
// points (Schedule on a Snapshot, State.Expect) agree.
func TestUpcomingPhaseThatNeverFitsHoldsItsPipeline(t *testing.T) {
	nodes := []engine.Node{wrappers.EngineNode("n1", 2), wrappers.EngineNode("n2", 2)}
	queue := []engine.Request{gpuRequest("ml/doomed", "train", 2, 2), gpuRequest("ml/fine", "train", 1, 2)}
	upcoming := []engine.Request{gpuRequest("ml/doomed", "test", 1, 4), gpuRequest("ml/fine", "test", 1, 1)}

	check := func(t *testing.T, plan engine.Plan) {
		t.Helper()
		if len(plan.Reserves) != 1 || plan.Reserves[0].Gang.Pipeline != "ml/fine" {
			t.Errorf("reserves %+v, want only ml/fine's train", plan.Reserves)
		}
		if len(plan.Infeasible) != 1 || plan.Infeasible[0].Gang != upcoming[0].Gang {
			t.Fatalf("infeasible %+v, want ml/doomed's upcoming test", plan.Infeasible)
		}
		if msg := plan.Infeasible[0].Message; !strings.Contains(msg, "4") {
			t.Errorf("message %q lacks the numbers", msg)
		}
	}
	t.Run("Schedule", func(t *testing.T) {
		check(t, engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes, Queue: queue, Upcoming: upcoming}))
	})
	t.Run("State", func(t *testing.T) {
		st := engine.NewState(engine.DefaultConfig(), nodes, nil)
		for _, r := range queue {
			st.Submit(r)
		}
		st.Expect("ml/doomed", upcoming[:1])
		st.Expect("ml/fine", upcoming[1:])
		check(t, st.Cycle(Epoch))
		// Still held in later cycles; admitted once the phase may fit.
		if plan := st.Cycle(Epoch); len(plan.Reserves) != 0 {
			t.Errorf("second cycle reserved %+v", plan.Reserves)
		}
		st.AddNode(wrappers.EngineNode("big", 4))
		if plan := st.Cycle(Epoch); len(plan.Reserves) != 1 || plan.Reserves[0].Gang.Pipeline != "ml/doomed" || len(plan.Infeasible) != 0 {
			t.Errorf("after a 4-GPU node came: %+v", plan)
		}
	})
}

// A queued gang that never fits holds its pipeline's siblings too.
func TestQueuedGangThatNeverFitsHoldsItsSiblings(t *testing.T) {
	st := engine.NewState(engine.DefaultConfig(), []engine.Node{wrappers.EngineNode("n1", 2)}, nil)
	st.Submit(gpuRequest("ml/p", "a", 1, 1))
	st.Submit(gpuRequest("ml/p", "b", 1, 8))
	for range 2 {
		if plan := st.Cycle(Epoch); len(plan.Reserves) != 0 {
			t.Fatalf("reserved %+v of a pipeline whose sibling never fits", plan.Reserves)
		}
	}
}
