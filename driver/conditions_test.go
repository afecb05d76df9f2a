package driver

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
	"github.com/phasegang/phasegang/phases"
)

var summaryConds = []v1alpha1.ConditionType{
	v1alpha1.ConditionQueued, v1alpha1.ConditionStarting, v1alpha1.ConditionRunning, v1alpha1.ConditionSucceeded,
	v1alpha1.ConditionFailed, v1alpha1.ConditionInfeasible, v1alpha1.ConditionInvalid,
}

func trueConds(conds []metav1.Condition) []string {
	var out []string
	for _, c := range summaryConds {
		if meta.IsStatusConditionTrue(conds, string(c)) {
			out = append(out, string(c))
		}
	}
	return out
}

// cond is a condition as set for generation 4 (the conditions tests').
func cond(t v1alpha1.ConditionType, on bool, reason, msg string) metav1.Condition {
	return condGen(4, t, on, reason, msg)
}

// condGen is a condition as setCondition sets it for generation gen.
func condGen(gen int64, t v1alpha1.ConditionType, on bool, reason, msg string) metav1.Condition {
	s := metav1.ConditionFalse
	if on {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: string(t), Status: s, Reason: reason, Message: msg, ObservedGeneration: gen}
}

// condOpts compare conditions whatever their order and transition time.
var condOpts = cmp.Options{
	cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime"),
	cmpopts.SortSlices(func(a, b metav1.Condition) bool { return a.Type < b.Type }),
}

