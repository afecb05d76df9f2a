package controllers

import (
	"fmt"
	"slices"
	"strings"
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
	"github.com/phasegang/phasegang/internal/wrappers"
	"github.com/phasegang/phasegang/sim"
)

// The parity test: the simulator claims to measure what the controller
// does. Both call the same driver (Advance, ApplyPlan, Demand, SyncWorkers)
// and the same engine; what each has of its own is how it feeds the
// engine. The controller rebuilds a whole engine.Snapshot every cycle from
// the API objects it reads (buildSnapshot: nodes less what pods no grant
// covers use, the ledger rebuilt from the statuses, quotas, queues); the
// simulator keeps one incremental engine.State, built from its scenario's
// node pools, quotas and queues, and tells it each pipeline's demand as it
// changes (driver.DemandOf, DeltaOf) with the attempt's queue time. That
// the engine's two entry points agree on the same input is the engine's
// own TestPropPureMatchesState; this test holds the two translations to
// the same input and the same plans: for each workload below, the first
// cycle with every pipeline queued, and the cycle after its grants were
// stored and their pods run.
//
// It used to run the controller's Reconciler and Scheduler over
// controller-runtime's fake client on a virtual clock and compare the
// final statuses. It does not run against the real API server instead:
// the API server sets creationTimestamp itself, from the wall clock at
// 1 s resolution, and the engine orders gangs by it and measures the
// starvation bound from it, so a virtual clock of hours (these workloads
// run for up to three) cannot be put beside it, and pipelines created in
// the same second tie where the simulator's arrive minutes apart. What the
// controller does with the API server (assumed grants, proposals, refused
// creates) is tested there, in test/e2e; what it decides is this.

func parityScenarios() map[string]*sim.Scenario {
	rt := func(kv ...any) map[string]metav1.Duration {
		m := map[string]metav1.Duration{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = metav1.Duration{Duration: kv[i+1].(time.Duration)}
		}
		return m
	}
	wl := func(pt *v1alpha1.PhasedTraining, arrival time.Duration, runtimes map[string]metav1.Duration) sim.Workload {
		return sim.Workload{Training: *pt, Arrival: metav1.Duration{Duration: arrival}, Runtimes: runtimes}
	}
	seed := wrappers.MakePT("job").Namespace("ml").
		Phase("train", 4).GPUs(1).
		Phase("validate", 2).GPUs(1).DependsOn("train").Outputs("accuracy").
		Phase("test", 1).GPUs(1).DependsOn("validate").When("float(phases.validate.outputs.accuracy) >= 0.8").Obj()
	seedW := wl(seed, 0, rt("train", 30*time.Minute, "validate", 5*time.Minute, "test", 5*time.Minute))
	seedW.Count, seedW.Interval = 3, metav1.Duration{Duration: time.Minute}
	seedW.Outputs = map[string][]map[string]string{"validate": {{"accuracy": "0.91"}}}

	elastic := wrappers.MakePT("elastic").Namespace("ml").Phase("train", 2).Desired(4).GPUs(1).Obj()
	urgent := wrappers.MakePT("urgent").Namespace("ml").Priority(100).Phase("train", 2).GPUs(1).Obj()

	retry := wrappers.MakePT("retry").Namespace("ml").Phase("train", 2).GPUs(1).Retries(1).Obj()
	retryW := wl(retry, 0, rt("train", time.Hour))
	retryW.Failures = []sim.Failure{{Phase: "train", After: metav1.Duration{Duration: 10 * time.Minute}}}

	siblings := wrappers.MakePT("siblings").Namespace("ml").Phase("a", 2).GPUs(1).Phase("b", 2).GPUs(1).Obj()
	siblingsW := wl(siblings, 0, rt("a", time.Hour, "b", time.Hour))
	siblingsW.Failures = []sim.Failure{{Phase: "b", After: metav1.Duration{Duration: 10 * time.Minute}}}
	next := wrappers.MakePT("next").Namespace("ml").Phase("a", 4).GPUs(1).Obj()

	lost := wrappers.MakePT("lost").Namespace("ml").Phase("train", 4).GPUs(4).Obj()

	never := wrappers.MakePT("never").Namespace("ml").Phase("train", 2).GPUs(1).Phase("test", 1).GPUs(8).DependsOn("train").Obj()

	// In a namespace whose quota admits 4 GPUs on an 8-GPU node: the
	// elastic gang grows only to the quota's 4, the rigid gangs wait for
	// the quota, and run whole one after the other.
	quotaElastic := wrappers.MakePT("qe").Namespace("ml").Phase("train", 2).Desired(6).GPUs(1).Obj()
	quotaRigid := wrappers.MakePT("qr").Namespace("ml").Phase("train", 4).GPUs(1).Obj()
	quotaRigidW := wl(quotaRigid, time.Minute, rt("train", 20*time.Minute))
	quotaRigidW.Count, quotaRigidW.Interval = 2, metav1.Duration{Duration: time.Minute}
	gpuQuota := wrappers.MakeQuota("ml", "gpu-quota").Hard("requests.nvidia.com/gpu", "4").Obj()

	pool := func(name string, count int, gpus int64) sim.Cluster {
		return sim.Cluster{NodePools: []sim.NodePool{{Name: name, Count: count, Allocatable: corev1.ResourceList{
			"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI), corev1.ResourceCPU: resource.MustParse("64"),
			corev1.ResourcePods: resource.MustParse("110"),
		}}}}
	}
	return map[string]*sim.Scenario{
		"seed": {Cluster: pool("gpu", 1, 4), Workload: []sim.Workload{seedW}},
		"elastic shrink and grow": {Cluster: pool("gpu", 1, 4), Workload: []sim.Workload{
			wl(elastic, 0, rt("train", time.Hour)), wl(urgent, 10*time.Minute, rt("train", 20*time.Minute))}},
		"failure with retry": {Cluster: pool("gpu", 1, 4), Workload: []sim.Workload{retryW}},
		"pipeline failure stops its siblings": {Cluster: pool("gpu", 1, 4), Workload: []sim.Workload{
			siblingsW, wl(next, time.Second, rt("a", time.Minute))}},
		"node loss": {Cluster: pool("gpu", 5, 4), Workload: []sim.Workload{wl(lost, 0, rt("train", time.Hour))},
			NodeFailures: []sim.NodeFailure{{Node: "gpu-0", At: metav1.Duration{Duration: 10 * time.Minute}}}},
		"a phase that never fits": {Cluster: pool("gpu", 1, 4), Workload: []sim.Workload{
			wl(never, 0, rt("train", time.Hour, "test", time.Minute))}},
		"a namespace quota": {Cluster: pool("gpu", 1, 8), Quotas: []corev1.ResourceQuota{gpuQuota}, Workload: []sim.Workload{
			wl(quotaElastic, 0, rt("train", time.Hour)), quotaRigidW}},
	}
}

