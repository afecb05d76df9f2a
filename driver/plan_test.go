package driver

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// gang is the engine's key of a first attempt of ns/<pipeline>'s phase.
func gang(pipeline, phase string) engine.GangKey {
	return engine.GangKey{Pipeline: "ns/" + pipeline, Phase: phase}
}

// demandOf is the Demand of one scheduling cycle over pts.
func demandOf(pts ...*v1alpha1.PhasedTraining) *Demand {
	d := &Demand{}
	for _, pt := range pts {
		d.Add(pt, nil)
	}
	return d
}

// wantChange is what a test asserts of one pipeline's Change.
type wantChange struct {
	Phases     []v1alpha1.PhaseStatus
	Conditions []metav1.Condition
	State      v1alpha1.PipelineState
	Events     []Event
}

// checkChanges compares a cycle's changes with want, by pipeline key.
func checkChanges(t *testing.T, want map[string]wantChange, got Changes) {
	t.Helper()
	if d := cmp.Diff(sortedKeys(want), got.Keys(), cmpopts.EquateEmpty()); d != "" {
		t.Fatalf("changed pipelines (-want +got):\n%s", d)
	}
	for key, w := range want {
		c := got[key]
		if d := cmp.Diff(w.Phases, c.Status.Phases); d != "" {
			t.Errorf("%s: phases (-want +got):\n%s", key, d)
		}
		if d := cmp.Diff(w.Conditions, c.Status.Conditions, condOpts); d != "" {
			t.Errorf("%s: conditions (-want +got):\n%s", key, d)
		}
		if c.Status.State != w.State {
			t.Errorf("%s: state = %s, want %s", key, c.Status.State, w.State)
		}
		if d := cmp.Diff(w.Events, c.Events); d != "" {
			t.Errorf("%s: events (-want +got):\n%s", key, d)
		}
	}
}

// Conditions of a pipeline the plan leaves with one phase running, or
// with only queued ones (explained by why).
func runningConds(msg string) []metav1.Condition {
	return []metav1.Condition{
		condGen(1, v1alpha1.ConditionRunning, true, v1alpha1.ReasonPhaseRunning, msg),
		condGen(1, v1alpha1.ConditionQueued, false, v1alpha1.ReasonPhaseRunning, v1alpha1.ReasonPhaseRunning),
	}
}

// startingConds: a gang reserved, none of its workers running yet.
func startingConds(msg string) []metav1.Condition {
	return []metav1.Condition{
		condGen(1, v1alpha1.ConditionRunning, false, v1alpha1.ReasonWaitingForCapacity, "no phase is running"),
		condGen(1, v1alpha1.ConditionStarting, true, v1alpha1.ReasonGangStarting, msg),
		condGen(1, v1alpha1.ConditionQueued, false, v1alpha1.ReasonPhaseRunning, v1alpha1.ReasonPhaseRunning),
	}
}

func queuedConds(why string) []metav1.Condition {
	return []metav1.Condition{
		condGen(1, v1alpha1.ConditionRunning, false, v1alpha1.ReasonWaitingForCapacity, "no phase is running"),
		condGen(1, v1alpha1.ConditionQueued, true, v1alpha1.ReasonWaitingForCapacity, why),
	}
}

// infeasibleConds: Infeasible is the one summary condition true.
func infeasibleConds(msg string) []metav1.Condition {
	return []metav1.Condition{
		condGen(1, v1alpha1.ConditionInfeasible, true, v1alpha1.ReasonGangNeverFits, msg),
		condGen(1, v1alpha1.ConditionRunning, false, v1alpha1.ReasonWaitingForCapacity, "no phase is running"),
		condGen(1, v1alpha1.ConditionQueued, false, v1alpha1.ReasonPhaseRunning, v1alpha1.ReasonPhaseRunning),
	}
}

