package controllers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/phases"
)

func compilePT(t *testing.T, pt *v1alpha1.PhasedTraining) *phases.Pipeline {
	t.Helper()
	c := pt.DeepCopy()
	v1alpha1.SetDefaults(c)
	pl, errs := phases.Compile(c)
	if len(errs) > 0 {
		t.Fatalf("fixture does not compile: %v", errs)
	}
	return pl
}

// observed is what a test asserts of one phase status after observe.
type observed struct {
	Workers   v1alpha1.WorkerCounts
	StartTime *metav1.Time
}

func TestObserve(t *testing.T) {
	spec := func() *ptBuilder {
		return makePT("job").phase("train", 1).desired(4).outputs("loss", "acc", "note").phase("eval", 1)
	}
	r4 := running("train", "n1", "n2", "n3", "n4")
	r2 := running("train", "n1", "n2")
	trainIn := phases.Instance{Name: "train"}
	tests := map[string]struct {
		status []v1alpha1.PhaseStatus
		pods   func(pt *v1alpha1.PhasedTraining) []corev1.Pod
		want   phases.Observations
		// wantStatus[i] is status.phases[i] after observe; nil: unchanged.
		wantStatus []*observed
	}{
		"counts per pod phase; chief succeeded; not all started": {
			status: []v1alpha1.PhaseStatus{r4},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{
					workerPodOf(pt, r4, 0, "n1", corev1.PodSucceeded),
					workerPodOf(pt, r4, 1, "n2", corev1.PodRunning),
					workerPodOf(pt, r4, 2, "n3", corev1.PodFailed),
					workerPodOf(pt, r4, 3, "n4", corev1.PodPending),
				}
			},
			want:       phases.Observations{trainIn: {Granted: 4, Running: 1, Succeeded: 1, Failed: 1, ChiefSucceeded: true}},
			wantStatus: []*observed{{Workers: v1alpha1.WorkerCounts{Running: 1, Succeeded: 1, Failed: 1}}},
		},
		"chief failed; every worker started stamps StartTime": {
			status: []v1alpha1.PhaseStatus{r2},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{workerPodOf(pt, r2, 0, "n1", corev1.PodFailed), workerPodOf(pt, r2, 1, "n2", corev1.PodRunning)}
			},
			want:       phases.Observations{trainIn: {Granted: 2, Running: 1, Failed: 1, ChiefFailed: true}},
			wantStatus: []*observed{{Workers: v1alpha1.WorkerCounts{Running: 1, Failed: 1}, StartTime: mt(now)}},
		},
		"StartTime is when the last worker's containers started": {
			status: []v1alpha1.PhaseStatus{r2},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				p0 := workerPodOf(pt, r2, 0, "n1", corev1.PodSucceeded)
				p0.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
					Terminated: &corev1.ContainerStateTerminated{StartedAt: *mt(t0.Add(3 * time.Second))}}}}
				p1 := workerPodOf(pt, r2, 1, "n2", corev1.PodRunning)
				p1.Status.ContainerStatuses = []corev1.ContainerStatus{
					{Name: "a", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *mt(t0.Add(5 * time.Second))}}},
					{Name: "b", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *mt(t0.Add(4 * time.Second))}}},
				}
				return []corev1.Pod{p0, p1}
			},
			want:       phases.Observations{trainIn: {Granted: 2, Running: 1, Succeeded: 1, ChiefSucceeded: true}},
			wantStatus: []*observed{{Workers: v1alpha1.WorkerCounts{Running: 1, Succeeded: 1}, StartTime: mt(t0.Add(5 * time.Second))}},
		},
		"StartTime is stamped once": {
			status: func() []v1alpha1.PhaseStatus {
				ps := r2
				ps.StartTime = mt(t0)
				return []v1alpha1.PhaseStatus{ps}
			}(),
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{workerPodOf(pt, r2, 0, "n1", corev1.PodRunning), workerPodOf(pt, r2, 1, "n2", corev1.PodRunning)}
			},
			want:       phases.Observations{trainIn: {Granted: 2, Running: 2}},
			wantStatus: []*observed{{Workers: v1alpha1.WorkerCounts{Running: 2}, StartTime: mt(t0)}},
		},
		"counts replace the previous ones; Granted, Min, Desired untouched": {
			status: func() []v1alpha1.PhaseStatus {
				ps := r2
				ps.Workers = v1alpha1.WorkerCounts{Min: 1, Desired: 4, Granted: 2, Running: 7, Succeeded: 7, Failed: 7}
				return []v1alpha1.PhaseStatus{ps}
			}(),
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{workerPodOf(pt, r2, 1, "n2", corev1.PodSucceeded)}
			},
			want:       phases.Observations{trainIn: {Granted: 2, Succeeded: 1}},
			wantStatus: []*observed{{Workers: v1alpha1.WorkerCounts{Min: 1, Desired: 4, Granted: 2, Succeeded: 1}}},
		},
		"pods of indices beyond the assignments (shrunk away) are ignored": {
			status: []v1alpha1.PhaseStatus{r2},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{
					workerPodOf(pt, r2, 0, "n1", corev1.PodRunning), workerPodOf(pt, r2, 1, "n2", corev1.PodRunning),
					workerPodOf(pt, r2, 2, "n1", corev1.PodFailed), workerPodOf(pt, r2, 3, "n2", corev1.PodSucceeded),
				}
			},
			want:       phases.Observations{trainIn: {Granted: 2, Running: 2}},
			wantStatus: []*observed{{Workers: v1alpha1.WorkerCounts{Running: 2}, StartTime: mt(now)}},
		},
		"a pod bound to another node than reserved is ignored; an unbound one is read": {
			status: []v1alpha1.PhaseStatus{r2},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{workerPodOf(pt, r2, 0, "n9", corev1.PodRunning), workerPodOf(pt, r2, 1, "", corev1.PodFailed)}
			},
			want:       phases.Observations{trainIn: {Granted: 2, Failed: 1}},
			wantStatus: []*observed{{Workers: v1alpha1.WorkerCounts{Failed: 1}}},
		},
		"pods of other attempts and iterations are ignored": {
			status: []v1alpha1.PhaseStatus{
				withAttempt(v1alpha1.PhaseStatus{Name: "train", State: v1alpha1.PhaseFailed, Assignments: []string{"n1"}}, 0, 0),
				withAttempt(running("train", "n1"), 0, 1),
			},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{
					workerPodOf(pt, withAttempt(running("train", "n1"), 0, 0), 0, "n1", corev1.PodFailed),
					workerPodOf(pt, withAttempt(running("train", "n1"), 1, 1), 0, "n1", corev1.PodFailed),
					workerPodOf(pt, withAttempt(running("train", "n1"), 0, 1), 0, "n1", corev1.PodRunning),
				}
			},
			want:       phases.Observations{{Name: "train", Attempt: 1}: {Granted: 1, Running: 1}},
			wantStatus: []*observed{nil, {Workers: v1alpha1.WorkerCounts{Running: 1}, StartTime: mt(now)}},
		},
		"several running phases are observed separately": {
			status: []v1alpha1.PhaseStatus{r2, running("eval", "n3")},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{workerPodOf(pt, r2, 0, "n1", corev1.PodRunning), workerPodOf(pt, running("eval", "n3"), 0, "n3", corev1.PodSucceeded)}
			},
			want: phases.Observations{
				trainIn:        {Granted: 2, Running: 1},
				{Name: "eval"}: {Granted: 1, Succeeded: 1, ChiefSucceeded: true},
			},
			wantStatus: []*observed{{Workers: v1alpha1.WorkerCounts{Running: 1}}, {Workers: v1alpha1.WorkerCounts{Succeeded: 1}, StartTime: mt(now)}},
		},
		"queued, running-without-assignments and ended phases are not observed": {
			status: []v1alpha1.PhaseStatus{
				queued("train"),
				running("eval"),
				withAttempt(v1alpha1.PhaseStatus{Name: "train", State: v1alpha1.PhaseSucceeded, Assignments: []string{"n1"}}, 1, 0),
			},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{
					workerPodOf(pt, running("train", "n1"), 0, "n1", corev1.PodRunning),
					workerPodOf(pt, running("eval", "n1"), 0, "n1", corev1.PodRunning),
					workerPodOf(pt, withAttempt(running("train", "n1"), 1, 0), 0, "n1", corev1.PodSucceeded),
				}
			},
			want:       phases.Observations{},
			wantStatus: []*observed{nil, nil, nil},
		},
		"pods with unreadable labels are ignored": {
			status: []v1alpha1.PhaseStatus{r2},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				a := workerPodOf(pt, r2, 0, "n1", corev1.PodRunning)
				delete(a.Labels, driver.LabelWorker)
				b := workerPodOf(pt, r2, 1, "n2", corev1.PodRunning)
				b.Labels[driver.LabelAttempt] = "x"
				return []corev1.Pod{a, b}
			},
			want:       phases.Observations{trainIn: {Granted: 2}},
			wantStatus: []*observed{{}},
		},
		"outputs: declared keys, lowest index wins, failed workers too, numbers as JSON text": {
			status: []v1alpha1.PhaseStatus{r4},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				// Listed out of index order: the merge follows the index.
				return []corev1.Pod{
					workerPodOf(pt, r4, 3, "n4", corev1.PodSucceeded, `{"loss": 3, "acc": 0.3, "note": "three"}`),
					workerPodOf(pt, r4, 2, "n3", corev1.PodFailed, `{"note": "two", "acc": 0.5}`),
					workerPodOf(pt, r4, 1, "n2", corev1.PodSucceeded, `not json`),
					workerPodOf(pt, r4, 0, "n1", corev1.PodSucceeded, `{"loss": 0.25, "undeclared": 1}`),
				}
			},
			want: phases.Observations{trainIn: {
				Granted: 4, Succeeded: 3, Failed: 1, ChiefSucceeded: true,
				Outputs: map[string]string{"loss": "0.25", "acc": "0.5", "note": "two"},
			}},
			wantStatus: []*observed{{Workers: v1alpha1.WorkerCounts{Succeeded: 3, Failed: 1}, StartTime: mt(now)}},
		},
		"outputs of running workers and of undeclared phases are not read": {
			status: []v1alpha1.PhaseStatus{r2, running("eval", "n3")},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{
					workerPodOf(pt, r2, 0, "n1", corev1.PodRunning, `{"loss": 1}`),
					workerPodOf(pt, running("eval", "n3"), 0, "n3", corev1.PodSucceeded, `{"loss": 1}`),
				}
			},
			want: phases.Observations{
				trainIn:        {Granted: 2, Running: 1},
				{Name: "eval"}: {Granted: 1, Succeeded: 1, ChiefSucceeded: true},
			},
			wantStatus: []*observed{{Workers: v1alpha1.WorkerCounts{Running: 1}}, {Workers: v1alpha1.WorkerCounts{Succeeded: 1}, StartTime: mt(now)}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pt := spec().status(tc.status...).obj()
			pl := compilePT(t, pt)
			st := pt.Status.DeepCopy()
			before := st.DeepCopy()
			var pods []corev1.Pod
			if tc.pods != nil {
				pods = tc.pods(pt)
			}
			got := observe(pt, pl, st, pods, now)
			if d := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("observations (-want +got):\n%s", d)
			}
			if len(st.Phases) != len(tc.wantStatus) {
				t.Fatalf("status has %d phases, want %d", len(st.Phases), len(tc.wantStatus))
			}
			for i, w := range tc.wantStatus {
				if w == nil {
					if d := cmp.Diff(before.Phases[i], st.Phases[i]); d != "" {
						t.Errorf("phase %d changed (-before +after):\n%s", i, d)
					}
					continue
				}
				gotObs := observed{Workers: st.Phases[i].Workers, StartTime: st.Phases[i].StartTime}
				if d := cmp.Diff(*w, gotObs); d != "" {
					t.Errorf("phase %d (-want +got):\n%s", i, d)
				}
				// Nothing else of the phase status changes.
				b, a := before.Phases[i], st.Phases[i]
				b.Workers, b.StartTime, a.Workers, a.StartTime = v1alpha1.WorkerCounts{}, nil, v1alpha1.WorkerCounts{}, nil
				if d := cmp.Diff(b, a); d != "" {
					t.Errorf("phase %d: other fields changed (-before +after):\n%s", i, d)
				}
			}
			if d := cmp.Diff(before.Conditions, st.Conditions); d != "" {
				t.Errorf("conditions changed:\n%s", d)
			}
		})
	}
}