func TestSetStepConditions(t *testing.T) {
	waitingQ := wrappers.Attempt(wrappers.Queued("b"), 0, 1)
	waitingQ.WaitingFor = "needs 2 × {cpu: 1} at once"
	tests := map[string]struct {
		prior  []metav1.Condition
		phases []v1alpha1.PhaseStatus
		step   phases.Step
		want   []metav1.Condition
		state  v1alpha1.PipelineState
	}{
		"running phases listed; a queued one alongside is not Queued": {
			phases: []v1alpha1.PhaseStatus{
				wrappers.Running("train", "n1", "n2"), wrappers.Attempt(wrappers.Running("eval", "n1"), 2, 1), waitingQ,
				{Name: "done", State: v1alpha1.PhaseSucceeded, Assignments: []string{"n1"}},
			},
			step: phases.Step{State: v1alpha1.PipelineRunning},
			want: []metav1.Condition{
				cond(v1alpha1.ConditionRunning, true, v1alpha1.ReasonPhaseRunning, "running: train on 2 workers, eval (iteration 2) (attempt 1) on 1 workers"),
				cond(v1alpha1.ConditionQueued, false, v1alpha1.ReasonPhaseRunning, v1alpha1.ReasonPhaseRunning),
			},
			state: v1alpha1.PipelineRunning,
		},
		"queued only: the first waitingFor explains": {
			phases: []v1alpha1.PhaseStatus{wrappers.Queued("a"), waitingQ, {Name: "c", State: v1alpha1.PhaseQueued, WaitingFor: "later"}},
			step:   phases.Step{State: v1alpha1.PipelineRunning},
			want: []metav1.Condition{
				cond(v1alpha1.ConditionRunning, false, v1alpha1.ReasonWaitingForCapacity, "no phase is running"),
				cond(v1alpha1.ConditionQueued, true, v1alpha1.ReasonWaitingForCapacity, "b (attempt 1) needs 2 × {cpu: 1} at once"),
			},
			state: v1alpha1.PipelineQueued,
		},
		"queued only, nothing explained yet: the queued phases are listed": {
			prior:  []metav1.Condition{cond(v1alpha1.ConditionRunning, true, v1alpha1.ReasonPhaseRunning, "running: x")},
			phases: []v1alpha1.PhaseStatus{wrappers.Queued("a"), wrappers.Attempt(wrappers.Queued("b"), 3, 0), {Name: "p", State: v1alpha1.PhasePending}},
			step:   phases.Step{State: v1alpha1.PipelineRunning},
			want: []metav1.Condition{
				cond(v1alpha1.ConditionRunning, false, v1alpha1.ReasonWaitingForCapacity, "no phase is running"),
				cond(v1alpha1.ConditionQueued, true, v1alpha1.ReasonWaitingForCapacity, "queued: a, b (iteration 3)"),
			},
			state: v1alpha1.PipelineQueued,
		},
		"nothing queued or running: Pending": {
			phases: []v1alpha1.PhaseStatus{{Name: "p", State: v1alpha1.PhasePending}, wrappers.Running("noassign")},
			step:   phases.Step{State: v1alpha1.PipelineRunning},
			want: []metav1.Condition{
				cond(v1alpha1.ConditionRunning, true, v1alpha1.ReasonPhaseRunning, "running: noassign on 0 workers"),
				cond(v1alpha1.ConditionQueued, false, v1alpha1.ReasonPhaseRunning, v1alpha1.ReasonPhaseRunning),
			},
			state: v1alpha1.PipelineRunning,
		},
		"no phases at all": {
			step: phases.Step{State: v1alpha1.PipelineRunning},
			want: []metav1.Condition{
				cond(v1alpha1.ConditionRunning, false, v1alpha1.ReasonWaitingForCapacity, "no phase is running"),
				cond(v1alpha1.ConditionQueued, false, v1alpha1.ReasonPhaseRunning, v1alpha1.ReasonPhaseRunning),
			},
			state: v1alpha1.PipelinePending,
		},
		"succeeded turns Running and Queued off": {
			prior: []metav1.Condition{
				cond(v1alpha1.ConditionRunning, true, v1alpha1.ReasonPhaseRunning, "running: x"),
				cond(v1alpha1.ConditionQueued, true, v1alpha1.ReasonWaitingForCapacity, "queued: y"),
			},
			phases: []v1alpha1.PhaseStatus{{Name: "a", State: v1alpha1.PhaseSucceeded}},
			step:   phases.Step{State: v1alpha1.PipelineSucceeded, Message: "all 1 phases ended"},
			want: []metav1.Condition{
				cond(v1alpha1.ConditionSucceeded, true, v1alpha1.ReasonAllPhasesEnded, "all 1 phases ended"),
				cond(v1alpha1.ConditionRunning, false, v1alpha1.ReasonAllPhasesEnded, v1alpha1.ReasonAllPhasesEnded),
				cond(v1alpha1.ConditionQueued, false, v1alpha1.ReasonAllPhasesEnded, v1alpha1.ReasonAllPhasesEnded),
			},
			state: v1alpha1.PipelineSucceeded,
		},
		"succeeded without a message uses the reason": {
			step: phases.Step{State: v1alpha1.PipelineSucceeded},
			want: []metav1.Condition{
				cond(v1alpha1.ConditionSucceeded, true, v1alpha1.ReasonAllPhasesEnded, v1alpha1.ReasonAllPhasesEnded),
				cond(v1alpha1.ConditionRunning, false, v1alpha1.ReasonAllPhasesEnded, v1alpha1.ReasonAllPhasesEnded),
				cond(v1alpha1.ConditionQueued, false, v1alpha1.ReasonAllPhasesEnded, v1alpha1.ReasonAllPhasesEnded),
			},
			state: v1alpha1.PipelineSucceeded,
		},
		"failed with the step's reason, even with phases still Running": {
			prior:  []metav1.Condition{cond(v1alpha1.ConditionRunning, true, v1alpha1.ReasonPhaseRunning, "running: x")},
			phases: []v1alpha1.PhaseStatus{wrappers.Running("a", "n1")},
			step:   phases.Step{State: v1alpha1.PipelineFailed, Reason: v1alpha1.ReasonPhaseTimedOut, Message: "a timed out"},
			want: []metav1.Condition{
				cond(v1alpha1.ConditionFailed, true, v1alpha1.ReasonPhaseTimedOut, "a timed out"),
				cond(v1alpha1.ConditionRunning, false, v1alpha1.ReasonPhaseTimedOut, v1alpha1.ReasonPhaseTimedOut),
				cond(v1alpha1.ConditionQueued, false, v1alpha1.ReasonPhaseTimedOut, v1alpha1.ReasonPhaseTimedOut),
			},
			state: v1alpha1.PipelineFailed,
		},
		// An ended pipeline does not start: Starting goes False with the
		// reason it ended, so its outcome is the one True condition.
		"failed while Starting turns Starting off": {
			prior:  []metav1.Condition{cond(v1alpha1.ConditionStarting, true, v1alpha1.ReasonGangStarting, "starting: a: 0 of 1 workers running (it runs at 1)")},
			phases: []v1alpha1.PhaseStatus{{Name: "a", State: v1alpha1.PhaseFailed}},
			step:   phases.Step{State: v1alpha1.PipelineFailed, Reason: v1alpha1.ReasonStartFailed, Message: "a did not start"},
			want: []metav1.Condition{
				cond(v1alpha1.ConditionFailed, true, v1alpha1.ReasonStartFailed, "a did not start"),
				cond(v1alpha1.ConditionStarting, false, v1alpha1.ReasonStartFailed, v1alpha1.ReasonStartFailed),
				cond(v1alpha1.ConditionRunning, false, v1alpha1.ReasonStartFailed, v1alpha1.ReasonStartFailed),
				cond(v1alpha1.ConditionQueued, false, v1alpha1.ReasonStartFailed, v1alpha1.ReasonStartFailed),
			},
			state: v1alpha1.PipelineFailed,
		},
		"succeeded after Starting turns Starting off": {
			prior:  []metav1.Condition{cond(v1alpha1.ConditionStarting, false, v1alpha1.ReasonPhaseRunning, v1alpha1.ReasonPhaseRunning)},
			phases: []v1alpha1.PhaseStatus{{Name: "a", State: v1alpha1.PhaseSucceeded}},
			step:   phases.Step{State: v1alpha1.PipelineSucceeded, Message: "all 1 phases ended"},
			want: []metav1.Condition{
				cond(v1alpha1.ConditionSucceeded, true, v1alpha1.ReasonAllPhasesEnded, "all 1 phases ended"),
				cond(v1alpha1.ConditionStarting, false, v1alpha1.ReasonAllPhasesEnded, v1alpha1.ReasonAllPhasesEnded),
				cond(v1alpha1.ConditionRunning, false, v1alpha1.ReasonAllPhasesEnded, v1alpha1.ReasonAllPhasesEnded),
				cond(v1alpha1.ConditionQueued, false, v1alpha1.ReasonAllPhasesEnded, v1alpha1.ReasonAllPhasesEnded),
			},
			state: v1alpha1.PipelineSucceeded,
		},
		"failed without a reason is PhaseFailed": {
			step: phases.Step{State: v1alpha1.PipelineFailed, Message: "a failed"},
			want: []metav1.Condition{
				cond(v1alpha1.ConditionFailed, true, v1alpha1.ReasonPhaseFailed, "a failed"),
				cond(v1alpha1.ConditionRunning, false, v1alpha1.ReasonPhaseFailed, v1alpha1.ReasonPhaseFailed),
				cond(v1alpha1.ConditionQueued, false, v1alpha1.ReasonPhaseFailed, v1alpha1.ReasonPhaseFailed),
			},
			state: v1alpha1.PipelineFailed,
		},
		"other conditions are left alone": {
			prior:  []metav1.Condition{cond(v1alpha1.ConditionInvalid, false, v1alpha1.ReasonSpecInvalid, "the spec is valid")},
			phases: []v1alpha1.PhaseStatus{wrappers.Running("a", "n1")},
			step:   phases.Step{State: v1alpha1.PipelineRunning},
			want: []metav1.Condition{
				cond(v1alpha1.ConditionInvalid, false, v1alpha1.ReasonSpecInvalid, "the spec is valid"),
				cond(v1alpha1.ConditionRunning, true, v1alpha1.ReasonPhaseRunning, "running: a on 1 workers"),
				cond(v1alpha1.ConditionQueued, false, v1alpha1.ReasonPhaseRunning, v1alpha1.ReasonPhaseRunning),
			},
			state: v1alpha1.PipelineRunning,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			st := &v1alpha1.PhasedTrainingStatus{Conditions: append([]metav1.Condition(nil), tc.prior...), Phases: tc.phases}
			phasesBefore := append([]v1alpha1.PhaseStatus(nil), tc.phases...)
			setStepConditions(st, tc.step, 4)
			if d := cmp.Diff(tc.want, st.Conditions, condOpts); d != "" {
				t.Errorf("conditions (-want +got):\n%s", d)
			}
			if got := v1alpha1.StateFromConditions(st.Conditions); got != tc.state {
				t.Errorf("StateFromConditions = %s, want %s", got, tc.state)
			}
			if on := trueConds(st.Conditions); len(on) > 1 {
				t.Errorf("several summary conditions True: %v", on)
			}
			for _, c := range st.Conditions {
				if c.Message == "" || c.Reason == "" {
					t.Errorf("condition %s has an empty reason or message", c.Type)
				}
			}
			if d := cmp.Diff(phasesBefore, st.Phases, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("setStepConditions changed the phases:\n%s", d)
			}
		})
	}
}

