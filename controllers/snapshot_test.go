package controllers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
)

// snapSummary is what a test asserts of buildSnapshot's result.
type snapSummary struct {
	Ledger map[string][]string // gang → workers' nodes
	Queue  []string
	Used   map[string]engine.ResourceList // node → used (nodes in the snapshot)
	Refs   map[string]int                 // gang → index of its PhaseStatus
}

func summarize(snap engine.Snapshot, refs map[engine.GangKey]gangRef) snapSummary {
	s := snapSummary{Ledger: map[string][]string{}, Used: map[string]engine.ResourceList{}, Refs: map[string]int{}}
	for _, g := range snap.Ledger {
		s.Ledger[g.Gang.String()] = g.Workers
	}
	for _, r := range snap.Queue {
		s.Queue = append(s.Queue, r.Gang.String())
	}
	for _, n := range snap.Nodes {
		s.Used[n.Name] = n.Used
	}
	for k, r := range refs {
		s.Refs[k.String()] = r.index
	}
	return s
}

func cpuUsed(cpuMilli, pods int64) engine.ResourceList {
	return engine.ResourceList{"cpu": cpuMilli, "pods": engine.Milli(pods)}
}

func TestBuildSnapshot(t *testing.T) {
	nodes := []corev1.Node{makeNode("n1", "8"), makeNode("n2", "8")}
	twoRunning := func() *ptBuilder {
		return makePT("job").phase("train", 2).status(running("train", "n1", "n2"))
	}
	trainPod := func(pt *v1alpha1.PhasedTraining, idx int32, node string, ph corev1.PodPhase) corev1.Pod {
		return makePod("ns", driver.PodName(pt, "train", 0, 0, idx), node, ph, "1")
	}
	tests := map[string]struct {
		pts  []*v1alpha1.PhasedTraining
		pods func(pts []*v1alpha1.PhasedTraining) []corev1.Pod
		want snapSummary
	}{
		"running grant in the ledger, its own pods not counted": {
			pts: []*v1alpha1.PhasedTraining{twoRunning().obj()},
			pods: func(p []*v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{trainPod(p[0], 0, "n1", corev1.PodRunning), trainPod(p[0], 1, "n2", corev1.PodPending)}
			},
			want: snapSummary{
				Ledger: map[string][]string{"ns/job/train#0.0": {"n1", "n2"}},
				Used:   map[string]engine.ResourceList{"n1": nil, "n2": nil},
				Refs:   map[string]int{"ns/job/train#0.0": 0},
			},
		},
		"granted pod bound to another node than reserved is counted there": {
			pts: []*v1alpha1.PhasedTraining{twoRunning().obj()},
			pods: func(p []*v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{trainPod(p[0], 0, "n2", corev1.PodRunning)}
			},
			want: snapSummary{
				Ledger: map[string][]string{"ns/job/train#0.0": {"n1", "n2"}},
				Used:   map[string]engine.ResourceList{"n1": nil, "n2": cpuUsed(1000, 1)},
				Refs:   map[string]int{"ns/job/train#0.0": 0},
			},
		},
		"pod of a worker index beyond the assignments (shrunk away) is counted": {
			pts: []*v1alpha1.PhasedTraining{twoRunning().obj()},
			pods: func(p []*v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{trainPod(p[0], 2, "n1", corev1.PodRunning)}
			},
			want: snapSummary{
				Ledger: map[string][]string{"ns/job/train#0.0": {"n1", "n2"}},
				Used:   map[string]engine.ResourceList{"n1": cpuUsed(1000, 1), "n2": nil},
				Refs:   map[string]int{"ns/job/train#0.0": 0},
			},
		},
		"same pod name in another namespace is not covered": {
			pts: []*v1alpha1.PhasedTraining{twoRunning().obj()},
			pods: func(p []*v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{makePod("other", driver.PodName(p[0], "train", 0, 0, 0), "n1", corev1.PodRunning, "2")}
			},
			want: snapSummary{
				Ledger: map[string][]string{"ns/job/train#0.0": {"n1", "n2"}},
				Used:   map[string]engine.ResourceList{"n1": cpuUsed(2000, 1), "n2": nil},
				Refs:   map[string]int{"ns/job/train#0.0": 0},
			},
		},
		"unmanaged pods are summed per node; terminal and unbound pods are not counted": {
			pods: func([]*v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{
					makePod("a", "web", "n1", corev1.PodRunning, "1500m"),
					makePod("a", "db", "n1", corev1.PodPending, "500m"),
					makePod("a", "noreq", "n2", corev1.PodRunning, ""),
					makePod("a", "done", "n2", corev1.PodSucceeded, "4"),
					makePod("a", "crashed", "n2", corev1.PodFailed, "4"),
					makePod("a", "unbound", "", corev1.PodPending, "4"),
					makePod("a", "terminating", "n2", corev1.PodRunning, "1", func(p *corev1.Pod) {
						p.DeletionTimestamp = mt(now)
					}),
				}
			},
			want: snapSummary{
				Used: map[string]engine.ResourceList{"n1": cpuUsed(2000, 2), "n2": cpuUsed(1000, 2)},
			},
		},
		"queued phase of a schedulable pipeline is queued": {
			pts: []*v1alpha1.PhasedTraining{makePT("job").phase("train", 2).status(queued("train")).obj()},
			want: snapSummary{
				Queue: []string{"ns/job/train#0.0"},
				Used:  map[string]engine.ResourceList{"n1": nil, "n2": nil},
				Refs:  map[string]int{"ns/job/train#0.0": 0},
			},
		},
		"pending, running-without-assignments and ended phases are neither queued nor granted": {
			pts: []*v1alpha1.PhasedTraining{makePT("job").phase("a", 1).phase("b", 1).phase("c", 1).phase("d", 1).status(
				v1alpha1.PhaseStatus{Name: "a", State: v1alpha1.PhasePending},
				running("b"),
				v1alpha1.PhaseStatus{Name: "c", State: v1alpha1.PhaseSucceeded, Assignments: []string{"n1"}},
				v1alpha1.PhaseStatus{Name: "d", State: v1alpha1.PhaseFailed, Assignments: []string{"n1"}},
			).obj()},
			want: snapSummary{Used: map[string]engine.ResourceList{"n1": nil, "n2": nil}},
		},
		"only the latest attempt counts; an older Running attempt's pods are counted as used": {
			pts: []*v1alpha1.PhasedTraining{makePT("job").phase("train", 1).status(
				withAttempt(running("train", "n1"), 0, 0),
				withAttempt(queued("train"), 0, 1),
			).obj()},
			pods: func(p []*v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{trainPod(p[0], 0, "n1", corev1.PodRunning)}
			},
			want: snapSummary{
				Queue: []string{"ns/job/train#0.1"},
				Used:  map[string]engine.ResourceList{"n1": cpuUsed(1000, 1), "n2": nil},
				Refs:  map[string]int{"ns/job/train#0.1": 1},
			},
		},
		"iterations are separate gangs": {
			pts: []*v1alpha1.PhasedTraining{makePT("job").phase("train", 1).status(
				withAttempt(running("train", "n1"), 0, 0),
				withAttempt(queued("train"), 1, 0),
			).obj()},
			want: snapSummary{
				Ledger: map[string][]string{"ns/job/train#0.0": {"n1"}},
				Queue:  []string{"ns/job/train#1.0"},
				Used:   map[string]engine.ResourceList{"n1": nil, "n2": nil},
				Refs:   map[string]int{"ns/job/train#0.0": 0, "ns/job/train#1.0": 1},
			},
		},
		"a status entry whose phase left the spec is ignored": {
			pts:  []*v1alpha1.PhasedTraining{makePT("job").phase("train", 1).status(running("gone", "n1"), queued("gone2")).obj()},
			want: snapSummary{Used: map[string]engine.ResourceList{"n1": nil, "n2": nil}},
		},
		"deleted pipeline: no grant, nothing queued, its terminating pods counted": {
			pts: []*v1alpha1.PhasedTraining{makePT("job").phase("train", 2).phase("eval", 1).
				status(running("train", "n1", "n2"), queued("eval")).deleting().obj()},
			pods: func(p []*v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{trainPod(p[0], 0, "n1", corev1.PodRunning), trainPod(p[0], 1, "n2", corev1.PodRunning)}
			},
			want: snapSummary{Used: map[string]engine.ResourceList{"n1": cpuUsed(1000, 1), "n2": cpuUsed(1000, 1)}},
		},
	}
	// Pipelines that are not schedulable: their Running grant stays in the
	// ledger (its pods not counted), nothing of theirs is queued.
	for name, b := range map[string]*ptBuilder{
		"invalid pipeline":                     makePT("job").state(v1alpha1.PipelineInvalid),
		"succeeded pipeline":                   makePT("job").state(v1alpha1.PipelineSucceeded),
		"failed pipeline":                      makePT("job").state(v1alpha1.PipelineFailed),
		"spec edited since status was written": makePT("job").generation(2, 1),
	} {
		pt := b.phase("train", 2).phase("eval", 1).status(running("train", "n1", "n2"), queued("eval")).obj()
		tests[name+": grant kept, nothing queued"] = struct {
			pts  []*v1alpha1.PhasedTraining
			pods func(pts []*v1alpha1.PhasedTraining) []corev1.Pod
			want snapSummary
		}{
			pts: []*v1alpha1.PhasedTraining{pt},
			pods: func(p []*v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{trainPod(p[0], 0, "n1", corev1.PodRunning), trainPod(p[0], 1, "n2", corev1.PodRunning)}
			},
			want: snapSummary{
				Ledger: map[string][]string{"ns/job/train#0.0": {"n1", "n2"}},
				Used:   map[string]engine.ResourceList{"n1": nil, "n2": nil},
				Refs:   map[string]int{"ns/job/train#0.0": 0},
			},
		}
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := clusterView{Nodes: nodes, PTs: tc.pts}
			if tc.pods != nil {
				v.Pods = tc.pods(tc.pts)
			}
			snap, refs := buildSnapshot(v, now, nil)
			if !snap.Now.Equal(now) {
				t.Errorf("Now = %v, want %v", snap.Now, now)
			}
			for k, r := range refs {
				if got := driver.GangKey(r.pt, &r.pt.Status.Phases[r.index]); got != k {
					t.Errorf("refs[%v] points at %v", k, got)
				}
				if r.phase == nil || r.phase.Name != k.Phase {
					t.Errorf("refs[%v].phase = %v", k, r.phase)
				}
			}
			if d := cmp.Diff(tc.want, summarize(snap, refs), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("snapshot (-want +got):\n%s", d)
			}
		})
	}
}

