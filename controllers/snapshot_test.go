package controllers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// snapSummary is what a test asserts of buildSnapshot's result.
type snapSummary struct {
	Ledger   map[string][]string // gang → workers' nodes
	Queue    []string
	Upcoming []string
	Used     map[string]engine.ResourceList // node → used (nodes in the snapshot)
	Gangs    map[string]int                 // gang → index of its PhaseStatus (the Demand's)
}

func summarize(snap engine.Snapshot, d *driver.Demand) snapSummary {
	s := snapSummary{Ledger: map[string][]string{}, Used: map[string]engine.ResourceList{}, Gangs: map[string]int{}}
	for _, g := range snap.Ledger {
		s.Ledger[g.Gang.String()] = g.Workers
	}
	for _, r := range snap.Queue {
		s.Queue = append(s.Queue, r.Gang.String())
	}
	for _, r := range snap.Upcoming {
		s.Upcoming = append(s.Upcoming, r.Gang.String())
	}
	for _, n := range snap.Nodes {
		s.Used[n.Name] = n.Used
	}
	for k, g := range d.Gangs {
		s.Gangs[k.String()] = g.Index
	}
	return s
}

func cpuUsed(cpuMilli, pods int64) engine.ResourceList {
	return engine.ResourceList{"cpu": cpuMilli, "pods": engine.Milli(pods)}
}