func terminated(msgs ...string) *corev1.Pod {
	p := &corev1.Pod{}
	for _, m := range msgs {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: m}},
		})
	}
	return p
}

func TestMergeOutputs(t *testing.T) {
	declared := []string{"s", "n", "f", "b", "z", "o", "l", "e"}
	tests := map[string]struct {
		in       map[string]string
		pod      *corev1.Pod
		declared []string
		want     map[string]string
	}{
		"nothing declared: nothing read": {
			pod: terminated(`{"s": "x"}`), want: nil,
		},
		"types rendered as JSON text, strings unquoted": {
			pod:      terminated(`{"s": "x y", "n": 42, "f": 0.125, "b": true, "z": null, "o": {"k": [1, "a"]}, "l": [1, 2], "e": -1e3, "other": 1}`),
			declared: declared,
			want: map[string]string{
				"s": "x y", "n": "42", "f": "0.125", "b": "true", "z": "null", "o": `{"k":[1,"a"]}`, "l": "[1,2]", "e": "-1e3",
			},
		},
		"keys already set are kept (a lower index wrote them)": {
			in:       map[string]string{"s": "first"},
			pod:      terminated(`{"s": "second", "n": 2}`),
			declared: declared,
			want:     map[string]string{"s": "first", "n": "2"},
		},
		"first container wins within a pod": {
			pod:      terminated(`{"s": "c0"}`, `{"s": "c1", "n": 1}`),
			declared: declared,
			want:     map[string]string{"s": "c0", "n": "1"},
		},
		"non-object, invalid and empty messages ignored": {
			pod:      terminated(``, `[1,2]`, `"s"`, `{"s": `, `logs: s=1`),
			declared: declared,
			want:     nil,
		},
		"surrounding whitespace is fine": {
			pod:      terminated("\n  {\"s\": \"v\"}\n"),
			declared: declared,
			want:     map[string]string{"s": "v"},
		},
		"running containers have no message": {
			pod: &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
				{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			}}},
			declared: declared,
			want:     nil,
		},
		"input map returned when nothing new": {
			in:       map[string]string{"s": "kept"},
			pod:      terminated(`{"x": 1}`),
			declared: declared,
			want:     map[string]string{"s": "kept"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := mergeOutputs(tc.in, tc.pod, tc.declared)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("outputs (-want +got):\n%s", d)
			}
		})
	}
}

