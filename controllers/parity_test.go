package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
	"github.com/phasegang/phasegang/phases"
	"github.com/phasegang/phasegang/sim"
)

// The parity test: the simulator claims to measure what the controller
// does. Here the same small workloads run twice, once in the simulator and
// once through the controller's own Reconciler and Scheduler over an
// in-memory API (controller-runtime's fake client, for this test only: the
// e2e suite is the proof on a real cluster), with a test-side kubelet that
// runs pods for exactly as long as the simulator's workers run. Every
// phase attempt must end with the same states, grants and times.

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
	for name, sc := range parityScenarios() {
		t.Run(name, func(t *testing.T) {
			sc.Name = name
			want, err := sim.Run(sc, sim.Options{Policy: sim.PolicyPhasegang, Record: true})
			if err != nil {
				t.Fatal(err)
			}
			got := runOnController(t, sc)
			if len(want.Statuses) == 0 {
				t.Fatal("the simulator ran no pipeline")
			}
			for key, st := range want.Statuses {
				if d := cmp.Diff(attemptsOf(st), attemptsOf(got[key])); d != "" {
					t.Errorf("%s: phase attempts differ (-simulator +controller):\n%s", key, d)
				}
				if w, g := st.State, got[key].State; w != g {
					t.Errorf("%s: simulator ends %s, controller %s", key, w, g)
				}
			}
			if len(got) != len(want.Statuses) {
				t.Errorf("controller ran %d pipelines, simulator %d", len(got), len(want.Statuses))
			}
		})
	}
}

// attempt is what must agree of one phase attempt; waitingFor and
// messages are left out (the simulator skips the engine's explanations).
type attempt struct {
	Key                              string
	State                            v1alpha1.PhaseState
	Queued, Reserved, Started, Ended string
	Assignments                      []string
	History                          []string
	Workers                          v1alpha1.WorkerCounts
}

func attemptsOf(st *v1alpha1.PhasedTrainingStatus) []attempt {
	if st == nil {
		return nil
	}
	at := func(t *metav1.Time) string {
		if t == nil {
			return ""
		}
		return t.Sub(sim.Epoch).String()
	}
	var out []attempt
	for _, ps := range st.Phases {
		a := attempt{
			Key: fmt.Sprintf("%s#%d.%d", ps.Name, ps.Iteration, ps.Attempt), State: ps.State,
			Queued: at(ps.QueuedTime), Reserved: at(ps.ReservedTime), Started: at(ps.StartTime), Ended: at(ps.EndTime),
			Assignments: ps.Assignments, Workers: ps.Workers,
		}
		for _, h := range ps.History {
			a.History = append(a.History, fmt.Sprintf("%s %s %d", at(&h.Time), h.Type, h.Workers))
		}
		out = append(out, a)
	}
	return out
}

// parityHarness drives the controller's Reconciler and Scheduler over a
// fake API on a virtual clock, with a kubelet that plays the pods.
type parityHarness struct {
	t     *testing.T
	ctx   context.Context
	sc    *sim.Scenario
	c     client.Client
	clock *clocktesting.FakeClock
	r     *Reconciler
	s     *Scheduler
	// arrivals are the pipelines still to create, by arrival.
	arrivals []arrival
	// workloads maps "namespace/name" to the pipeline's workload.
	workloads map[string]*sim.Workload
	gangs     map[string]*playedGang
}

type arrival struct {
	at time.Time
	pt *v1alpha1.PhasedTraining
	w  *sim.Workload
}

// playedGang is one running phase attempt: its work is the simulator's
// (runtime × desired worker-seconds, done at one unit per worker).
type playedGang struct {
	w       *sim.Workload
	in      phases.Instance
	started time.Time
	work    float64 // worker-seconds left
	workers int
	last    time.Time
	failAt  time.Time
}

func runOnController(t *testing.T, sc *sim.Scenario) map[string]*v1alpha1.PhasedTrainingStatus {
	h := newParityHarness(t, sc)
	for range 10000 {
		h.settle()
		next, ok := h.nextEvent()
		if !ok {
			break
		}
		h.clock.SetTime(next)
		h.fire(next)
	}
	var list v1alpha1.PhasedTrainingList
	if err := h.c.List(h.ctx, &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]*v1alpha1.PhasedTrainingStatus{}
	for i := range list.Items {
		out[list.Items[i].Namespace+"/"+list.Items[i].Name] = &list.Items[i].Status
	}
	return out
}