func TestParityWithTheSimulator(t *testing.T) {
	cfg := engine.DefaultConfig()
	for name, sc := range parityScenarios() {
		t.Run(name, func(t *testing.T) {
			pts, queuedAt := parityPipelines(t, sc)
			var now time.Time
			for _, at := range queuedAt {
				if at.After(now) {
					now = at
				}
			}

			// The controller: a snapshot of the objects it reads.
			v := clusterView{Nodes: parityNodes(sc), PTs: pts, Quotas: sc.Quotas, Queues: sc.Queues, Priorities: sc.PriorityClasses}
			snap, demand := buildSnapshot(v, now, nil)

			// The simulator: its State, told each pipeline's demand.
			st := engine.NewState(cfg, sc.Cluster.Nodes(), nil)
			if len(sc.Quotas) > 0 {
				qs := make([]corev1.ResourceQuota, len(sc.Quotas))
				for i := range sc.Quotas {
					qs[i] = *sc.Quotas[i].DeepCopy()
				}
				st.SetQuotas(driver.Quotas(qs, nil, nil, sim.Epoch))
			}
			if len(sc.Queues) > 0 {
				st.SetQueues(driver.Queues(sc.Queues))
			}
			var submitted, upcoming []engine.Request
			for _, pt := range pts {
				d := driver.DeltaOf(driver.Demand{}, driver.DemandOf(pt, &pt.Status, sc.PriorityClasses))
				for _, r := range d.Submit {
					r.Queued = queuedAt[pt.Name] // as the simulator's enqueue
					st.Submit(r)
					submitted = append(submitted, r)
				}
				st.Expect(pt.Namespace+"/"+pt.Name, d.Upcoming)
				upcoming = append(upcoming, d.Upcoming...)
			}

			if d := cmp.Diff(sc.Cluster.Nodes(), snap.Nodes, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("nodes (-simulator +controller):\n%s", d)
			}
			byGang := func(a, b engine.Request) int { return cmpGang(a.Gang, b.Gang) }
			slices.SortFunc(submitted, byGang)
			if d := cmp.Diff(submitted, slices.SortedFunc(slices.Values(snap.Queue), byGang), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("queued gangs (-simulator +controller):\n%s", d)
			}
			slices.SortFunc(upcoming, byGang)
			if d := cmp.Diff(upcoming, slices.SortedFunc(slices.Values(snap.Upcoming), byGang), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("upcoming phases (-simulator +controller):\n%s", d)
			}
			want := st.Cycle(now)
			got := engine.Schedule(cfg, snap)
			if len(want.Reserves) == 0 && len(want.Infeasible) == 0 {
				t.Fatal("the first cycle neither granted nor found anything infeasible: the workload shows nothing")
			}
			if d := cmp.Diff(want, got, cmpopts.EquateEmpty(), cmpopts.EquateApproxTime(0)); d != "" {
				t.Errorf("first cycle's plan (-simulator +controller):\n%s", d)
			}

			// The grants are stored (driver.ApplyPlan, as both do) and
			// their pods run where they were granted: the controller
			// rebuilds its ledger from the statuses, the simulator's State
			// holds the plan already.
			changes := driver.Changes{}
			driver.ApplyPlan(got, demand, now, changes)
			var pods []corev1.Pod
			for _, pt := range pts {
				if c, ok := changes[pt.Namespace+"/"+pt.Name]; ok {
					pt.Status = *c.Status
				}
				for _, w := range driver.SyncWorkers(pt, nil, func(string) bool { return true }).Create {
					pod := driver.BuildWorkerPod(pt, w.Phase, w.Status, w.Index, w.Node, w.WorldSize)
					pod.Spec.NodeName, pod.Status.Phase = w.Node, corev1.PodRunning
					pods = append(pods, *pod)
				}
			}
			if len(pods) == 0 != (len(got.Reserves) == 0) {
				t.Fatalf("%d worker pods for the first cycle's %d grants", len(pods), len(got.Reserves))
			}
			later := now.Add(time.Minute)
			v.Pods = pods
			snap, _ = buildSnapshot(v, later, got.Fence)
			byGrant := func(a, b engine.Grant) int { return cmpGang(a.Gang, b.Gang) }
			if d := cmp.Diff(slices.SortedFunc(slices.Values(st.Grants()), byGrant), slices.SortedFunc(slices.Values(snap.Ledger), byGrant), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("ledger after the first cycle (-simulator +controller):\n%s", d)
			}
			if d := cmp.Diff(st.Cycle(later), engine.Schedule(cfg, snap), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("second cycle's plan (-simulator +controller):\n%s", d)
			}
		})
	}
}