// Numbers must come out as the JSON text the worker wrote: decoding them
// into float64 loses integers above 2^53.
func TestMergeOutputsKeepsIntegerPrecision(t *testing.T) {
	got := mergeOutputs(nil, terminated(`{"step": 9007199254740993, "id": 12345678901234567890}`), []string{"step", "id"})
	want := map[string]string{"step": "9007199254740993", "id": "12345678901234567890"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("outputs (-want +got):\n%s", d)
	}
}

func TestStopRemaining(t *testing.T) {
	end0 := mt(t0)
	in := []v1alpha1.PhaseStatus{
		{Name: "a", State: v1alpha1.PhaseRunning, Assignments: []string{"n1"}, WaitingFor: "x"},
		{Name: "b", State: v1alpha1.PhaseQueued, WaitingFor: "needs 2"},
		{Name: "c", State: v1alpha1.PhasePending},
		{Name: "d", State: v1alpha1.PhaseSucceeded, Message: "ok", EndTime: end0},
		{Name: "e", State: v1alpha1.PhaseFailed, Message: "boom", EndTime: end0},
		{Name: "f", State: v1alpha1.PhaseSkipped, Message: "when false", EndTime: end0},
	}
	st := &v1alpha1.PhasedTrainingStatus{Phases: in}
	stopRemaining(st, now, "stopped: e failed")
	stopped := func(ps v1alpha1.PhaseStatus) v1alpha1.PhaseStatus {
		ps.State, ps.Message, ps.EndTime, ps.WaitingFor = v1alpha1.PhaseFailed, "stopped: e failed", mt(now), ""
		return ps
	}
	want := []v1alpha1.PhaseStatus{stopped(in[0]), stopped(in[1]), stopped(in[2]), in[3], in[4], in[5]}
	if d := cmp.Diff(want, st.Phases); d != "" {
		t.Errorf("phases (-want +got):\n%s", d)
	}
	// A stopped Running phase leaves the ledger and the observations.
	pt := makePT("job").phase("a", 1).status(st.Phases...).obj()
	if snap, _ := buildSnapshot(clusterView{PTs: []*v1alpha1.PhasedTraining{pt}}, now, nil); len(snap.Ledger)+len(snap.Queue) != 0 {
		t.Errorf("stopped phases still scheduled: %+v", snap)
	}
}