func TestBuildSnapshotNodes(t *testing.T) {
	taint := corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}
	n1 := makeNode("n1", "4")
	n1.Labels = map[string]string{"zone": "a"}
	n1.Spec.Taints = []corev1.Taint{taint}
	n1.Spec.Unschedulable = true
	n1.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("8")
	gone := makeNode("gone", "4")
	gone.DeletionTimestamp = mt(now)
	gone.Finalizers = []string{"x"}
	fence := &engine.Fence{}
	snap, _ := buildSnapshot(clusterView{Nodes: []corev1.Node{n1, gone}}, now, fence)
	want := []engine.Node{{
		Name: "n1", Labels: map[string]string{"zone": "a"}, Taints: []corev1.Taint{taint}, Unschedulable: true,
		Allocatable: engine.ResourceList{"cpu": 4000, "pods": 110000, "nvidia.com/gpu": 8000},
	}}
	if d := cmp.Diff(want, snap.Nodes); d != "" {
		t.Errorf("nodes (-want +got):\n%s", d)
	}
	if snap.Fence != fence {
		t.Errorf("the fence is not carried")
	}
}

// The ledger's and queue's requests are request() of the phase attempt.
func TestBuildSnapshotRequests(t *testing.T) {
	ptA := makePT("a").priorityClass("high").phase("train", 2).status(running("train", "n1", "n1")).obj()
	q := queued("eval")
	q.QueuedTime, q.NotBefore = mt(t0.Add(time.Minute)), mt(t0.Add(2*time.Minute))
	ptB := makePT("b").ns("other").phase("eval", 1).status(q).obj()
	classes := map[string]int32{"high": 1000}
	snap, _ := buildSnapshot(clusterView{PTs: []*v1alpha1.PhasedTraining{ptA, ptB}, Priorities: classes}, now, nil)
	wantLedger := []engine.Grant{{
		Request: request(ptA, &ptA.Spec.Phases[0], &ptA.Status.Phases[0], classes),
		Workers: []string{"n1", "n1"},
	}}
	if d := cmp.Diff(wantLedger, snap.Ledger); d != "" {
		t.Errorf("ledger (-want +got):\n%s", d)
	}
	wantQueue := []engine.Request{request(ptB, &ptB.Spec.Phases[0], &ptB.Status.Phases[0], classes)}
	if d := cmp.Diff(wantQueue, snap.Queue); d != "" {
		t.Errorf("queue (-want +got):\n%s", d)
	}
	if snap.Ledger[0].Priority != 1000 || snap.Queue[0].Gang.Pipeline != "other/b" {
		t.Errorf("ledger priority %d, queue gang %v", snap.Ledger[0].Priority, snap.Queue[0].Gang)
	}
}