func TestApplyPlan(t *testing.T) {
	stamp := metav1.NewTime(now)
	queuedAt := wrappers.Time(now.Add(-30 * time.Minute))
	waitingTrain := func() v1alpha1.PhaseStatus {
		ps := wrappers.Queued("train")
		ps.QueuedTime, ps.WaitingFor = queuedAt, "needs 2 × {cpu: 1} at once"
		ps.Workers = v1alpha1.WorkerCounts{Min: 2, Desired: 2}
		return ps
	}
	runningOn := func(nodes ...string) v1alpha1.PhaseStatus {
		ps := wrappers.Running("train", nodes...)
		setReservation(&ps)
		ps.QueuedTime, ps.ReservedTime, ps.StartTime = queuedAt, wrappers.Time(now.Add(-20*time.Minute)), wrappers.Time(now.Add(-19*time.Minute))
		ps.Workers.Min, ps.Workers.Desired, ps.Workers.Running = 2, 4, int32(len(nodes))
		return ps
	}
	wait := engine.Wait{Gang: gang("job", "train"), Reason: engine.WaitCapacity, Min: 2,
		Footprint: engine.ResourceList{"cpu": 1000, "pods": 1000}, MatchingNodes: 3, FitNow: 1}
	// held is the engine's Wait of a gang whose pipeline cannot finish.
	held := engine.Wait{Gang: gang("job", "train"), Reason: engine.WaitPipelineCannotFinish, Min: 2}
	const never = "needs 16 × {nvidia.com/gpu: 1}; the largest node has 8"
	trainEval := func() *wrappers.PT {
		return wrappers.MakePT("job").Phase("train", 2).Phase("eval", 1).DependsOn("train")
	}
	tests := map[string]struct {
		pts  []*v1alpha1.PhasedTraining
		plan engine.Plan
		want map[string]wantChange
	}{
		// No pod of the new gang exists yet: the phase is Starting, as its
		// pipeline is, not Running.
		"a Reserve reserves the phase's nodes, by worker index; the phase is Starting": {
			pts: []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("train", 2).Status(waitingTrain()).Obj()},
			plan: engine.Plan{Reserves: []engine.Reservation{{Gang: gang("job", "train"),
				Workers: []engine.WorkerPlacement{{Index: 1, Node: "n2"}, {Index: 0, Node: "n1"}}}}},
			want: map[string]wantChange{"ns/job": {
				Phases: []v1alpha1.PhaseStatus{{
					Name: "train", State: v1alpha1.PhaseStarting,
					Assignments: []string{"n1", "n2"}, Reservation: map[string]int32{"n1": 1, "n2": 1},
					Workers:    v1alpha1.WorkerCounts{Min: 2, Desired: 2, Granted: 2},
					QueuedTime: queuedAt, ReservedTime: &stamp,
					// What it waited for goes into its history.
					History: []v1alpha1.PhaseEvent{{Time: stamp, Type: v1alpha1.PhaseEventReserved, Workers: 2, Message: "needs 2 × {cpu: 1} at once"}},
				}},
				Conditions: append(startingConds("starting: train: 0 of 2 workers running (it runs at 2)"),
					condGen(1, v1alpha1.ConditionInfeasible, false, v1alpha1.ReasonGangReserved, "the gang fits")),
				State:  v1alpha1.PipelineStarting,
				Events: []Event{normal("Reserved", "Schedule", "phase train: reserved 2 workers on n1×1, n2×1 after 30m0s queued")},
			}},
		},
		"a Grow adds workers after the last": {
			pts:  []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("train", 2).Desired(4).Status(runningOn("n1", "n2")).Obj()},
			plan: engine.Plan{Grows: []engine.Reservation{{Gang: gang("job", "train"), Workers: []engine.WorkerPlacement{{Index: 2, Node: "n3"}}}}},
			want: map[string]wantChange{"ns/job": {
				Phases: func() []v1alpha1.PhaseStatus {
					ps := runningOn("n1", "n2", "n3")
					ps.Workers.Running = 2
					ps.History = []v1alpha1.PhaseEvent{{Time: stamp, Type: v1alpha1.PhaseEventGrow, Workers: 3, Message: "grew by 1 workers"}}
					return []v1alpha1.PhaseStatus{ps}
				}(),
				Conditions: runningConds("running: train on 3 workers"),
				State:      v1alpha1.PipelineRunning,
				Events:     []Event{normal("Grown", "Schedule", "phase train grew by 1 workers (now 3)")},
			}},
		},
		"a Shrink gives back the last workers": {
			pts: []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("train", 2).Desired(4).Status(runningOn("n1", "n2", "n3")).Obj()},
			plan: engine.Plan{Shrinks: []engine.Shrink{{Gang: gang("job", "train"), Workers: []engine.WorkerPlacement{{Index: 2, Node: "n3"}},
				For: engine.GangKey{Pipeline: "other/big", Phase: "train"}}}},
			want: map[string]wantChange{"ns/job": {
				Phases: func() []v1alpha1.PhaseStatus {
					ps := runningOn("n1", "n2")
					ps.Workers.Running = 3 // counted by the next observation
					ps.History = []v1alpha1.PhaseEvent{{Time: stamp, Type: v1alpha1.PhaseEventShrink, Workers: 2, Message: "gave back 1 surplus workers for other/big"}}
					return []v1alpha1.PhaseStatus{ps}
				}(),
				Conditions: runningConds("running: train on 2 workers"),
				State:      v1alpha1.PipelineRunning,
				Events:     []Event{normal("Shrunk", "Schedule", "phase train gave back 1 surplus workers (now 2) for other/big")},
			}},
		},
		// A lost node is the cluster's fault: the same attempt is queued
		// again, no retry is spent.
		"a NodeLost release queues the same attempt again": {
			pts:  []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("train", 2).Desired(4).Status(runningOn("n1", "n2")).Obj()},
			plan: engine.Plan{Releases: []engine.Release{{Gang: gang("job", "train"), Reason: engine.ReleaseNodeLost, Message: "node n2 is gone"}}},
			want: map[string]wantChange{"ns/job": {
				Phases: []v1alpha1.PhaseStatus{{
					Name: "train", State: v1alpha1.PhaseQueued,
					Message:    "node n2 is gone; the gang was released and queued again",
					Workers:    v1alpha1.WorkerCounts{Min: 2, Desired: 4},
					QueuedTime: &stamp,
					History:    []v1alpha1.PhaseEvent{{Time: stamp, Type: v1alpha1.PhaseEventNodeLost, Message: "node n2 is gone"}},
				}},
				Conditions: queuedConds("queued: train"),
				State:      v1alpha1.PipelineQueued,
				Events:     []Event{warning("NodeLost", "Schedule", "phase train: node n2 is gone; gang released and queued again")},
			}},
		},
		// A pod phasegang does not manage took capacity of unbound
		// workers and nothing else fits them: like a lost node.
		"a Displaced release queues the same attempt again": {
			pts: []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("train", 2).Desired(4).Status(runningOn("n1", "n2")).Obj()},
			plan: engine.Plan{Releases: []engine.Release{{Gang: gang("job", "train"), Reason: engine.ReleaseDisplaced,
				Message: "node n2 can no longer hold its reserved workers: pod web/x, which phasegang does not manage, took the capacity (short by cpu: 1); no other node fits worker 1"}}},
			want: map[string]wantChange{"ns/job": {
				Phases: []v1alpha1.PhaseStatus{{
					Name: "train", State: v1alpha1.PhaseQueued,
					Message:    "node n2 can no longer hold its reserved workers: pod web/x, which phasegang does not manage, took the capacity (short by cpu: 1); no other node fits worker 1; the gang was released and queued again",
					Workers:    v1alpha1.WorkerCounts{Min: 2, Desired: 4},
					QueuedTime: &stamp,
					History: []v1alpha1.PhaseEvent{{Time: stamp, Type: v1alpha1.PhaseEventDisplaced,
						Message: "node n2 can no longer hold its reserved workers: pod web/x, which phasegang does not manage, took the capacity (short by cpu: 1); no other node fits worker 1"}},
				}},
				Conditions: queuedConds("queued: train"),
				State:      v1alpha1.PipelineQueued,
				Events: []Event{warning("Displaced", "Schedule",
					"phase train: node n2 can no longer hold its reserved workers: pod web/x, which phasegang does not manage, took the capacity (short by cpu: 1); no other node fits worker 1; gang released and queued again")},
			}},
		},
		// Preempted to give borrowed quota back to its lender: the
		// same attempt queued again, like a lost node, with who and why.
		"a Preempted release queues the same attempt again": {
			pts: []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("train", 2).Desired(4).Status(runningOn("n1", "n2")).Obj()},
			plan: engine.Plan{Releases: []engine.Release{{Gang: gang("job", "train"), Reason: engine.ReleasePreempted,
				Message: "preempted: queue team-b reclaims the nvidia.com/gpu its cohort research borrowed for b/eval/train"}}},
			want: map[string]wantChange{"ns/job": {
				Phases: []v1alpha1.PhaseStatus{{
					Name: "train", State: v1alpha1.PhaseQueued,
					Message:    "preempted: queue team-b reclaims the nvidia.com/gpu its cohort research borrowed for b/eval/train; the gang was released and queued again",
					Workers:    v1alpha1.WorkerCounts{Min: 2, Desired: 4},
					QueuedTime: &stamp,
					History: []v1alpha1.PhaseEvent{{Time: stamp, Type: v1alpha1.PhaseEventPreempted,
						Message: "preempted: queue team-b reclaims the nvidia.com/gpu its cohort research borrowed for b/eval/train"}},
				}},
				Conditions: queuedConds("queued: train"),
				State:      v1alpha1.PipelineQueued,
				Events: []Event{warning("Preempted", "Schedule",
					"phase train: preempted: queue team-b reclaims the nvidia.com/gpu its cohort research borrowed for b/eval/train; gang released and queued again")},
			}},
		},
		"a Move gives the moved workers their new nodes and keeps the rest": {
			pts: []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("train", 2).Desired(4).Status(runningOn("n1", "n2")).Obj()},
			plan: engine.Plan{Moves: []engine.Move{{Gang: gang("job", "train"), Reason: engine.MoveDisplaced,
				Workers: []engine.MovedWorker{{Index: 1, From: "n2", To: "n3"}}, Message: "node n2 can no longer hold its reserved workers; moved worker 1 to n3"}}},
			want: map[string]wantChange{"ns/job": {
				Phases: func() []v1alpha1.PhaseStatus {
					ps := runningOn("n1", "n3")
					ps.History = []v1alpha1.PhaseEvent{{Time: stamp, Type: v1alpha1.PhaseEventMoved, Workers: 2, Message: "node n2 can no longer hold its reserved workers; moved worker 1 to n3"}}
					return []v1alpha1.PhaseStatus{ps}
				}(),
				Conditions: runningConds("running: train on 2 workers"),
				State:      v1alpha1.PipelineRunning,
				Events:     []Event{warning("WorkersMoved", "Schedule", "phase train: node n2 can no longer hold its reserved workers; moved worker 1 to n3")},
			}},
		},
		"a refused worker that stays is said once": {
			pts:  []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("train", 2).Desired(4).Status(runningOn("n1", "n2")).Obj()},
			plan: engine.Plan{Refused: []engine.Refusal{{Gang: gang("job", "train"), Index: 1, Node: "n2", Message: "kube-scheduler refused worker 1 on node n2 (Unschedulable: no); no other node fits it now, so it stays reserved there"}}},
			want: map[string]wantChange{"ns/job": {
				Phases: func() []v1alpha1.PhaseStatus {
					ps := runningOn("n1", "n2")
					ps.History = []v1alpha1.PhaseEvent{{Time: stamp, Type: v1alpha1.PhaseEventRefused, Workers: 2,
						Message: "kube-scheduler refused worker 1 on node n2 (Unschedulable: no); no other node fits it now, so it stays reserved there"}}
					return []v1alpha1.PhaseStatus{ps}
				}(),
				Conditions: runningConds("running: train on 2 workers"),
				State:      v1alpha1.PipelineRunning,
				Events: []Event{warning("WorkerRefused", "Schedule",
					"phase train: kube-scheduler refused worker 1 on node n2 (Unschedulable: no); no other node fits it now, so it stays reserved there")},
			}},
		},
		"a refused worker already said is not said again": {
			pts: []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("train", 2).Desired(4).Status(func() v1alpha1.PhaseStatus {
				ps := runningOn("n1", "n2")
				ps.History = []v1alpha1.PhaseEvent{{Time: stamp, Type: v1alpha1.PhaseEventRefused, Workers: 2, Message: "kube-scheduler refused worker 1"}}
				return ps
			}()).Obj()},
			plan: engine.Plan{Refused: []engine.Refusal{{Gang: gang("job", "train"), Index: 1, Node: "n2", Message: "kube-scheduler refused worker 1"}}},
		},
		"a requested release is the reconciler's to carry out": {
			pts:  []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("train", 2).Desired(4).Status(runningOn("n1", "n2")).Obj()},
			plan: engine.Plan{Releases: []engine.Release{{Gang: gang("job", "train"), Reason: engine.ReleaseRequested}}},
		},
		"Waiting writes what a queued gang waits for": {
			pts:  []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("train", 2).Status(wrappers.Queued("train")).Obj()},
			plan: engine.Plan{Waiting: []engine.Wait{wait}},
			want: map[string]wantChange{"ns/job": {
				Phases:     []v1alpha1.PhaseStatus{{Name: "train", State: v1alpha1.PhaseQueued, WaitingFor: wait.Message()}},
				Conditions: queuedConds("train " + wait.Message()),
				State:      v1alpha1.PipelineQueued,
			}},
		},
		// Every write costs the API server; an unchanged explanation is
		// not written again.
		"an unchanged Waiting does not touch the pipeline": {
			pts: []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("train", 2).Status(func() v1alpha1.PhaseStatus {
				ps := wrappers.Queued("train")
				ps.WaitingFor = wait.Message()
				return ps
			}()).Obj()},
			plan: engine.Plan{Waiting: []engine.Wait{wait}},
		},
		"an Infeasible queued phase marks the pipeline Infeasible": {
			pts:  []*v1alpha1.PhasedTraining{trainEval().Status(wrappers.Queued("train")).Obj()},
			plan: engine.Plan{Infeasible: []engine.Infeasible{{Gang: gang("job", "train"), Message: never}}},
			want: map[string]wantChange{"ns/job": {
				Phases:     []v1alpha1.PhaseStatus{{Name: "train", State: v1alpha1.PhaseQueued, WaitingFor: "never fits: " + never}},
				Conditions: infeasibleConds("phase train can never fit: " + never),
				State:      v1alpha1.PipelineInfeasible,
				Events:     []Event{warning(v1alpha1.ReasonGangNeverFits, "Schedule", "phase train can never fit: "+never)},
			}},
		},
		// The engine checks the phases a pipeline has not queued yet: one
		// that can never fit holds the whole pipeline back; the phases it
		// holds say so in their Wait.
		"an Infeasible upcoming phase marks the pipeline Infeasible naming that phase": {
			pts: []*v1alpha1.PhasedTraining{trainEval().Status(wrappers.Queued("train")).Obj()},
			plan: engine.Plan{
				Infeasible: []engine.Infeasible{{Gang: gang("job", "eval"), Message: never}},
				Waiting:    []engine.Wait{held},
			},
			want: map[string]wantChange{"ns/job": {
				Phases:     []v1alpha1.PhaseStatus{{Name: "train", State: v1alpha1.PhaseQueued, WaitingFor: held.Message()}},
				Conditions: infeasibleConds("phase eval can never fit: " + never + "; no phase of the pipeline runs until it can"),
				State:      v1alpha1.PipelineInfeasible,
				Events: []Event{warning(v1alpha1.ReasonGangNeverFits, "Schedule",
					"phase eval can never fit: "+never+"; no phase of the pipeline runs until it can")},
			}},
		},
		"of several Infeasible phases, the first is named": {
			pts: []*v1alpha1.PhasedTraining{trainEval().Phase("test", 1).DependsOn("eval").Status(wrappers.Queued("train")).Obj()},
			plan: engine.Plan{Infeasible: []engine.Infeasible{
				{Gang: gang("job", "test"), Message: "too big"}, {Gang: gang("job", "eval"), Message: never},
			}},
			want: map[string]wantChange{"ns/job": {
				// Only the gang that never fits writes its waitingFor;
				// the engine's Wait explains the others.
				Phases:     []v1alpha1.PhaseStatus{wrappers.Queued("train")},
				Conditions: infeasibleConds("phase test can never fit: too big; no phase of the pipeline runs until it can"),
				State:      v1alpha1.PipelineInfeasible,
				Events: []Event{warning(v1alpha1.ReasonGangNeverFits, "Schedule",
					"phase test can never fit: too big; no phase of the pipeline runs until it can")},
			}},
		},
		"a gang the demand does not know is ignored": {
			pts: []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("train", 2).Status(wrappers.Queued("train")).Obj()},
			plan: engine.Plan{
				Reserves: []engine.Reservation{{Gang: gang("gone", "train"), Workers: []engine.WorkerPlacement{{Index: 0, Node: "n1"}}}},
				Grows:    []engine.Reservation{{Gang: gang("gone", "train"), Workers: []engine.WorkerPlacement{{Index: 1, Node: "n1"}}}},
				Shrinks:  []engine.Shrink{{Gang: gang("gone", "train"), Workers: []engine.WorkerPlacement{{Index: 1, Node: "n1"}}}},
				Releases: []engine.Release{{Gang: gang("gone", "train"), Reason: engine.ReleaseNodeLost}},
				Waiting:  []engine.Wait{{Gang: gang("gone", "train")}},
			},
		},
		"several pipelines change independently": {
			pts: []*v1alpha1.PhasedTraining{
				wrappers.MakePT("a").Phase("train", 2).Status(wrappers.Queued("train")).Obj(),
				wrappers.MakePT("b").Phase("train", 2).Status(wrappers.Queued("train")).Obj(),
				wrappers.MakePT("c").Phase("train", 2).Status(wrappers.Queued("train")).Obj(),
			},
			plan: engine.Plan{
				Reserves: []engine.Reservation{{Gang: gang("a", "train"), Workers: []engine.WorkerPlacement{{Index: 0, Node: "n1"}, {Index: 1, Node: "n1"}}}},
				Waiting:  []engine.Wait{{Gang: gang("b", "train"), Reason: engine.WaitBackoff, NotBefore: now.Add(time.Minute)}},
			},
			want: map[string]wantChange{
				"ns/a": {
					Phases: []v1alpha1.PhaseStatus{{Name: "train", State: v1alpha1.PhaseStarting, Assignments: []string{"n1", "n1"},
						Reservation: map[string]int32{"n1": 2}, Workers: v1alpha1.WorkerCounts{Min: 2, Desired: 2, Granted: 2}, ReservedTime: &stamp,
						History: []v1alpha1.PhaseEvent{{Time: stamp, Type: v1alpha1.PhaseEventReserved, Workers: 2}}}},
					Conditions: append(startingConds("starting: train: 0 of 2 workers running (it runs at 2)"),
						condGen(1, v1alpha1.ConditionInfeasible, false, v1alpha1.ReasonGangReserved, "the gang fits")),
					State: v1alpha1.PipelineStarting, // reserved at once: no Event
				},
				"ns/b": {
					Phases:     []v1alpha1.PhaseStatus{{Name: "train", State: v1alpha1.PhaseQueued, WaitingFor: "backing off after a start timeout until 04:05:05"}},
					Conditions: queuedConds("train backing off after a start timeout until 04:05:05"),
					State:      v1alpha1.PipelineQueued,
				},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := make([]*v1alpha1.PhasedTraining, len(tc.pts))
			for i, pt := range tc.pts {
				before[i] = pt.DeepCopy()
			}
			changes := Changes{}
			ApplyPlan(tc.plan, demandOf(tc.pts...), now, changes)
			checkChanges(t, tc.want, changes)
			// The pipelines are the cache's: read, never written.
			for i := range tc.pts {
				if d := cmp.Diff(before[i], tc.pts[i]); d != "" {
					t.Errorf("ApplyPlan changed pipeline %s (-before +after):\n%s", tc.pts[i].Name, d)
				}
			}
		})
	}
}