var summaryConds = []v1alpha1.ConditionType{
	v1alpha1.ConditionQueued, v1alpha1.ConditionRunning, v1alpha1.ConditionSucceeded,
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

func cond(t v1alpha1.ConditionType, on bool, reason, msg string) metav1.Condition {
	s := metav1.ConditionFalse
	if on {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: string(t), Status: s, Reason: reason, Message: msg, ObservedGeneration: 4}
}

func TestSetConditions(t *testing.T) {
	waitingQ := withAttempt(queued("b"), 0, 1)
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
				running("train", "n1", "n2"), withAttempt(running("eval", "n1"), 2, 1), waitingQ,
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
			phases: []v1alpha1.PhaseStatus{queued("a"), waitingQ, {Name: "c", State: v1alpha1.PhaseQueued, WaitingFor: "later"}},
			step:   phases.Step{State: v1alpha1.PipelineRunning},
			want: []metav1.Condition{
				cond(v1alpha1.ConditionRunning, false, v1alpha1.ReasonWaitingForCapacity, "no phase is running"),
				cond(v1alpha1.ConditionQueued, true, v1alpha1.ReasonWaitingForCapacity, "b (attempt 1) needs 2 × {cpu: 1} at once"),
			},
			state: v1alpha1.PipelineQueued,
		},
		"queued only, nothing explained yet: the queued phases are listed": {
			prior:  []metav1.Condition{cond(v1alpha1.ConditionRunning, true, v1alpha1.ReasonPhaseRunning, "running: x")},
			phases: []v1alpha1.PhaseStatus{queued("a"), withAttempt(queued("b"), 3, 0), {Name: "p", State: v1alpha1.PhasePending}},
			step:   phases.Step{State: v1alpha1.PipelineRunning},
			want: []metav1.Condition{
				cond(v1alpha1.ConditionRunning, false, v1alpha1.ReasonWaitingForCapacity, "no phase is running"),
				cond(v1alpha1.ConditionQueued, true, v1alpha1.ReasonWaitingForCapacity, "queued: a, b (iteration 3)"),
			},
			state: v1alpha1.PipelineQueued,
		},
		"nothing queued or running: Pending": {
			phases: []v1alpha1.PhaseStatus{{Name: "p", State: v1alpha1.PhasePending}, running("noassign")},
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
			phases: []v1alpha1.PhaseStatus{running("a", "n1")},
			step:   phases.Step{State: v1alpha1.PipelineFailed, Reason: v1alpha1.ReasonPhaseTimedOut, Message: "a timed out"},
			want: []metav1.Condition{
				cond(v1alpha1.ConditionFailed, true, v1alpha1.ReasonPhaseTimedOut, "a timed out"),
				cond(v1alpha1.ConditionRunning, false, v1alpha1.ReasonPhaseTimedOut, v1alpha1.ReasonPhaseTimedOut),
				cond(v1alpha1.ConditionQueued, false, v1alpha1.ReasonPhaseTimedOut, v1alpha1.ReasonPhaseTimedOut),
			},
			state: v1alpha1.PipelineFailed,
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
			phases: []v1alpha1.PhaseStatus{running("a", "n1")},
			step:   phases.Step{State: v1alpha1.PipelineRunning},
			want: []metav1.Condition{
				cond(v1alpha1.ConditionInvalid, false, v1alpha1.ReasonSpecInvalid, "the spec is valid"),
				cond(v1alpha1.ConditionRunning, true, v1alpha1.ReasonPhaseRunning, "running: a on 1 workers"),
				cond(v1alpha1.ConditionQueued, false, v1alpha1.ReasonPhaseRunning, v1alpha1.ReasonPhaseRunning),
			},
			state: v1alpha1.PipelineRunning,
		},
	}
	opts := cmp.Options{
		cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime"),
		cmpopts.SortSlices(func(a, b metav1.Condition) bool { return a.Type < b.Type }),
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			st := &v1alpha1.PhasedTrainingStatus{Conditions: append([]metav1.Condition(nil), tc.prior...), Phases: tc.phases}
			phasesBefore := append([]v1alpha1.PhaseStatus(nil), tc.phases...)
			setConditions(st, tc.step, 4)
			if d := cmp.Diff(tc.want, st.Conditions, opts); d != "" {
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
				t.Errorf("setConditions changed the phases:\n%s", d)
			}
		})
	}
}