// setStepConditions keeps the transition time of a condition whose status does
// not change.
func TestSetStepConditionsKeepsTransitionTime(t *testing.T) {
	old := cond(v1alpha1.ConditionRunning, true, v1alpha1.ReasonPhaseRunning, "running: a on 1 workers")
	old.LastTransitionTime = metav1.NewTime(wrappers.T0)
	st := &v1alpha1.PhasedTrainingStatus{Conditions: []metav1.Condition{old}, Phases: []v1alpha1.PhaseStatus{wrappers.Running("a", "n1", "n2")}}
	setStepConditions(st, phases.Step{State: v1alpha1.PipelineRunning}, 5)
	c := meta.FindStatusCondition(st.Conditions, string(v1alpha1.ConditionRunning))
	if !c.LastTransitionTime.Time.Equal(wrappers.T0) || c.Message != "running: a on 2 workers" || c.ObservedGeneration != 5 {
		t.Errorf("running condition = %+v", c)
	}
}

// The API documents that at most one of Queued, Running, Succeeded,
// Failed, Infeasible and Invalid is True (phasedtraining_types.go:382).
// The scheduler sets Infeasible=True on a queued gang that never fits;
// setStepConditions must not set Queued=True beside it.
func TestSetStepConditionsExclusiveWithInfeasible(t *testing.T) {
	tests := map[string]phases.Step{
		"queued":    {State: v1alpha1.PipelineRunning},
		"failed":    {State: v1alpha1.PipelineFailed, Message: "x"},
		"succeeded": {State: v1alpha1.PipelineSucceeded},
	}
	for name, step := range tests {
		t.Run(name, func(t *testing.T) {
			st := &v1alpha1.PhasedTrainingStatus{
				Conditions: []metav1.Condition{cond(v1alpha1.ConditionInfeasible, true, v1alpha1.ReasonGangNeverFits, "phase a can never fit")},
				Phases:     []v1alpha1.PhaseStatus{wrappers.Queued("a")},
			}
			setStepConditions(st, step, 1)
			if on := trueConds(st.Conditions); len(on) > 1 {
				t.Errorf("several summary conditions True: %v", on)
			}
		})
	}
}