func TestBuildSnapshot(t *testing.T) {
	nodes := []corev1.Node{wrappers.MakeNode("n1", "8"), wrappers.MakeNode("n2", "8")}
	twoRunning := func() *wrappers.PT {
		return wrappers.MakePT("job").Phase("train", 2).Status(wrappers.Running("train", "n1", "n2"))
	}
	trainPod := func(pt *v1alpha1.PhasedTraining, idx int32, node string, ph corev1.PodPhase) corev1.Pod {
		return wrappers.MakePod("ns", driver.PodName(pt, "train", 0, 0, idx), node, ph, "1")
	}
	tests := map[string]struct {
		pts  []*v1alpha1.PhasedTraining
		pods func(pts []*v1alpha1.PhasedTraining) []corev1.Pod
		want snapSummary
	}{
		"running grant in the ledger, its own pods not counted": {
			pts: []*v1alpha1.PhasedTraining{twoRunning().Obj()},
			pods: func(p []*v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{trainPod(p[0], 0, "n1", corev1.PodRunning), trainPod(p[0], 1, "n2", corev1.PodPending)}
			},
			want: snapSummary{
				Ledger: map[string][]string{"ns/job/train#0.0": {"n1", "n2"}},
				Used:   map[string]engine.ResourceList{"n1": nil, "n2": nil},
				Gangs:  map[string]int{"ns/job/train#0.0": 0},
			},
		},
		"granted pod bound to another node than reserved is counted there": {
			pts: []*v1alpha1.PhasedTraining{twoRunning().Obj()},
			pods: func(p []*v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{trainPod(p[0], 0, "n2", corev1.PodRunning)}
			},
			want: snapSummary{
				Ledger: map[string][]string{"ns/job/train#0.0": {"n1", "n2"}},
				Used:   map[string]engine.ResourceList{"n1": nil, "n2": cpuUsed(1000, 1)},
				Gangs:  map[string]int{"ns/job/train#0.0": 0},
			},
		},
		"pod of a worker index beyond the assignments (shrunk away) is counted": {
			pts: []*v1alpha1.PhasedTraining{twoRunning().Obj()},
			pods: func(p []*v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{trainPod(p[0], 2, "n1", corev1.PodRunning)}
			},
			want: snapSummary{
				Ledger: map[string][]string{"ns/job/train#0.0": {"n1", "n2"}},
				Used:   map[string]engine.ResourceList{"n1": cpuUsed(1000, 1), "n2": nil},
				Gangs:  map[string]int{"ns/job/train#0.0": 0},
			},
		},
		"same pod name in another namespace is not covered": {
			pts: []*v1alpha1.PhasedTraining{twoRunning().Obj()},
			pods: func(p []*v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{wrappers.MakePod("other", driver.PodName(p[0], "train", 0, 0, 0), "n1", corev1.PodRunning, "2")}
			},
			want: snapSummary{
				Ledger: map[string][]string{"ns/job/train#0.0": {"n1", "n2"}},
				Used:   map[string]engine.ResourceList{"n1": cpuUsed(2000, 1), "n2": nil},
				Gangs:  map[string]int{"ns/job/train#0.0": 0},
			},
		},
		"unmanaged pods are summed per node; terminal and unbound pods are not counted": {
			pods: func([]*v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{
					wrappers.MakePod("a", "web", "n1", corev1.PodRunning, "1500m"),
					wrappers.MakePod("a", "db", "n1", corev1.PodPending, "500m"),
					wrappers.MakePod("a", "noreq", "n2", corev1.PodRunning, ""),
					wrappers.MakePod("a", "done", "n2", corev1.PodSucceeded, "4"),
					wrappers.MakePod("a", "crashed", "n2", corev1.PodFailed, "4"),
					wrappers.MakePod("a", "unbound", "", corev1.PodPending, "4"),
					wrappers.MakePod("a", "terminating", "n2", corev1.PodRunning, "1", func(p *corev1.Pod) {
						p.DeletionTimestamp = wrappers.Time(now)
					}),
				}
			},
			want: snapSummary{
				Used: map[string]engine.ResourceList{"n1": cpuUsed(2000, 2), "n2": cpuUsed(1000, 2)},
			},
		},
		"queued phase of a schedulable pipeline is queued": {
			pts: []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("train", 2).Status(wrappers.Queued("train")).Obj()},
			want: snapSummary{
				Queue: []string{"ns/job/train#0.0"},
				Used:  map[string]engine.ResourceList{"n1": nil, "n2": nil},
				Gangs: map[string]int{"ns/job/train#0.0": 0},
			},
		},
		"pending, running-without-assignments and ended phases are neither queued nor granted": {
			pts: []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("a", 1).Phase("b", 1).Phase("c", 1).Phase("d", 1).Status(
				v1alpha1.PhaseStatus{Name: "a", State: v1alpha1.PhasePending},
				wrappers.Running("b"),
				v1alpha1.PhaseStatus{Name: "c", State: v1alpha1.PhaseSucceeded, Assignments: []string{"n1"}},
				v1alpha1.PhaseStatus{Name: "d", State: v1alpha1.PhaseFailed, Assignments: []string{"n1"}},
			).Obj()},
			// A Pending phase has not been queued yet: it is upcoming.
			want: snapSummary{Upcoming: []string{"ns/job/a#0.0"}, Used: map[string]engine.ResourceList{"n1": nil, "n2": nil}},
		},
		"only the latest attempt counts; an older Running attempt's pods are counted as used": {
			pts: []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("train", 1).Status(
				wrappers.Attempt(wrappers.Running("train", "n1"), 0, 0),
				wrappers.Attempt(wrappers.Queued("train"), 0, 1),
			).Obj()},
			pods: func(p []*v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{trainPod(p[0], 0, "n1", corev1.PodRunning)}
			},
			want: snapSummary{
				Queue: []string{"ns/job/train#0.1"},
				Used:  map[string]engine.ResourceList{"n1": cpuUsed(1000, 1), "n2": nil},
				Gangs: map[string]int{"ns/job/train#0.1": 1},
			},
		},
		"iterations are separate gangs": {
			pts: []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("train", 1).Status(
				wrappers.Attempt(wrappers.Running("train", "n1"), 0, 0),
				wrappers.Attempt(wrappers.Queued("train"), 1, 0),
			).Obj()},
			want: snapSummary{
				Ledger: map[string][]string{"ns/job/train#0.0": {"n1"}},
				Queue:  []string{"ns/job/train#1.0"},
				Used:   map[string]engine.ResourceList{"n1": nil, "n2": nil},
				Gangs:  map[string]int{"ns/job/train#0.0": 0, "ns/job/train#1.0": 1},
			},
		},
		"a status entry whose phase left the spec is ignored": {
			pts: []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("train", 1).Status(wrappers.Running("gone", "n1"), wrappers.Queued("gone2")).Obj()},
			// The spec's phase has no status entry of its own yet.
			want: snapSummary{Upcoming: []string{"ns/job/train#0.0"}, Used: map[string]engine.ResourceList{"n1": nil, "n2": nil}},
		},
		"deleted pipeline: no grant, nothing queued, its terminating pods counted": {
			pts: []*v1alpha1.PhasedTraining{wrappers.MakePT("job").Phase("train", 2).Phase("eval", 1).
				Status(wrappers.Running("train", "n1", "n2"), wrappers.Queued("eval")).Deleting(now).Obj()},
			pods: func(p []*v1alpha1.PhasedTraining) []corev1.Pod {
				return []corev1.Pod{trainPod(p[0], 0, "n1", corev1.PodRunning), trainPod(p[0], 1, "n2", corev1.PodRunning)}
			},
			want: snapSummary{Used: map[string]engine.ResourceList{"n1": cpuUsed(1000, 1), "n2": cpuUsed(1000, 1)}},
		},
	}
	// Pipelines that are not schedulable: their Running grant stays in the
	// ledger (its pods not counted), nothing of theirs is queued.
	for name, b := range map[string]*wrappers.PT{
		"invalid pipeline":                     wrappers.MakePT("job").State(v1alpha1.PipelineInvalid),
		"succeeded pipeline":                   wrappers.MakePT("job").State(v1alpha1.PipelineSucceeded),
		"failed pipeline":                      wrappers.MakePT("job").State(v1alpha1.PipelineFailed),
		"spec edited since status was written": wrappers.MakePT("job").Generation(2, 1),
	} {
		pt := b.Phase("train", 2).Phase("eval", 1).Status(wrappers.Running("train", "n1", "n2"), wrappers.Queued("eval")).Obj()
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
				Gangs:  map[string]int{"ns/job/train#0.0": 0},
			},
		}
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := clusterView{Nodes: nodes, PTs: tc.pts}
			if tc.pods != nil {
				v.Pods = tc.pods(tc.pts)
			}
			snap, demand := buildSnapshot(v, now, nil)
			if !snap.Now.Equal(now) {
				t.Errorf("Now = %v, want %v", snap.Now, now)
			}
			for k, g := range demand.Gangs {
				if got := driver.GangKey(g.Pipeline, g.Status()); got != k {
					t.Errorf("Gangs[%v] points at %v", k, got)
				}
				if g.Phase == nil || g.Phase.Name != k.Phase {
					t.Errorf("Gangs[%v].Phase = %v", k, g.Phase)
				}
			}
			if d := cmp.Diff(tc.want, summarize(snap, demand), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("snapshot (-want +got):\n%s", d)
			}
		})
	}
}