func newParityHarness(t *testing.T, sc *sim.Scenario) *parityHarness {
	h := &parityHarness{t: t, ctx: context.Background(), sc: sc, clock: clocktesting.NewFakeClock(sim.Epoch), gangs: map[string]*playedGang{}, workloads: map[string]*sim.Workload{}}
	b := fake.NewClientBuilder().WithScheme(Scheme()).
		WithStatusSubresource(&v1alpha1.PhasedTraining{}, &corev1.Pod{}).
		WithIndex(&corev1.Pod{}, podPipelineIndex, podPipelineKey)
	for _, np := range sc.Cluster.NodePools {
		for i := range np.Count {
			b = b.WithObjects(&corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", np.Name, i), Labels: np.Labels},
				Spec:       corev1.NodeSpec{Taints: np.Taints},
				Status:     corev1.NodeStatus{Allocatable: np.Allocatable, Capacity: np.Allocatable},
			})
		}
	}
	for i := range sc.Quotas {
		b = b.WithObjects(sc.Quotas[i].DeepCopy())
	}
	h.c = b.Build()
	h.s = &Scheduler{Client: h.c, Clock: h.clock, Config: engine.DefaultConfig()}
	h.r = &Reconciler{Client: h.c, Clock: h.clock, Scheduler: h.s}
	for i := range sc.Workload {
		w := &sc.Workload[i]
		for r := range max(w.Count, 1) {
			pt := w.Training.DeepCopy()
			if w.Count > 1 {
				pt.Name = fmt.Sprintf("%s-%d", pt.Name, r)
			}
			arrive := sim.Epoch.Add(w.Arrival.Duration + time.Duration(r)*w.Interval.Duration)
			pt.UID, pt.Generation, pt.CreationTimestamp = types.UID("uid-"+pt.Name), 1, metav1.NewTime(arrive)
			h.arrivals = append(h.arrivals, arrival{at: arrive, pt: pt, w: w})
			h.workloads[pt.Namespace+"/"+pt.Name] = w
		}
	}
	slices.SortStableFunc(h.arrivals, func(a, b arrival) int { return a.at.Compare(b.at) })
	h.fire(sim.Epoch)
	return h
}

// settle reconciles every pipeline and runs scheduling cycles, letting
// the kubelet start created pods, until nothing changes at this instant.
func (h *parityHarness) settle() {
	for range 200 {
		before := h.fingerprint()
		var list v1alpha1.PhasedTrainingList
		if err := h.c.List(h.ctx, &list); err != nil {
			h.t.Fatal(err)
		}
		for _, pt := range list.Items {
			if _, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&pt)}); err != nil {
				h.t.Fatalf("reconcile %s: %v", pt.Name, err)
			}
		}
		if err := h.s.Cycle(h.ctx); err != nil {
			h.t.Fatal(err)
		}
		waitWrites(h.s)
		h.kubelet()
		if h.fingerprint() == before {
			return
		}
	}
	h.t.Fatal("the controller does not settle")
}

// fingerprint changes whenever any object does.
func (h *parityHarness) fingerprint() string {
	var b strings.Builder
	var pts v1alpha1.PhasedTrainingList
	var pods corev1.PodList
	var nodes corev1.NodeList
	_ = h.c.List(h.ctx, &pts)
	_ = h.c.List(h.ctx, &pods)
	_ = h.c.List(h.ctx, &nodes)
	for _, o := range pts.Items {
		b.WriteString(o.Name + o.ResourceVersion + ";")
	}
	for _, o := range pods.Items {
		b.WriteString(o.Name + o.ResourceVersion + ";")
	}
	fmt.Fprintf(&b, "%d", len(nodes.Items))
	return b.String()
}

// kubelet binds new pods to their pinned node and starts them at once (as
// the simulator's workers start when reserved), and keeps each gang's
// work account as workers come and go.
func (h *parityHarness) kubelet() {
	now := h.clock.Now()
	var pods corev1.PodList
	if err := h.c.List(h.ctx, &pods); err != nil {
		h.t.Fatal(err)
	}
	running := map[string]int{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == "" || p.Status.Phase == corev1.PodPending {
			p.Spec.NodeName = pinnedNode(p)
			if err := h.c.Update(h.ctx, p); err != nil {
				h.t.Fatal(err)
			}
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "worker", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}}}
			if err := h.c.Status().Update(h.ctx, p); err != nil {
				h.t.Fatal(err)
			}
		}
		if p.Status.Phase == corev1.PodRunning {
			running[gangOf(p)]++
		}
	}
	for key, n := range running {
		g := h.gangs[key]
		if g == nil {
			g = h.startGang(key, now)
		}
		g.account(now)
		g.workers = n
	}
	for key := range h.gangs {
		if running[key] == 0 {
			delete(h.gangs, key) // stopped: its pods are gone
		}
	}
}

