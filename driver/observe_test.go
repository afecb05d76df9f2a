package driver

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
	"github.com/phasegang/phasegang/phases"
)

// progress is what a test asserts of one phase status once recordProgress
// has written the observations into it.
type progress struct {
	State     v1alpha1.PhaseState
	Workers   v1alpha1.WorkerCounts
	StartTime *metav1.Time
}

// TestObserve checks what Observe reads of the pods, and what
// recordProgress (Advance's first move) then writes into the status.
func TestObserve(t *testing.T) {
	spec := func() *wrappers.PT {
		return wrappers.MakePT("job").Phase("train", 1).Desired(4).Outputs("loss", "acc", "note").Phase("eval", 1)
	}
	r4 := wrappers.Running("train", "n1", "n2", "n3", "n4")
	r2 := wrappers.Running("train", "n1", "n2")
	trainIn := phases.Instance{Name: "train"}
	t0 := wrappers.T0
	tests := map[string]struct {
		status []v1alpha1.PhaseStatus
		pods   func(pt *v1alpha1.PhasedTraining) []corev1.Pod
		want   Observations
		// wantStatus[i] is status.phases[i] after recordProgress; nil:
		// unchanged.
		wantStatus []*progress
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
			want:       Observations{trainIn: {Observation: phases.Observation{Granted: 4, Running: 1, Succeeded: 1, Failed: 1, ChiefSucceeded: true}}},
			wantStatus: []*progress{{State: v1alpha1.PhaseStarting, Workers: v1alpha1.WorkerCounts{Running: 1, Succeeded: 1, Failed: 1}}},
		},
		"chief failed; every worker started stamps StartTime": {
			status: []v1alpha1.PhaseStatus{r2},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{workerPodOf(pt, r2, 0, "n1", corev1.PodFailed), workerPodOf(pt, r2, 1, "n2", corev1.PodRunning)}
			},
			want:       Observations{trainIn: {Observation: phases.Observation{Granted: 2, Running: 1, Failed: 1, ChiefFailed: true}, Started: now}},
			wantStatus: []*progress{{State: v1alpha1.PhaseRunning, Workers: v1alpha1.WorkerCounts{Running: 1, Failed: 1}, StartTime: wrappers.Time(now)}},
		},
		"StartTime is when the last worker's containers started": {
			status: []v1alpha1.PhaseStatus{r2},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				p0 := workerPodOf(pt, r2, 0, "n1", corev1.PodSucceeded)
				p0.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
					Terminated: &corev1.ContainerStateTerminated{StartedAt: *wrappers.Time(t0.Add(3 * time.Second))}}}}
				p1 := workerPodOf(pt, r2, 1, "n2", corev1.PodRunning)
				p1.Status.ContainerStatuses = []corev1.ContainerStatus{
					{Name: "a", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *wrappers.Time(t0.Add(5 * time.Second))}}},
					{Name: "b", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *wrappers.Time(t0.Add(4 * time.Second))}}},
				}
				return []corev1.Pod{p0, p1}
			},
			want:       Observations{trainIn: {Observation: phases.Observation{Granted: 2, Running: 1, Succeeded: 1, ChiefSucceeded: true}, Started: t0.Add(5 * time.Second)}},
			wantStatus: []*progress{{State: v1alpha1.PhaseRunning, Workers: v1alpha1.WorkerCounts{Running: 1, Succeeded: 1}, StartTime: wrappers.Time(t0.Add(5 * time.Second))}},
		},
		// A kubelet's clock ahead of the controller's must not date the
		// start in the future (the start timeout would never fire).
		"a start time after now is now": {
			status: []v1alpha1.PhaseStatus{wrappers.Running("train", "n1")},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				p := workerPodOf(pt, wrappers.Running("train", "n1"), 0, "n1", corev1.PodRunning)
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
					Running: &corev1.ContainerStateRunning{StartedAt: *wrappers.Time(now.Add(time.Minute))}}}}
				return []corev1.Pod{p}
			},
			want:       Observations{trainIn: {Observation: phases.Observation{Granted: 1, Running: 1}, Started: now}},
			wantStatus: []*progress{{State: v1alpha1.PhaseRunning, Workers: v1alpha1.WorkerCounts{Running: 1}, StartTime: wrappers.Time(now)}},
		},
		"StartTime is stamped once": {
			status: func() []v1alpha1.PhaseStatus {
				ps := r2
				ps.StartTime = wrappers.Time(t0)
				return []v1alpha1.PhaseStatus{ps}
			}(),
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{workerPodOf(pt, r2, 0, "n1", corev1.PodRunning), workerPodOf(pt, r2, 1, "n2", corev1.PodRunning)}
			},
			want:       Observations{trainIn: {Observation: phases.Observation{Granted: 2, Running: 2}, Started: now}},
			wantStatus: []*progress{{State: v1alpha1.PhaseRunning, Workers: v1alpha1.WorkerCounts{Running: 2}, StartTime: wrappers.Time(t0)}},
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
			want:       Observations{trainIn: {Observation: phases.Observation{Granted: 2, Succeeded: 1}}},
			wantStatus: []*progress{{State: v1alpha1.PhaseStarting, Workers: v1alpha1.WorkerCounts{Min: 1, Desired: 4, Granted: 2, Succeeded: 1}}},
		},
		"pods of indices beyond the assignments (shrunk away) are ignored": {
			status: []v1alpha1.PhaseStatus{r2},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{
					workerPodOf(pt, r2, 0, "n1", corev1.PodRunning), workerPodOf(pt, r2, 1, "n2", corev1.PodRunning),
					workerPodOf(pt, r2, 2, "n1", corev1.PodFailed), workerPodOf(pt, r2, 3, "n2", corev1.PodSucceeded),
				}
			},
			want:       Observations{trainIn: {Observation: phases.Observation{Granted: 2, Running: 2}, Started: now}},
			wantStatus: []*progress{{State: v1alpha1.PhaseRunning, Workers: v1alpha1.WorkerCounts{Running: 2}, StartTime: wrappers.Time(now)}},
		},
		"a pod bound to another node than reserved is ignored; an unbound one is read": {
			status: []v1alpha1.PhaseStatus{r2},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{workerPodOf(pt, r2, 0, "n9", corev1.PodRunning), workerPodOf(pt, r2, 1, "", corev1.PodFailed)}
			},
			want:       Observations{trainIn: {Observation: phases.Observation{Granted: 2, Failed: 1}}},
			wantStatus: []*progress{{State: v1alpha1.PhaseStarting, Workers: v1alpha1.WorkerCounts{Failed: 1}}},
		},
		// A requeued gang reuses its pod names: a terminating pod is the
		// old gang's.
		"a terminating pod is not counted": {
			status: []v1alpha1.PhaseStatus{r2},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				old := workerPodOf(pt, r2, 0, "n1", corev1.PodFailed)
				old.DeletionTimestamp = wrappers.Time(now)
				return []corev1.Pod{old, workerPodOf(pt, r2, 1, "n2", corev1.PodRunning)}
			},
			want:       Observations{trainIn: {Observation: phases.Observation{Granted: 2, Running: 1}}},
			wantStatus: []*progress{{State: v1alpha1.PhaseStarting, Workers: v1alpha1.WorkerCounts{Running: 1}}},
		},
		"pods of other attempts and iterations are ignored": {
			status: []v1alpha1.PhaseStatus{
				wrappers.Attempt(v1alpha1.PhaseStatus{Name: "train", State: v1alpha1.PhaseFailed, Assignments: []string{"n1"}}, 0, 0),
				wrappers.Attempt(wrappers.Running("train", "n1"), 0, 1),
			},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{
					workerPodOf(pt, wrappers.Attempt(wrappers.Running("train", "n1"), 0, 0), 0, "n1", corev1.PodFailed),
					workerPodOf(pt, wrappers.Attempt(wrappers.Running("train", "n1"), 1, 1), 0, "n1", corev1.PodFailed),
					workerPodOf(pt, wrappers.Attempt(wrappers.Running("train", "n1"), 0, 1), 0, "n1", corev1.PodRunning),
				}
			},
			want:       Observations{{Name: "train", Attempt: 1}: {Observation: phases.Observation{Granted: 1, Running: 1}, Started: now}},
			wantStatus: []*progress{nil, {State: v1alpha1.PhaseRunning, Workers: v1alpha1.WorkerCounts{Running: 1}, StartTime: wrappers.Time(now)}},
		},
		"several running phases are observed separately": {
			status: []v1alpha1.PhaseStatus{r2, wrappers.Running("eval", "n3")},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{workerPodOf(pt, r2, 0, "n1", corev1.PodRunning), workerPodOf(pt, wrappers.Running("eval", "n3"), 0, "n3", corev1.PodSucceeded)}
			},
			want: Observations{
				trainIn:        {Observation: phases.Observation{Granted: 2, Running: 1}},
				{Name: "eval"}: {Observation: phases.Observation{Granted: 1, Succeeded: 1, ChiefSucceeded: true}, Started: now},
			},
			wantStatus: []*progress{{State: v1alpha1.PhaseStarting, Workers: v1alpha1.WorkerCounts{Running: 1}}, {State: v1alpha1.PhaseRunning, Workers: v1alpha1.WorkerCounts{Succeeded: 1}, StartTime: wrappers.Time(now)}},
		},
		"queued, running-without-assignments and ended phases are not observed": {
			status: []v1alpha1.PhaseStatus{
				wrappers.Queued("train"),
				wrappers.Running("eval"),
				wrappers.Attempt(v1alpha1.PhaseStatus{Name: "train", State: v1alpha1.PhaseSucceeded, Assignments: []string{"n1"}}, 1, 0),
			},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{
					workerPodOf(pt, wrappers.Running("train", "n1"), 0, "n1", corev1.PodRunning),
					workerPodOf(pt, wrappers.Running("eval", "n1"), 0, "n1", corev1.PodRunning),
					workerPodOf(pt, wrappers.Attempt(wrappers.Running("train", "n1"), 1, 0), 0, "n1", corev1.PodSucceeded),
				}
			},
			want:       Observations{},
			wantStatus: []*progress{nil, nil, nil},
		},
		"pods with unreadable labels are ignored": {
			status: []v1alpha1.PhaseStatus{r2},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				a := workerPodOf(pt, r2, 0, "n1", corev1.PodRunning)
				delete(a.Labels, LabelWorker)
				b := workerPodOf(pt, r2, 1, "n2", corev1.PodRunning)
				b.Labels[LabelAttempt] = "x"
				return []corev1.Pod{a, b}
			},
			want:       Observations{trainIn: {Observation: phases.Observation{Granted: 2}}},
			wantStatus: []*progress{{State: v1alpha1.PhaseStarting}},
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
			want: Observations{trainIn: {Observation: phases.Observation{
				Granted: 4, Succeeded: 3, Failed: 1, ChiefSucceeded: true,
				Outputs: map[string]string{"loss": "0.25", "acc": "0.5", "note": "two"},
			}, Started: now}},
			wantStatus: []*progress{{State: v1alpha1.PhaseRunning, Workers: v1alpha1.WorkerCounts{Succeeded: 3, Failed: 1}, StartTime: wrappers.Time(now)}},
		},
		"outputs of running workers and of undeclared phases are not read": {
			status: []v1alpha1.PhaseStatus{r2, wrappers.Running("eval", "n3")},
			pods: func(pt *v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{
					workerPodOf(pt, r2, 0, "n1", corev1.PodRunning, `{"loss": 1}`),
					workerPodOf(pt, wrappers.Running("eval", "n3"), 0, "n3", corev1.PodSucceeded, `{"loss": 1}`),
				}
			},
			want: Observations{
				trainIn:        {Observation: phases.Observation{Granted: 2, Running: 1}},
				{Name: "eval"}: {Observation: phases.Observation{Granted: 1, Succeeded: 1, ChiefSucceeded: true}, Started: now},
			},
			wantStatus: []*progress{{State: v1alpha1.PhaseStarting, Workers: v1alpha1.WorkerCounts{Running: 1}}, {State: v1alpha1.PhaseRunning, Workers: v1alpha1.WorkerCounts{Succeeded: 1}, StartTime: wrappers.Time(now)}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pt := spec().Status(tc.status...).Obj()
			pl := wrappers.Compiled(t, Compile, pt)
			st := pt.Status.DeepCopy()
			before := st.DeepCopy()
			var pods []corev1.Pod
			if tc.pods != nil {
				pods = tc.pods(pt)
			}
			got := Observe(pl, st, pods, now)
			// Waiting has its own test (TestObserveWaiting).
			if d := cmp.Diff(tc.want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(Workers{}, "Waiting")); d != "" {
				t.Errorf("observations (-want +got):\n%s", d)
			}
			if d := cmp.Diff(before, st); d != "" {
				t.Errorf("Observe changed the status (-before +after):\n%s", d)
			}

			recordProgress(st, got)
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
				gotProgress := progress{State: st.Phases[i].State, Workers: st.Phases[i].Workers, StartTime: st.Phases[i].StartTime}
				if d := cmp.Diff(*w, gotProgress); d != "" {
					t.Errorf("phase %d after recordProgress (-want +got):\n%s", i, d)
				}
				// Nothing else of the phase status changes.
				b, a := before.Phases[i], st.Phases[i]
				b.State, b.Workers, b.StartTime, a.State, a.Workers, a.StartTime = "", v1alpha1.WorkerCounts{}, nil, "", v1alpha1.WorkerCounts{}, nil
				b.WaitingFor, a.WaitingFor = "", "" // what a starting gang waits for: TestObserveWaiting
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

func TestWorkerIndex(t *testing.T) {
	tests := map[string]struct {
		labels map[string]string
		want   int32
		ok     bool
	}{
		"set":     {map[string]string{LabelWorker: "12"}, 12, true},
		"missing": {nil, 0, false},
		"garbage": {map[string]string{LabelWorker: "x"}, 0, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := WorkerIndex(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}})
			if got != tc.want || ok != tc.ok {
				t.Errorf("WorkerIndex = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// A gang whose workers do not start says why, in the words of whoever
// holds the first waiting worker, and the pipeline is Starting, not
// Running, until at least min workers run.
func TestObserveWaiting(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("train", 3).Obj()
	ps := wrappers.Starting("train", "n1", "n2", "n3")
	ps.ReservedTime = wrappers.Time(now.Add(-time.Minute))
	pt.Status.Phases = []v1alpha1.PhaseStatus{ps}
	pl := wrappers.Compiled(t, Compile, pt)
	unschedulable := func(p *corev1.Pod) {
		p.Spec.NodeName = ""
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: "Unschedulable", Message: `0/2 nodes are available: persistentvolumeclaim "ckpt" not found.`}}
	}
	pullBackOff := func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "worker", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "trainer:v9"`}}}}
	}
	pod := func(idx int32, phase corev1.PodPhase, edit func(*corev1.Pod)) corev1.Pod {
		p := workerPodOf(pt, ps, idx, ps.Assignments[idx], phase)
		if edit != nil {
			edit(&p)
		}
		return p
	}
	tests := map[string]struct {
		pods      []corev1.Pod
		want      string
		wantState v1alpha1.PipelineState
	}{
		"no pod yet: nothing to say (the next reconcile creates them)": {
			wantState: v1alpha1.PipelineStarting},
		"just created: nothing is wrong yet": {
			pods:      []corev1.Pod{pod(0, corev1.PodPending, nil), pod(1, corev1.PodPending, nil), pod(2, corev1.PodPending, nil)},
			wantState: v1alpha1.PipelineStarting},
		"kube-scheduler's reason": {
			pods:      []corev1.Pod{pod(0, corev1.PodRunning, nil), pod(1, corev1.PodPending, unschedulable), pod(2, corev1.PodPending, pullBackOff)},
			want:      `worker 1: Unschedulable: 0/2 nodes are available: persistentvolumeclaim "ckpt" not found.`,
			wantState: v1alpha1.PipelineStarting},
		// kube-scheduler joins its plugins' messages, which can repeat
		// a reason: the status says it once.
		"kube-scheduler's repeated reason is said once": {
			pods: []corev1.Pod{pod(0, corev1.PodPending, func(p *corev1.Pod) {
				unschedulable(p)
				p.Status.Conditions[0].Message = `0/2 nodes are available: persistentvolumeclaim "ckpt" not found. not found.`
			})},
			want:      `worker 0: Unschedulable: 0/2 nodes are available: persistentvolumeclaim "ckpt" not found.`,
			wantState: v1alpha1.PipelineStarting},
		"a container's waiting reason": {
			pods:      []corev1.Pod{pod(0, corev1.PodRunning, nil), pod(1, corev1.PodRunning, nil), pod(2, corev1.PodPending, pullBackOff)},
			want:      `worker 2: container worker: ImagePullBackOff: Back-off pulling image "trainer:v9"`,
			wantState: v1alpha1.PipelineStarting},
		"an earlier pod of the name still terminating": {
			pods: []corev1.Pod{pod(0, corev1.PodRunning, func(p *corev1.Pod) {
				p.DeletionTimestamp = &metav1.Time{Time: now}
				p.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour)) // before this reservation
			})},
			want:      "worker 0: an earlier pod of the same name is still terminating",
			wantState: v1alpha1.PipelineStarting},
		"min workers run: Running, nothing waits": {
			pods:      []corev1.Pod{pod(0, corev1.PodRunning, nil), pod(1, corev1.PodRunning, nil), pod(2, corev1.PodRunning, nil)},
			wantState: v1alpha1.PipelineRunning},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Advance(pl, pt, Observe(pl, &pt.Status, tc.pods, now), now).Status
			if w := got.Phases[0].WaitingFor; w != tc.want {
				t.Errorf("waitingFor = %q, want %q", w, tc.want)
			}
			if got.State != tc.wantState {
				t.Errorf("state = %s, want %s", got.State, tc.wantState)
			}
			// The phase says what its pipeline says: a gang whose pods do
			// not run yet is Starting, not Running.
			if ps := got.Phases[0].State; string(ps) != string(tc.wantState) {
				t.Errorf("phase state = %s, want %s", ps, tc.wantState)
			}
			c := meta.FindStatusCondition(got.Conditions, string(v1alpha1.ConditionStarting))
			if tc.wantState == v1alpha1.PipelineStarting {
				if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "train: ") || !strings.Contains(c.Message, tc.want) {
					t.Errorf("Starting condition = %+v, want True naming train and %q", c, tc.want)
				}
			} else if c != nil && c.Status == metav1.ConditionTrue {
				t.Errorf("Starting is still True: %+v", c)
			}
		})
	}
}

// dedupeSentences drops a sentence equal to an earlier one or only its
// end (its last words), and keeps everything else.
func TestDedupeSentences(t *testing.T) {
	for msg, want := range map[string]string{
		``:            ``,
		`one reason`:  `one reason`,
		`one reason.`: `one reason.`,
		`a. b. c.`:    `a. b. c.`,
		`a. a.`:       `a.`,
		`a. b. a`:     `a. b`,
		`0/1 nodes are available: persistentvolumeclaim "x" not found. not found.`: `0/1 nodes are available: persistentvolumeclaim "x" not found.`,
		// The start of an earlier sentence, or a part of a word, is not
		// a repeat.
		`node(s) had taint. node(s) had`:     `node(s) had taint. node(s) had`,
		`2 Insufficient nvidia.com/gpu. gpu`: `2 Insufficient nvidia.com/gpu. gpu`,
		`0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.`: `0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.`,
	} {
		if got := dedupeSentences(msg); got != want {
			t.Errorf("dedupeSentences(%q) = %q, want %q", msg, got, want)
		}
	}
}

// A worker preempted, evicted or deleted by someone else is lost: the
// observation counts it and quotes the first cause, and the gang is not
// counted as running with it. An earlier gang's terminating pod, and the
// not yet created pod of a worker an elastic gang just got, are not lost.
func TestObserveLost(t *testing.T) {
	reserved, started := now.Add(-10*time.Minute), now.Add(-9*time.Minute)
	gang := func(nodes ...string) v1alpha1.PhaseStatus {
		ps := wrappers.Running("train", nodes...)
		ps.ReservedTime, ps.StartTime = wrappers.Time(reserved), wrappers.Time(started)
		ps.History = []v1alpha1.PhaseEvent{{Time: *wrappers.Time(reserved), Type: v1alpha1.PhaseEventReserved, Workers: int32(len(nodes))}}
		return ps
	}
	running := func(pt *v1alpha1.PhasedTraining, ps v1alpha1.PhaseStatus, idx int32, edit func(*corev1.Pod)) corev1.Pod {
		p := workerPodOf(pt, ps, idx, ps.Assignments[idx], corev1.PodRunning)
		p.CreationTimestamp = metav1.NewTime(reserved.Add(time.Second))
		if edit != nil {
			edit(&p)
		}
		return p
	}
	preempted := func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "PreemptionByScheduler", Message: "Kubernetes Scheduler: preempting to accommodate a higher priority pod"})
	}
	tests := map[string]struct {
		ps      v1alpha1.PhaseStatus
		pods    func(pt *v1alpha1.PhasedTraining, ps v1alpha1.PhaseStatus) []corev1.Pod
		lost    int32
		reason  string
		running int32
	}{
		"every worker runs": {
			ps: gang("n1", "n2"),
			pods: func(pt *v1alpha1.PhasedTraining, ps v1alpha1.PhaseStatus) []corev1.Pod {
				return []corev1.Pod{running(pt, ps, 0, nil), running(pt, ps, 1, nil)}
			},
			running: 2},
		"preempted by kube-scheduler": {
			ps: gang("n1", "n2"),
			pods: func(pt *v1alpha1.PhasedTraining, ps v1alpha1.PhaseStatus) []corev1.Pod {
				return []corev1.Pod{running(pt, ps, 0, nil), running(pt, ps, 1, preempted)}
			},
			lost: 1, running: 1,
			reason: "worker 1: PreemptionByScheduler: Kubernetes Scheduler: preempting to accommodate a higher priority pod (pod job-train-1)"},
		"evicted by the kubelet": {
			ps: gang("n1", "n2"),
			pods: func(pt *v1alpha1.PhasedTraining, ps v1alpha1.PhaseStatus) []corev1.Pod {
				return []corev1.Pod{running(pt, ps, 0, func(p *corev1.Pod) {
					p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
				}), running(pt, ps, 1, nil)}
			},
			lost: 1, running: 1, reason: "worker 0: Evicted: The node was low on resource: memory. (pod job-train-0)"},
		"deleted by someone, still terminating": {
			ps: gang("n1", "n2"),
			pods: func(pt *v1alpha1.PhasedTraining, ps v1alpha1.PhaseStatus) []corev1.Pod {
				return []corev1.Pod{running(pt, ps, 0, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now} }), running(pt, ps, 1, nil)}
			},
			lost: 1, running: 1, reason: "worker 0: pod job-train-0 was deleted"},
		"gone after the gang started": {
			ps: gang("n1", "n2"),
			pods: func(pt *v1alpha1.PhasedTraining, ps v1alpha1.PhaseStatus) []corev1.Pod {
				return []corev1.Pod{running(pt, ps, 1, nil)}
			},
			lost: 1, running: 1, reason: "worker 0: its pod was deleted"},
		"an earlier gang's pod still terminating is not this gang's": {
			ps: gang("n1", "n2"),
			pods: func(pt *v1alpha1.PhasedTraining, ps v1alpha1.PhaseStatus) []corev1.Pod {
				return []corev1.Pod{running(pt, ps, 0, func(p *corev1.Pod) {
					p.DeletionTimestamp = &metav1.Time{Time: now}
					p.CreationTimestamp = metav1.NewTime(reserved.Add(-time.Hour))
				}), running(pt, ps, 1, nil)}
			},
			running: 1},
		"a worker an elastic gang got since it started is not created yet": {
			ps: func() v1alpha1.PhaseStatus {
				ps := gang("n1", "n2", "n3")
				ps.History = []v1alpha1.PhaseEvent{
					{Time: *wrappers.Time(reserved), Type: v1alpha1.PhaseEventReserved, Workers: 2},
					{Time: *wrappers.Time(now), Type: v1alpha1.PhaseEventGrow, Workers: 3},
				}
				return ps
			}(),
			pods: func(pt *v1alpha1.PhasedTraining, ps v1alpha1.PhaseStatus) []corev1.Pod {
				return []corev1.Pod{running(pt, ps, 0, nil), running(pt, ps, 1, nil)}
			},
			running: 2},
		"a gang that has not started: a missing pod is not created yet": {
			ps: func() v1alpha1.PhaseStatus { ps := gang("n1", "n2"); ps.StartTime = nil; return ps }(),
			pods: func(pt *v1alpha1.PhasedTraining, ps v1alpha1.PhaseStatus) []corev1.Pod {
				return []corev1.Pod{running(pt, ps, 0, nil)}
			},
			running: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pt := wrappers.MakePT("job").Phase("train", 1).Desired(3).Obj()
			pt.Status.Phases = []v1alpha1.PhaseStatus{tc.ps}
			got := Observe(wrappers.Compiled(t, Compile, pt), &pt.Status, tc.pods(pt, tc.ps), now)[phases.Instance{Name: "train"}]
			if got.Lost != tc.lost || got.LostReason != tc.reason || got.Running != tc.running {
				t.Errorf("lost %d (%q), running %d; want lost %d (%q), running %d", got.Lost, got.LostReason, got.Running, tc.lost, tc.reason, tc.running)
			}
		})
	}
}