func TestBuildSnapshotCarriesFence(t *testing.T) {
	fence := &engine.Fence{}
	snap, _ := buildSnapshot(clusterView{Nodes: []corev1.Node{wrappers.MakeNode("n1", "4")}}, now, fence)
	if len(snap.Nodes) != 1 || snap.Nodes[0].Name != "n1" {
		t.Errorf("nodes %+v, want n1 (driver.Nodes)", snap.Nodes)
	}
	if snap.Fence != fence {
		t.Errorf("the fence is not carried")
	}
}

// The ledger's and queue's requests are request() of the phase attempt.
func TestBuildSnapshotRequests(t *testing.T) {
	ptA := wrappers.MakePT("a").PriorityClass("high").Phase("train", 2).Status(wrappers.Running("train", "n1", "n1")).Obj()
	q := wrappers.Queued("eval")
	q.QueuedTime, q.NotBefore = wrappers.Time(wrappers.T0.Add(time.Minute)), wrappers.Time(wrappers.T0.Add(2*time.Minute))
	ptB := wrappers.MakePT("b").Namespace("other").Phase("eval", 1).Status(q).Obj()
	classes := map[string]int32{"high": 1000}
	snap, _ := buildSnapshot(clusterView{PTs: []*v1alpha1.PhasedTraining{ptA, ptB}, Priorities: classes}, now, nil)
	wantLedger := []engine.Grant{{
		Request: driver.Request(ptA, driver.SpecPhases(ptA)["train"], &ptA.Status.Phases[0], classes),
		Workers: []string{"n1", "n1"},
		Unbound: []int32{0, 1}, // no pod exists yet
	}}
	if d := cmp.Diff(wantLedger, snap.Ledger); d != "" {
		t.Errorf("ledger (-want +got):\n%s", d)
	}
	wantQueue := []engine.Request{driver.Request(ptB, driver.SpecPhases(ptB)["eval"], &ptB.Status.Phases[0], classes)}
	if d := cmp.Diff(wantQueue, snap.Queue); d != "" {
		t.Errorf("queue (-want +got):\n%s", d)
	}
	if snap.Ledger[0].Priority != 1000 || snap.Queue[0].Gang.Pipeline != "other/b" {
		t.Errorf("ledger priority %d, queue gang %v", snap.Ledger[0].Priority, snap.Queue[0].Gang)
	}
}