// setConditions keeps the transition time of a condition whose status does
// not change.
func TestSetConditionsKeepsTransitionTime(t *testing.T) {
	old := cond(v1alpha1.ConditionRunning, true, v1alpha1.ReasonPhaseRunning, "running: a on 1 workers")
	old.LastTransitionTime = metav1.NewTime(t0)
	st := &v1alpha1.PhasedTrainingStatus{Conditions: []metav1.Condition{old}, Phases: []v1alpha1.PhaseStatus{running("a", "n1", "n2")}}
	setConditions(st, phases.Step{State: v1alpha1.PipelineRunning}, 5)
	c := meta.FindStatusCondition(st.Conditions, string(v1alpha1.ConditionRunning))
	if !c.LastTransitionTime.Time.Equal(t0) || c.Message != "running: a on 2 workers" || c.ObservedGeneration != 5 {
		t.Errorf("running condition = %+v", c)
	}
}

// The API documents that at most one of Queued, Running, Succeeded,
// Failed, Infeasible and Invalid is True (phasedtraining_types.go:382).
// The scheduler sets Infeasible=True on a queued gang that never fits;
// setConditions then sets Queued=True beside it.
func TestSetConditionsExclusiveWithInfeasible(t *testing.T) {
	tests := map[string]phases.Step{
		"queued":    {State: v1alpha1.PipelineRunning},
		"failed":    {State: v1alpha1.PipelineFailed, Message: "x"},
		"succeeded": {State: v1alpha1.PipelineSucceeded},
	}
	for name, step := range tests {
		t.Run(name, func(t *testing.T) {
			st := &v1alpha1.PhasedTrainingStatus{
				Conditions: []metav1.Condition{cond(v1alpha1.ConditionInfeasible, true, v1alpha1.ReasonGangNeverFits, "phase a can never fit")},
				Phases:     []v1alpha1.PhaseStatus{queued("a")},
			}
			setConditions(st, step, 1)
			if on := trueConds(st.Conditions); len(on) > 1 {
				t.Errorf("several summary conditions True: %v", on)
			}
		})
	}
}

