package sim

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/internal/wrappers"
)

// The simulator runs the controller's glue (package driver): these tests
// pin the defects that came from keeping a copy of it here.

func result(t *testing.T, r *Result, name string) PipelineResult {
	t.Helper()
	for _, p := range r.Pipelines {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no pipeline %s in %+v", name, r.Pipelines)
	return PipelineResult{}
}

// A whole-job hold is sized for the largest phase's workers; a phase whose
// worker needs more than a held slot once "ran" inside it (a 4-GPU test
// worker on a 2-GPU node). Now the hold fits every phase's workers, or the
// pipeline is reported Infeasible; and phasegang, which checks every phase
// when the pipeline arrives, runs nothing of a pipeline that cannot finish.
func TestAPhaseThatNeverFitsRunsNothing(t *testing.T) {
	pt := wrappers.MakePT("job").Namespace("ml").
		Phase("train", 2).GPUs(2).
		Phase("test", 1).GPUs(4).DependsOn("train").Obj()
	sc := &Scenario{Name: "never-fits", Cluster: Cluster{NodePools: []NodePool{{Name: "small", Count: 2, Allocatable: wrappers.NodeResources("64", 2)}}},
		Workload: []Workload{{Training: *pt, Runtimes: map[string]metav1.Duration{"train": {Duration: time.Hour}, "test": {Duration: time.Minute}}}}}
	for _, policy := range []Policy{PolicyPhasegang, PolicyWholeJob, PolicyRigid} {
		t.Run(string(policy), func(t *testing.T) {
			r := run(t, sc, policy)
			p := result(t, r, "ml/job")
			if p.State != StateInfeasible {
				t.Fatalf("state %s (%s), want Infeasible", p.State, p.Message)
			}
			if len(r.Intervals) != 0 || r.BusyGPUSeconds != 0 {
				t.Errorf("ran %d worker intervals (%.0f GPU-s) of a pipeline that can never finish", len(r.Intervals), r.BusyGPUSeconds)
			}
			if policy != PolicyWholeJob && !strings.Contains(p.Message, "phase test can never fit") {
				t.Errorf("message %q does not name the phase", p.Message)
			}
		})
	}
}

// The whole-job hold must fit every phase: with one 4-GPU node beside the
// 2-GPU ones, phasegang runs train on the small nodes and test on the big
// one; a hold of 2 slots able to take a 4-GPU worker does not exist.
func TestWholeJobHoldFitsEveryPhase(t *testing.T) {
	pt := wrappers.MakePT("job").Namespace("ml").
		Phase("train", 2).GPUs(2).
		Phase("test", 1).GPUs(4).DependsOn("train").Obj()
	sc := &Scenario{Name: "hold", Cluster: Cluster{NodePools: []NodePool{{Name: "small", Count: 2, Allocatable: wrappers.NodeResources("64", 2)}, {Name: "big", Count: 1, Allocatable: wrappers.NodeResources("64", 4)}}},
		Workload: []Workload{{Training: *pt, Runtimes: map[string]metav1.Duration{"train": {Duration: time.Hour}, "test": {Duration: time.Minute}}}}}
	if p := result(t, run(t, sc, PolicyPhasegang), "ml/job"); p.State != "Succeeded" {
		t.Errorf("phasegang: %s (%s)", p.State, p.Message)
	}
	wj := run(t, sc, PolicyWholeJob)
	if p := result(t, wj, "ml/job"); p.State == "Succeeded" {
		t.Errorf("whole-job ran the pipeline without a hold that fits its test phase")
	}
	for _, iv := range wj.Intervals {
		if iv.Phase == "test" && !strings.HasPrefix(iv.Node, "big") {
			t.Errorf("a 4-GPU test worker ran on %s", iv.Node)
		}
	}
}

// A failed pipeline stops what else it runs (driver.Advance stops the
// remaining phases, and the status change releases their gangs), so its
// sibling's GPUs go to the next pipeline at once.
func TestFailedPipelineStopsItsSiblings(t *testing.T) {
	failing := wrappers.MakePT("failing").Namespace("ml").
		Phase("a", 2).GPUs(1).
		Phase("b", 2).GPUs(1).Obj()
	next := wrappers.MakePT("next").Namespace("ml").Phase("a", 4).GPUs(1).Obj()
	w := Workload{Training: *failing, Runtimes: map[string]metav1.Duration{"a": {Duration: time.Hour}, "b": {Duration: time.Hour}}}
	w.Failures = []Failure{{Phase: "b", After: metav1.Duration{Duration: 10 * time.Minute}}}
	sc := &Scenario{Name: "siblings", Cluster: Cluster{NodePools: []NodePool{{Name: "gpu", Count: 1, Allocatable: wrappers.NodeResources("64", 4)}}},
		Workload: []Workload{w, {Training: *next, Arrival: metav1.Duration{Duration: time.Second}, Runtimes: map[string]metav1.Duration{"a": {Duration: time.Minute}}}}}
	r := run(t, sc, PolicyPhasegang)
	if p := result(t, r, "ml/failing"); p.State != "Failed" || p.Finish != 10*time.Minute {
		t.Fatalf("failing: %s at %s, want Failed at 10m", p.State, p.Finish)
	}
	for _, iv := range r.Intervals {
		if iv.Pipeline == "ml/failing" && iv.Phase == "a" && iv.End != 10*time.Minute {
			t.Errorf("sibling a ran until %s, want stopped at 10m", iv.End)
		}
	}
	if p := result(t, r, "ml/next"); p.Finish != 11*time.Minute {
		t.Errorf("next finished at %s, want 11m (started when the failed pipeline's GPUs came back)", p.Finish)
	}
}

// spec.priorityClassName orders the queue in the simulator as in the
// controller: the value comes from the scenario's priority classes.
func TestPriorityClassNameOrdersTheQueue(t *testing.T) {
	blocker := wrappers.MakePT("blocker").Namespace("ml").Phase("a", 4).GPUs(1).Obj()
	low := wrappers.MakePT("low").Namespace("ml").Phase("a", 4).GPUs(1).Obj()
	high := wrappers.MakePT("high").Namespace("ml").PriorityClass("research").Phase("a", 4).GPUs(1).Obj()
	rt := map[string]metav1.Duration{"a": {Duration: time.Hour}}
	sc := &Scenario{Name: "priority", Cluster: Cluster{NodePools: []NodePool{{Name: "gpu", Count: 1, Allocatable: wrappers.NodeResources("64", 4)}}},
		PriorityClasses: map[string]int32{"research": 100},
		Workload:        []Workload{{Training: *blocker, Runtimes: rt}, {Training: *low, Arrival: metav1.Duration{Duration: time.Second}, Runtimes: rt}, {Training: *high, Arrival: metav1.Duration{Duration: 2 * time.Second}, Runtimes: rt}}}
	r := run(t, sc, PolicyPhasegang)
	if h, l := result(t, r, "ml/high"), result(t, r, "ml/low"); h.Finish >= l.Finish {
		t.Errorf("high finished at %s, low at %s: the priority class was ignored", h.Finish, l.Finish)
	}
}

// A lost node releases its gang, which is queued again as the same
// attempt (no retry spent) and runs again elsewhere.
func TestNodeLossRequeuesTheGang(t *testing.T) {
	pt := wrappers.MakePT("job").Namespace("ml").Phase("train", 2).GPUs(4).Obj()
	sc := &Scenario{Name: "node-loss", Cluster: Cluster{NodePools: []NodePool{{Name: "gpu", Count: 3, Allocatable: wrappers.NodeResources("64", 4)}}},
		Workload: []Workload{{Training: *pt, Runtimes: map[string]metav1.Duration{"train": {Duration: time.Hour}}}}}
	// Lose a node the gang runs on (the engine is deterministic).
	lost := run(t, sc, PolicyPhasegang).Intervals[0].Node
	sc.NodeFailures = []NodeFailure{{Node: lost, At: metav1.Duration{Duration: 10 * time.Minute}}}
	r := run(t, sc, PolicyPhasegang)
	p := result(t, r, "ml/job")
	if p.State != "Succeeded" || p.Finish != 70*time.Minute {
		t.Fatalf("%s at %s (%s), want Succeeded at 1h10m (10m lost, then a full hour)", p.State, p.Finish, p.Message)
	}
	for _, iv := range r.Intervals {
		if iv.Attempt != 0 {
			t.Errorf("a retry was spent on the node's loss: %+v", iv)
		}
		if iv.Node == lost && iv.End > 10*time.Minute {
			t.Errorf("a worker ran on the lost node until %s", iv.End)
		}
	}
}

// Under per-pod the deadlocked pods hold their GPUs to the end: they are
// recorded (and drawn) as held-idle intervals.
func TestPerPodDeadlockRecordsHeldPods(t *testing.T) {
	pt := wrappers.MakePT("job").Namespace("ml").Phase("train", 4).GPUs(1).Obj()
	w := Workload{Training: *pt, Runtimes: map[string]metav1.Duration{"train": {Duration: time.Hour}}}
	w.Count = 4
	// One more pipeline arrives later: the run lasts until then.
	late := Workload{Training: *wrappers.MakePT("late").Namespace("ml").Phase("train", 4).GPUs(1).Obj(), Arrival: metav1.Duration{Duration: 3 * time.Minute}, Runtimes: map[string]metav1.Duration{"train": {Duration: time.Hour}}}
	sc := &Scenario{Name: "deadlock", Cluster: Cluster{NodePools: []NodePool{{Name: "gpu", Count: 1, Allocatable: wrappers.NodeResources("64", 4)}}}, Workload: []Workload{w, late}}
	r := run(t, sc, PolicyPerPod)
	if r.Metrics.Deadlocked == 0 {
		t.Fatalf("no deadlock: %+v", r.Metrics)
	}
	idle := 0
	for _, iv := range r.Intervals {
		if iv.Idle {
			idle++
		}
	}
	if idle != 4 {
		t.Errorf("%d held-idle intervals, want 4 (one per GPU held by a deadlocked pod)", idle)
	}
	for _, iv := range r.Intervals {
		if iv.Idle && iv.End != 3*time.Minute {
			t.Errorf("held pod %+v does not reach the end of the run (3m)", iv)
		}
	}
}