func cmpGang(a, b engine.GangKey) int {
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

// parityPipelines are the scenario's pipelines as the controller reads
// them once each has arrived and its first status is stored (the
// driver's step at its arrival), with their queue times.
func parityPipelines(t *testing.T, sc *sim.Scenario) ([]*v1alpha1.PhasedTraining, map[string]time.Time) {
	var pts []*v1alpha1.PhasedTraining
	queuedAt := map[string]time.Time{}
	for i := range sc.Workload {
		w := &sc.Workload[i]
		for r := range max(w.Count, 1) {
			arrive := sim.Epoch.Add(w.Arrival.Duration + time.Duration(r)*w.Interval.Duration)
			b := wrappers.FromSpec(&w.Training).Created(arrive)
			pt := b.Obj()
			if w.Count > 1 {
				pt.Name = fmt.Sprintf("%s-%d", pt.Name, r)
			}
			pt.Status = *reconcileStatus(t, pt, nil, arrive)
			queuedAt[pt.Name] = arrive
			pts = append(pts, pt)
		}
	}
	return pts, queuedAt
}

// parityNodes are the Node objects of the scenario's node pools.
func parityNodes(sc *sim.Scenario) []corev1.Node {
	var out []corev1.Node
	for _, n := range sc.Cluster.Nodes() {
		for _, np := range sc.Cluster.NodePools {
			if len(n.Name) > len(np.Name) && n.Name[:len(np.Name)+1] == np.Name+"-" {
				out = append(out, corev1.Node{
					ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: np.Labels},
					Spec:       corev1.NodeSpec{Taints: np.Taints},
					Status:     corev1.NodeStatus{Allocatable: np.Allocatable, Capacity: np.Allocatable},
				})
			}
		}
	}
	return out
}