// TestBuildSnapshotQuotas: a granted worker charges its quota through the
// grant (the engine counts it) whether its pod exists yet or not; the
// quota's Used keeps only what other pods use, even while status.used
// lags the pods.
func TestBuildSnapshotQuotas(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("train", 2).GPUs(1).Status(wrappers.Running("train", "n1", "n1")).Obj()
	worker0 := wrappers.MakePod("ns", driver.PodName(pt, "train", 0, 0, 0), "n1", corev1.PodRunning, "1", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
	})
	other := wrappers.MakePod("ns", "other", "n1", corev1.PodRunning, "1", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("2")
	})
	v := clusterView{
		Nodes: []corev1.Node{wrappers.GPUNode("n1", 8)},
		Pods:  []corev1.Pod{worker0, other},
		PTs:   []*v1alpha1.PhasedTraining{pt},
		// The quota controller has counted only the other pod so far.
		Quotas: []corev1.ResourceQuota{wrappers.MakeQuota("ns", "gpu").Hard("requests.nvidia.com/gpu", "4").Used("requests.nvidia.com/gpu", "2").Obj()},
	}
	snap, _ := buildSnapshot(v, wrappers.T0, nil)
	want := []engine.Quota{{Namespace: "ns", Name: "gpu", Hard: engine.ResourceList{"nvidia.com/gpu": 4000}, Used: engine.ResourceList{"nvidia.com/gpu": 2000}}}
	if diff := cmp.Diff(want, snap.Quotas); diff != "" {
		t.Fatalf("quotas (-want +got):\n%s", diff)
	}
	// The grant's two workers fill the quota: a one-GPU gang waits.
	snap.Queue = append(snap.Queue, engine.Request{Gang: engine.GangKey{Pipeline: "ns/next", Phase: "p"}, Min: 1, Desired: 1,
		Footprint: engine.ResourceList{"nvidia.com/gpu": 1000}, Created: wrappers.T0, Queued: wrappers.T0})
	plan := engine.Schedule(engine.DefaultConfig(), snap)
	if len(plan.Reserves) != 0 || len(plan.Waiting) != 1 {
		t.Fatalf("want the gang to wait for the quota, got %+v", plan)
	}
	if got, want := plan.Waiting[0].Message(), "namespace ns's quota gpu allows 0 more nvidia.com/gpu; the gang needs 1"; got != want {
		t.Errorf("wait %q, want %q", got, want)
	}
}