func (h *parityHarness) startGang(key string, now time.Time) *playedGang {
	pipeline, in := splitGang(key)
	w := h.workloadOf(pipeline)
	g := &playedGang{w: w, in: in, started: now, last: now}
	for _, ph := range w.Training.Spec.Phases {
		if ph.Name == in.Name {
			g.work = w.Runtimes[in.Name].Seconds() * float64(ph.Gang.DesiredOrMin())
		}
	}
	for _, f := range w.Failures {
		if f.Phase == in.Name && f.Iteration == in.Iteration && f.Attempt == in.Attempt {
			g.failAt = now.Add(f.After.Duration)
		}
	}
	h.gangs[key] = g
	return g
}

func (g *playedGang) account(now time.Time) {
	g.work -= now.Sub(g.last).Seconds() * float64(g.workers)
	g.last = now
}

func (g *playedGang) endsAt() time.Time {
	end := g.last.Add(time.Duration(g.work / float64(max(g.workers, 1)) * float64(time.Second)))
	if !g.failAt.IsZero() && g.failAt.Before(end) {
		return g.failAt
	}
	return end
}

// nextEvent is the next arrival, node failure or gang end.
func (h *parityHarness) nextEvent() (time.Time, bool) {
	var next time.Time
	consider := func(t time.Time) {
		if t.After(h.clock.Now()) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, a := range h.arrivals {
		consider(a.at)
	}
	for _, f := range h.sc.NodeFailures {
		consider(sim.Epoch.Add(f.At.Duration))
	}
	for _, g := range h.gangs {
		consider(g.endsAt())
	}
	return next, !next.IsZero()
}

// fire carries out what happens at now: pipelines arrive, nodes fail,
// gangs end (all workers succeed, or the chief fails and the rest end).
func (h *parityHarness) fire(now time.Time) {
	for len(h.arrivals) > 0 && !h.arrivals[0].at.After(now) {
		if err := h.c.Create(h.ctx, h.arrivals[0].pt); err != nil {
			h.t.Fatal(err)
		}
		h.arrivals = h.arrivals[1:]
	}
	for _, f := range h.sc.NodeFailures {
		if sim.Epoch.Add(f.At.Duration).Equal(now) {
			if err := h.c.Delete(h.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: f.Node}}); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	for key, g := range h.gangs {
		if end := g.endsAt(); end.Equal(now) || end.Before(now) {
			h.endGang(key, g, now, !g.failAt.IsZero() && !g.failAt.After(now))
			delete(h.gangs, key)
		}
	}
}

func (h *parityHarness) endGang(key string, g *playedGang, now time.Time, failed bool) {
	var pods corev1.PodList
	if err := h.c.List(h.ctx, &pods); err != nil {
		h.t.Fatal(err)
	}
	msg := ""
	if outs := g.w.Outputs[g.in.Name]; len(outs) > 0 && !failed {
		b, _ := json.Marshal(outs[min(int(g.in.Iteration), len(outs)-1)])
		msg = string(b)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if gangOf(p) != key || p.Status.Phase != corev1.PodRunning {
			continue
		}
		idx, _ := driver.WorkerIndex(p)
		p.Status.Phase = corev1.PodSucceeded
		if failed && idx == 0 {
			p.Status.Phase = corev1.PodFailed
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "worker", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			StartedAt: metav1.NewTime(g.started), FinishedAt: metav1.NewTime(now), Message: msg,
		}}}}
		if err := h.c.Status().Update(h.ctx, p); err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *parityHarness) workloadOf(pipeline string) *sim.Workload {
	w, ok := h.workloads[pipeline]
	if !ok {
		h.t.Fatalf("no workload for %s", pipeline)
	}
	return w
}

// gangOf keys a pod by its pipeline and phase attempt.
func gangOf(p *corev1.Pod) string {
	in, _, _ := driver.PodInstance(p)
	return fmt.Sprintf("%s/%s|%s|%d|%d", p.Namespace, p.OwnerReferences[0].Name, in.Name, in.Iteration, in.Attempt)
}

func splitGang(key string) (string, phases.Instance) {
	parts := strings.Split(key, "|")
	var it, at int32
	fmt.Sscanf(parts[2], "%d", &it)
	fmt.Sscanf(parts[3], "%d", &at)
	return parts[0], phases.Instance{Name: parts[1], Iteration: it, Attempt: at}
}

// pinnedNode reads the node a worker pod is pinned to.
func pinnedNode(p *corev1.Pod) string {
	for _, term := range p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}