func TestRequest(t *testing.T) {
	classes := map[string]int32{"high": 1000, "low": -5}
	created := t0.Add(-time.Hour)
	sel := map[string]string{"gpu": "a100"}
	tol := []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	aff := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}},
	}}}
	base := func() *ptBuilder {
		return makePT("job").created(created).phase("train", 2).desired(4).tmpl(func(p *corev1.PodTemplateSpec) {
			p.Spec.NodeSelector, p.Spec.Tolerations, p.Spec.Affinity = sel, tol, aff
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("1Ki")
		})
	}
	wantBase := engine.Request{
		Gang:        engine.GangKey{Pipeline: "ns/job", Phase: "train", Iteration: 1, Attempt: 2},
		Created:     created,
		Queued:      created,
		Min:         2,
		Desired:     4,
		Footprint:   engine.ResourceList{"cpu": 1000, "memory": 1024000, "pods": 1000},
		Constraints: engine.Constraints{NodeSelector: sel, Affinity: aff, Tolerations: tol},
	}
	tests := map[string]struct {
		pt   *v1alpha1.PhasedTraining
		ps   v1alpha1.PhaseStatus
		want func(r *engine.Request)
	}{
		"defaults: priority 0, queued at creation": {
			pt: base().obj(), ps: withAttempt(queued("train"), 1, 2),
			want: func(*engine.Request) {},
		},
		"priority field": {
			pt: base().priority(7).obj(), ps: withAttempt(queued("train"), 1, 2),
			want: func(r *engine.Request) { r.Priority = 7 },
		},
		"negative priority class": {
			pt: base().priorityClass("low").obj(), ps: withAttempt(queued("train"), 1, 2),
			want: func(r *engine.Request) { r.Priority = -5 },
		},
		"priority class": {
			pt: base().priorityClass("high").obj(), ps: withAttempt(queued("train"), 1, 2),
			want: func(r *engine.Request) { r.Priority = 1000 },
		},
		"unknown priority class is 0": {
			pt: base().priorityClass("nope").obj(), ps: withAttempt(queued("train"), 1, 2),
			want: func(*engine.Request) {},
		},
		"priority wins over class": {
			pt: base().priority(3).priorityClass("high").obj(), ps: withAttempt(queued("train"), 1, 2),
			want: func(r *engine.Request) { r.Priority = 3 },
		},
		"queued time and not-before from the status": {
			pt: base().obj(),
			ps: func() v1alpha1.PhaseStatus {
				ps := withAttempt(queued("train"), 1, 2)
				ps.QueuedTime, ps.NotBefore = mt(t0), mt(t0.Add(time.Minute))
				return ps
			}(),
			want: func(r *engine.Request) { r.Queued, r.NotBefore = t0, t0.Add(time.Minute) },
		},
		"desired defaults to min": {
			pt: makePT("job").created(created).phase("train", 3).obj(), ps: queued("train"),
			want: func(r *engine.Request) {
				r.Gang.Iteration, r.Gang.Attempt = 0, 0
				r.Min, r.Desired = 3, 3
				r.Footprint = engine.ResourceList{"cpu": 1000, "pods": 1000}
				r.Constraints = engine.Constraints{}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			want := wantBase
			tc.want(&want)
			got := request(tc.pt, &tc.pt.Spec.Phases[0], &tc.ps, classes)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("request (-want +got):\n%s", d)
			}
		})
	}
}