// after is pt with the status a cycle's change gave it.
func after(t *testing.T, pt *v1alpha1.PhasedTraining, changes Changes) *v1alpha1.PhasedTraining {
	t.Helper()
	c, ok := changes[pt.Namespace+"/"+pt.Name]
	if !ok {
		t.Fatalf("%s did not change", pt.Name)
	}
	next := pt.DeepCopy()
	next.Status = *c.Status
	return next
}

// A pipeline's Infeasible condition follows the plans: set once, left
// alone while the plan says the same, lifted when the plan no longer
// lists the phase (nodes were added).
func TestApplyPlanInfeasibleLifecycle(t *testing.T) {
	held := engine.Wait{Gang: gang("job", "train"), Reason: engine.WaitPipelineCannotFinish, Min: 2}
	tests := map[string]engine.Plan{
		"queued phase": {Infeasible: []engine.Infeasible{{Gang: gang("job", "train"), Message: "too big"}}},
		// The phase it holds back waits too, and says why.
		"upcoming phase": {Infeasible: []engine.Infeasible{{Gang: gang("job", "eval"), Message: "too big"}}, Waiting: []engine.Wait{held}},
	}
	for name, infeasible := range tests {
		t.Run(name, func(t *testing.T) {
			pt := wrappers.MakePT("job").Phase("train", 2).Phase("eval", 16).DependsOn("train").Status(wrappers.Queued("train")).Obj()

			changes := Changes{}
			ApplyPlan(infeasible, demandOf(pt), now, changes)
			pt = after(t, pt, changes)
			if pt.Status.State != v1alpha1.PipelineInfeasible {
				t.Fatalf("state after the first plan = %s, want Infeasible", pt.Status.State)
			}

			changes = Changes{}
			ApplyPlan(infeasible, demandOf(pt), now.Add(time.Second), changes)
			if len(changes) != 0 {
				t.Errorf("an unchanged Infeasible touched the pipeline: %+v", changes[changes.Keys()[0]].Status)
			}

			// The engine explains the queued gang's wait as for any other.
			wait := engine.Wait{Gang: gang("job", "train"), Reason: engine.WaitCapacity, Min: 2, Footprint: engine.ResourceList{"cpu": 1000}}
			changes = Changes{}
			ApplyPlan(engine.Plan{Waiting: []engine.Wait{wait}}, demandOf(pt), now.Add(2*time.Second), changes)
			pt = after(t, pt, changes)
			want := append(queuedConds("train "+wait.Message()),
				condGen(1, v1alpha1.ConditionInfeasible, false, v1alpha1.ReasonWaitingForCapacity, "the gang fits the cluster now"))
			if d := cmp.Diff(want, pt.Status.Conditions, condOpts); d != "" {
				t.Errorf("conditions once the phase fits (-want +got):\n%s", d)
			}
			if pt.Status.State != v1alpha1.PipelineQueued {
				t.Errorf("state once the phase fits = %s, want Queued", pt.Status.State)
			}
			if evs := changes["ns/job"].Events; len(evs) != 0 {
				t.Errorf("lifting Infeasible recorded events: %+v", evs)
			}
		})
	}
}