// TestBuildSnapshotRaceInputs: what the engine needs to find a granted
// node taken by another pod. Used counts every pod no grant covers;
// Leaving the part that goes by itself (a pod being deleted, phasegang's
// own pod whose grant ended); LastPod names the newest pod that stays;
// HostPorts are the host ports those pods bind;
// the ledger says which workers are not bound where granted, and which
// kube-scheduler refused for a reason moving may cure.
func TestBuildSnapshotRaceInputs(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("train", 4).Status(wrappers.Running("train", "n1", "n1", "n1", "n1")).Obj()
	worker := func(idx int32, node string, opts ...wrappers.PodOpt) corev1.Pod {
		return wrappers.MakePod("ns", driver.PodName(pt, "train", 0, 0, idx), node, corev1.PodPending, "1", opts...)
	}
	// The pod phasegang creates carries the pin to its granted node.
	pinned := func(p *corev1.Pod) {
		p.Spec.Affinity = driver.BuildWorkerPod(pt, &pt.Spec.Phases[0], &pt.Status.Phases[0], 1, "n1", 4).Spec.Affinity
	}
	unschedulable := func(msg string) wrappers.PodOpt {
		return func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg}}
		}
	}
	created := func(at time.Time) wrappers.PodOpt {
		return func(p *corev1.Pod) { p.CreationTimestamp.Time = at }
	}
	pods := []corev1.Pod{
		worker(0, "n1"), // bound where granted
		worker(1, "", pinned, unschedulable("0/1 nodes are available: 1 Insufficient cpu.")),
		worker(2, "", pinned, unschedulable(`0/1 nodes are available: persistentvolumeclaim "ckpt" not found.`)),
		// worker 3 has no pod yet
		wrappers.MakePod("web", "old", "n1", corev1.PodRunning, "1", created(wrappers.T0)),
		wrappers.MakePod("web", "intruder", "n1", corev1.PodRunning, "2", created(wrappers.T0.Add(time.Minute)), func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		}),
		wrappers.MakePod("web", "going", "n1", corev1.PodRunning, "1", created(wrappers.T0.Add(2*time.Minute)), func(p *corev1.Pod) {
			p.DeletionTimestamp = wrappers.Time(wrappers.T0.Add(3 * time.Minute))
		}),
		wrappers.MakePod("ns", "job-eval-0", "n1", corev1.PodRunning, "1", created(wrappers.T0.Add(2*time.Minute)), func(p *corev1.Pod) {
			p.Labels = map[string]string{driver.LabelManaged: "true"}
		}),
	}
	snap, _ := buildSnapshot(clusterView{Nodes: []corev1.Node{wrappers.MakeNode("n1", "16")}, Pods: pods, PTs: []*v1alpha1.PhasedTraining{pt}}, now, nil)
	want := engine.Node{
		Name: "n1", Allocatable: engine.ResourceList{"cpu": 16000, "pods": 110000},
		Used: cpuUsed(5000, 4), Leaving: cpuUsed(2000, 2), LastPod: "web/intruder",
		HostPorts: []engine.HostPort{{Protocol: "TCP", Port: 8080, HostIP: "0.0.0.0"}},
	}
	if d := cmp.Diff(want, snap.Nodes[0]); d != "" {
		t.Errorf("node (-want +got):\n%s", d)
	}
	g := snap.Ledger[0]
	if d := cmp.Diff([]int32{1, 2, 3}, g.Unbound); d != "" {
		t.Errorf("unbound (-want +got):\n%s", d)
	}
	wantRefused := []engine.RefusedWorker{{Index: 1, Message: "Unschedulable: 0/1 nodes are available: 1 Insufficient cpu."}}
	if d := cmp.Diff(wantRefused, g.Refused); d != "" {
		t.Errorf("refused (-want +got):\n%s", d)
	}
}