func TestSchedulable(t *testing.T) {
	tests := map[string]struct {
		pt   *v1alpha1.PhasedTraining
		want bool
	}{
		"fresh":                     {makePT("p").obj(), true},
		"running":                   {makePT("p").state(v1alpha1.PipelineRunning).obj(), true},
		"queued":                    {makePT("p").state(v1alpha1.PipelineQueued).obj(), true},
		"infeasible":                {makePT("p").state(v1alpha1.PipelineInfeasible).obj(), true},
		"invalid":                   {makePT("p").state(v1alpha1.PipelineInvalid).obj(), false},
		"succeeded":                 {makePT("p").state(v1alpha1.PipelineSucceeded).obj(), false},
		"failed":                    {makePT("p").state(v1alpha1.PipelineFailed).obj(), false},
		"deleted":                   {makePT("p").deleting().obj(), false},
		"new generation unobserved": {makePT("p").generation(3, 2).obj(), false},
		"never observed":            {makePT("p").generation(1, 0).obj(), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := schedulable(tc.pt); got != tc.want {
				t.Errorf("schedulable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWorkerIndex(t *testing.T) {
	tests := map[string]struct {
		labels map[string]string
		want   int32
		ok     bool
	}{
		"set":     {map[string]string{driver.LabelWorker: "12"}, 12, true},
		"missing": {nil, 0, false},
		"garbage": {map[string]string{driver.LabelWorker: "x"}, 0, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := driver.WorkerIndex(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}})
			if got != tc.want || ok != tc.ok {
				t.Errorf("driver.WorkerIndex = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