// Worker counts alone wait up to progressBatch to be written; any change
// of state is written at once and ends the wait.
func TestHoldProgress(t *testing.T) {
	r := &Reconciler{}
	key := types.NamespacedName{Namespace: "ns", Name: "p"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stored := &v1alpha1.PhasedTrainingStatus{Phases: []v1alpha1.PhaseStatus{{Name: "train", State: v1alpha1.PhaseRunning,
		Workers: v1alpha1.WorkerCounts{Min: 8, Granted: 8}}}}
	counted := stored.DeepCopy()
	counted.Phases[0].Workers.Running = 6
	// What Reconcile passes: a change, and one in worker counts only.
	hold := func(next *v1alpha1.PhasedTrainingStatus, at time.Time) time.Duration {
		return r.holdProgress(key, !equality.Semantic.DeepEqual(stored, next) && progressOnly(stored, next), at)
	}

	if got := hold(stored, t0); got != 0 {
		t.Fatalf("nothing to write: held %v", got)
	}
	if got := hold(counted, t0); got != progressBatch {
		t.Fatalf("first counts-only change: held %v, want %v", got, progressBatch)
	}
	counted.Phases[0].Workers.Running = 7
	if got := hold(counted, t0.Add(time.Second)); got != progressBatch-time.Second {
		t.Fatalf("later counts-only change: held %v, want the rest of the first one's %v", got, progressBatch-time.Second)
	}
	if got := hold(counted, t0.Add(progressBatch)); got != 0 {
		t.Fatalf("after progressBatch: held %v, want a write", got)
	}

	// A gang's start time is progress too: it is read from the pods, so a
	// held one is found again.
	started := counted.DeepCopy()
	started.Phases[0].Workers.Running = 8
	started.Phases[0].StartTime = &metav1.Time{Time: t0}
	if got := hold(counted, t0.Add(3*time.Second)); got == 0 {
		t.Fatal("a new counts-only change was not held")
	}
	if got := hold(started, t0.Add(4*time.Second)); got != progressBatch-time.Second {
		t.Fatalf("a phase that started (startTime set): held %v, want the rest of the batch, %v", got, progressBatch-time.Second)
	}
	// Any change of state is written at once and ends the hold.
	ended := started.DeepCopy()
	ended.Phases[0].State = v1alpha1.PhaseSucceeded
	if got := hold(ended, t0.Add(4*time.Second)); got != 0 {
		t.Fatalf("a phase that ended: held %v, want a write at once", got)
	}
	if _, ok := r.heldSince[key]; ok {
		t.Fatal("a write did not end the hold")
	}
	// A start time already stored is not changed quietly.
	stored = started.DeepCopy()
	moved := started.DeepCopy()
	moved.Phases[0].StartTime = &metav1.Time{Time: t0.Add(time.Minute)}
	if got := hold(moved, t0.Add(5*time.Second)); got != 0 {
		t.Fatalf("a stored start time changed: held %v, want a write at once", got)
	}
}