// The queued attempt a lost node leaves is the same gang, and keeps the
// pipeline's age: it does not go to the back of the queue.
func TestApplyPlanNodeLostKeepsThePipelinesPlace(t *testing.T) {
	ps := wrappers.Attempt(wrappers.Running("train", "n1", "n2"), 1, 2)
	pt := wrappers.MakePT("job").Phase("train", 2).Status(ps).Obj()
	key := GangKey(pt, &ps)
	changes := Changes{}
	ApplyPlan(engine.Plan{Releases: []engine.Release{{Gang: key, Reason: engine.ReleaseNodeLost, Message: "node n1 is gone"}}}, demandOf(pt), now, changes)
	d := demandOf(after(t, pt, changes))
	if len(d.Ledger) != 0 || len(d.Queue) != 1 {
		t.Fatalf("after the release: ledger %d, queue %d; want 0, 1", len(d.Ledger), len(d.Queue))
	}
	if r := d.Queue[0]; r.Gang != key || !r.Created.Equal(wrappers.T0) {
		t.Errorf("requeued as %v created %v; want %v created %v", r.Gang, r.Created, key, wrappers.T0)
	}
}

// A grant's status write carries the conditions Advance derives, so the
// reconcile that picks it up writes no status and goes straight to
// creating the pods.
func TestReserveCarriesAdvancesConditions(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("train", 2).Generation(1, 0).Obj()
	pl := wrappers.Compiled(t, Compile, pt)
	pt.Status = *Advance(pl, pt, nil, now).Status
	if len(pt.Status.Phases) != 1 || pt.Status.Phases[0].State != v1alpha1.PhaseQueued {
		t.Fatalf("setup: want train queued, got %+v", pt.Status.Phases)
	}
	changes := Changes{}
	ApplyPlan(engine.Plan{Reserves: []engine.Reservation{{Gang: gang("job", "train"),
		Workers: []engine.WorkerPlacement{{Index: 0, Node: "n1"}, {Index: 1, Node: "n2"}}}}}, demandOf(pt), now, changes)
	pt = after(t, pt, changes)
	// Starting, not Running: no worker runs yet.
	if pt.Status.State != v1alpha1.PipelineStarting {
		t.Errorf("state after the grant = %s, want Starting", pt.Status.State)
	}
	next := Advance(pl, pt, Observe(pl, &pt.Status, nil, now.Add(time.Second)), now.Add(time.Second))
	if d := cmp.Diff(&pt.Status, next.Status); d != "" {
		t.Errorf("the step after a grant changes the status (-granted +next):\n%s", d)
	}
}