// reasonColumn is kubectl get -o wide's Reason: the printer column
// .status.conditions[?(@.status=="True")].reason shows the first True
// condition's reason (test/crd checks it with the API server's own table
// converter).
func reasonColumn(conds []metav1.Condition) string {
	for _, c := range conds {
		if c.Status == metav1.ConditionTrue {
			return c.Reason
		}
	}
	return ""
}

// A gang that never starts fails its pipeline after its start failures;
// the pipeline, which was Starting, then says Failed only: Starting is
// False with the failure's reason, and the Reason column shows it.
func TestFailedAfterStartingIsNotStarting(t *testing.T) {
	ps := wrappers.Starting("train", "n1", "n2")
	ps.ReservedTime = wrappers.Time(now.Add(-2 * time.Minute))
	pt := wrappers.MakePT("job").Phase("train", 2).StartTimeout(time.Minute).StartBackoffLimit(0).Status(ps).Obj()
	pl := wrappers.Compiled(t, Compile, pt)
	waiting := Observations{{Name: "train"}: {Observation: phases.Observation{Granted: 2}, Waiting: `worker 0: Unschedulable: 0/1 nodes are available: persistentvolumeclaim "ckpt" not found.`}}

	// Within its start timeout: Starting.
	adv := Advance(pl, pt, waiting, ps.ReservedTime.Add(30*time.Second))
	if adv.Status.State != v1alpha1.PipelineStarting || reasonColumn(adv.Status.Conditions) != v1alpha1.ReasonGangStarting {
		t.Fatalf("before the start timeout: state %s, reason %q; want Starting, %s", adv.Status.State, reasonColumn(adv.Status.Conditions), v1alpha1.ReasonGangStarting)
	}
	pt.Status = *adv.Status

	// Past it, with no start failure left: Failed, and nothing else.
	adv = Advance(pl, pt, waiting, now)
	st := adv.Status
	if st.State != v1alpha1.PipelineFailed {
		t.Fatalf("state = %s, want Failed; phases %v", st.State, phaseLines(st))
	}
	if on := trueConds(st.Conditions); len(on) != 1 || on[0] != string(v1alpha1.ConditionFailed) {
		t.Errorf("True conditions %v, want only Failed", on)
	}
	if c := meta.FindStatusCondition(st.Conditions, string(v1alpha1.ConditionStarting)); c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonStartFailed {
		t.Errorf("Starting = %+v, want False with reason %s", c, v1alpha1.ReasonStartFailed)
	}
	if got := reasonColumn(st.Conditions); got != v1alpha1.ReasonStartFailed {
		t.Errorf("Reason column = %q, want %s", got, v1alpha1.ReasonStartFailed)
	}
}

func TestPhaseLabel(t *testing.T) {
	tests := map[string]struct {
		ps   v1alpha1.PhaseStatus
		want string
	}{
		"plain":     {wrappers.Queued("train"), "train"},
		"iteration": {wrappers.Attempt(wrappers.Queued("train"), 2, 0), "train (iteration 2)"},
		"attempt":   {wrappers.Attempt(wrappers.Queued("train"), 0, 1), "train (attempt 1)"},
		"both":      {wrappers.Attempt(wrappers.Queued("train"), 2, 1), "train (iteration 2) (attempt 1)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := PhaseLabel(&tc.ps); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