func TestSetReservation(t *testing.T) {
	tests := map[string]struct {
		assignments []string
		prior       map[string]int32
		want        map[string]int32
	}{
		"none":                  {want: map[string]int32{}},
		"one node":              {assignments: []string{"n1", "n1"}, want: map[string]int32{"n1": 2}},
		"several nodes":         {assignments: []string{"n2", "n1", "n2", "n3"}, want: map[string]int32{"n1": 1, "n2": 2, "n3": 1}},
		"stale entries dropped": {assignments: []string{"n1"}, prior: map[string]int32{"gone": 4, "n1": 9}, want: map[string]int32{"n1": 1}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ps := &v1alpha1.PhaseStatus{Assignments: tc.assignments, Reservation: tc.prior,
				Workers: v1alpha1.WorkerCounts{Min: 1, Desired: 5, Granted: 7, Running: 3}}
			setReservation(ps)
			if d := cmp.Diff(tc.want, ps.Reservation); d != "" {
				t.Errorf("reservation (-want +got):\n%s", d)
			}
			want := v1alpha1.WorkerCounts{Min: 1, Desired: 5, Granted: int32(len(tc.assignments)), Running: 3}
			if d := cmp.Diff(want, ps.Workers); d != "" {
				t.Errorf("workers (-want +got):\n%s", d)
			}
		})
	}
}

func TestReservationText(t *testing.T) {
	tests := map[string]struct {
		in   map[string]int32
		want string
	}{
		"empty":          {nil, ""},
		"one":            {map[string]int32{"n1": 2}, "n1×2"},
		"sorted by node": {map[string]int32{"n2": 1, "a": 3, "n10": 4}, "a×3, n10×4, n2×1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := reservationText(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
