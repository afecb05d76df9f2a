//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/controllers"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
	"github.com/phasegang/phasegang/phases"
)

// The tests in this file run the controllers' Scheduler and Reconciler in
// this process, on the real API server, calling Cycle and Reconcile one
// step at a time: what they check is how the controller talks to the API
// server (a grant assumed while its write is in flight, a write that
// fails, a proposal stored with a grant, a create refused by quota
// admission), which a fake client could only imitate. The suite's
// controller process is stopped meanwhile (it would take the same
// decisions concurrently) and started again afterwards.
//
// The in-process controllers read through a controller-runtime cache, as
// the manager's client does; the cache watches the test's namespace only
// (and the cluster-scoped Nodes, PriorityClasses and TenantQueues), so
// what other tests left behind is no part of their decisions. Each test's
// pipelines run on a pool of its own nodes. A fake clock stands in for
// time where the test steps it (proposalWait); it starts at the current
// second, so the times the controllers write read back equal.

// inProcess is the controllers built in this process for one test.
type inProcess struct {
	// c is what the controllers use: cache reads, writes to the API
	// server through the test's interceptor.
	c     client.Client
	cache cache.Cache
	clock *clocktesting.FakeClock
	s     *controllers.Scheduler
	r     *controllers.Reconciler
}

// podPipelineIndex is the controller's pod index (controllers.Reconciler
// registers it with the manager's cache; a Reconcile lists its pods by it).
const podPipelineIndex = "phasegang.dev/pipeline"

// setLogger gives the in-process controllers' logs (a failed write the
// test injected, say) to the test's output.
var setLogger sync.Once

func startInProcess(t *testing.T, ns string, funcs interceptor.Funcs) *inProcess {
	t.Helper()
	setLogger.Do(func() { ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr))) })
	controller.stop()
	t.Cleanup(func() { controller = startController() })
	cfg, err := config.GetConfig()
	if err != nil {
		t.Fatal(err)
	}
	ca, err := cache.New(cfg, cache.Options{Scheme: controllers.Scheme(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := ca.IndexField(ctx, &corev1.Pod{}, podPipelineIndex, func(o client.Object) []string {
		if o.GetLabels()[driver.LabelManaged] != "true" || o.GetLabels()[driver.LabelPipeline] == "" {
			return nil
		}
		return []string{o.GetLabels()[driver.LabelPipeline]}
	}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	base, err := client.NewWithWatch(cfg, client.Options{Scheme: controllers.Scheme(), Cache: &client.CacheOptions{Reader: ca}})
	if err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(base, funcs)
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	s := &controllers.Scheduler{Client: c, Clock: clk, Config: engine.DefaultConfig()}
	r := &controllers.Reconciler{Client: c, APIReader: k8s, Clock: clk, Scheduler: s}
	return &inProcess{c: c, cache: ca, clock: clk, s: s, r: r}
}

// cached waits until the controllers' cache shows pt as the API server
// stores it now, and returns that object.
func (p *inProcess) cached(t *testing.T, pt *v1alpha1.PhasedTraining) *v1alpha1.PhasedTraining {
	t.Helper()
	want := get(t, pt)
	eventually(t, 20*time.Second, pt.Name+" in the controllers' cache", func() (bool, error) {
		var got v1alpha1.PhasedTraining
		if err := p.cache.Get(context.Background(), client.ObjectKeyFromObject(pt), &got); err != nil {
			return false, err
		}
		return got.ResourceVersion == want.ResourceVersion, fmt.Errorf("cache at %s, API server at %s", got.ResourceVersion, want.ResourceVersion)
	})
	return want
}

func (p *inProcess) cycle(t *testing.T) {
	t.Helper()
	if err := p.s.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (p *inProcess) reconcile(t *testing.T, pt *v1alpha1.PhasedTraining) {
	t.Helper()
	if _, err := p.r.Reconcile(context.Background(), reconcileRequest(pt)); err != nil {
		t.Fatal(err)
	}
}

// firstStatus is the status the reconciler computes for a new pipeline
// (the driver's step, as Reconcile takes it): its first phases queued.
func firstStatus(t *testing.T, pt *v1alpha1.PhasedTraining, now time.Time) *v1alpha1.PhasedTrainingStatus {
	t.Helper()
	pl, errs := driver.Compile(pt)
	if len(errs) > 0 {
		t.Fatalf("%s does not compile: %v", pt.Name, errs)
	}
	return driver.Advance(pl, pt, driver.Observe(pl, &pt.Status, nil, now), now).Status
}

// queued stores pt's first status on the API server, as the reconciler
// would with no scheduler to propose it to, and returns the object stored.
func queued(t *testing.T, pt *v1alpha1.PhasedTraining, now time.Time) *v1alpha1.PhasedTraining {
	t.Helper()
	cur := get(t, pt)
	cur.Status = *firstStatus(t, cur, now)
	if err := k8s.Status().Update(context.Background(), cur); err != nil {
		t.Fatal(err)
	}
	return cur
}

// statusWrites counts the status writes the controllers send, per object
// name, and may hold or fail the writes of one object.
type statusWrites struct {
	mu   sync.Mutex
	sent map[string]int
	done map[string]int
	// hold, if set, is the object whose first write waits for release and
	// then, if fail, fails as an unavailable API server would.
	hold    string
	release chan struct{}
	fail    error
}

func newStatusWrites() *statusWrites {
	return &statusWrites{sent: map[string]int{}, done: map[string]int{}, release: make(chan struct{})}
}

func (w *statusWrites) funcs() interceptor.Funcs {
	return interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		name := obj.GetName()
		w.mu.Lock()
		w.sent[name]++
		held := name == w.hold && w.sent[name] == 1
		w.mu.Unlock()
		var err error
		if held {
			<-w.release
			err = w.fail
		}
		if err == nil {
			err = c.SubResource(sub).Update(ctx, obj, opts...)
		}
		w.mu.Lock()
		w.done[name]++
		w.mu.Unlock()
		return err
	}}
}

func (w *statusWrites) count(name string) (sent, done int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sent[name], w.done[name]
}

// waitSent waits until n writes of name were sent; waitDone until n returned.
func (w *statusWrites) waitSent(t *testing.T, name string, n int) {
	t.Helper()
	eventually(t, 20*time.Second, fmt.Sprintf("%d status writes of %s sent", n, name), func() (bool, error) {
		s, _ := w.count(name)
		return s >= n, fmt.Errorf("%d sent", s)
	})
}

func (w *statusWrites) waitDone(t *testing.T, name string, n int) {
	t.Helper()
	eventually(t, 20*time.Second, fmt.Sprintf("%d status writes of %s returned", n, name), func() (bool, error) {
		_, d := w.count(name)
		return d >= n, fmt.Errorf("%d returned", d)
	})
}

// granted is how many workers pt's first phase holds on the API server.
func granted(t *testing.T, pt *v1alpha1.PhasedTraining) int {
	t.Helper()
	cur := get(t, pt)
	if len(cur.Status.Phases) == 0 {
		return 0
	}
	return len(cur.Status.Phases[0].Assignments)
}

// cycleReturns runs a cycle and fails the test if it does not return
// while a write it sent is held.
func cycleReturns(t *testing.T, p *inProcess) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.s.Cycle(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cycle waited for its status write")
	}
}

// A cycle does not wait for its status writes: the grant is assumed at
// once, so the next cycle counts it and grants nothing twice while the
// write is in flight; a write that fails drops the assumption and the
// capacity is free again.
func TestCycleAssumesGrantsUntilTheirWriteReturns(t *testing.T) {
	ns := namespace(t)
	pool := "pool-assume-" + ns[strings.LastIndex(ns, "-")+1:]
	nodes(t, pool, 1, 4)
	w := newStatusWrites()
	w.hold, w.fail = "job", fmt.Errorf("test: the API server is away")
	p := startInProcess(t, ns, w.funcs())

	job := create(t, wrappers.NewPT(ns, "job").Phase("train", 4).PodTemplate(worker(pool, 1, 600, "")).Obj())
	queued(t, job, p.clock.Now())
	p.cached(t, job)
	cycleReturns(t, p) // returns with job's grant write held
	w.waitSent(t, "job", 1)

	// A second pipeline for the same 4 GPUs, while job's grant is in flight.
	next := create(t, wrappers.NewPT(ns, "next").Phase("train", 4).PodTemplate(worker(pool, 1, 600, "")).Obj())
	queued(t, next, p.clock.Now())
	p.cached(t, next)
	p.cycle(t)
	if sent, _ := w.count("next"); sent > 0 {
		w.waitDone(t, "next", sent)
	}
	if n := granted(t, next); n != 0 {
		t.Fatalf("while job's grant was in flight, next was granted %d workers of the same 4 GPUs: the cycle did not count the assumed grant", n)
	}
	if sent, _ := w.count("job"); sent != 1 {
		t.Errorf("%d status writes of job while its first was in flight, want 1", sent)
	}

	// The write fails: the assumption goes and the 4 GPUs are granted
	// again, once.
	close(w.release)
	w.waitDone(t, "job", 1)
	if n := granted(t, job); n != 0 {
		t.Fatalf("job holds %d workers after its grant's write failed", n)
	}
	eventually(t, 30*time.Second, "the 4 GPUs granted again after the failed write", func() (bool, error) {
		p.cycle(t)
		a, b := granted(t, job), granted(t, next)
		if a+b > 4 {
			t.Fatalf("job holds %d and next %d workers of 4 GPUs", a, b)
		}
		return a+b == 4, fmt.Errorf("job holds %d, next %d", a, b)
	})
}

// A new pipeline's first status, proposed by the reconciler, is stored by
// the next cycle together with the grant: one status write, after which
// the reconciler has nothing to write before it creates the pods.
func TestProposedFirstStatusIsWrittenWithTheGrant(t *testing.T) {
	ns := namespace(t)
	pool := "pool-propose-" + ns[strings.LastIndex(ns, "-")+1:]
	nodes(t, pool, 1, 4)
	w := newStatusWrites()
	p := startInProcess(t, ns, w.funcs())

	job := create(t, wrappers.NewPT(ns, "job").Phase("train", 2).PodTemplate(worker(pool, 1, 600, "")).Obj())
	stored := p.cached(t, job)
	p.reconcile(t, job) // proposes the first status
	if sent, _ := w.count("job"); sent != 0 {
		t.Fatalf("the reconciler wrote a new pipeline's first status itself (%d writes): it should propose it", sent)
	}
	first := firstStatus(t, stored, p.clock.Now())
	p.cycle(t)
	w.waitDone(t, "job", 1)

	pt := p.cached(t, job)
	ps := pt.Status.Phases
	if len(ps) != 1 || ps[0].State != v1alpha1.PhaseStarting || len(ps[0].Assignments) != 2 {
		t.Fatalf("stored phases = %+v, want train granted 2 workers and Starting", ps)
	}
	if ps[0].QueuedTime == nil || !ps[0].QueuedTime.Equal(first.Phases[0].QueuedTime) || pt.Status.ObservedGeneration != first.ObservedGeneration {
		t.Errorf("the proposal's queue time %v / observed generation %d were not kept: %v / %d",
			first.Phases[0].QueuedTime, first.ObservedGeneration, ps[0].QueuedTime, pt.Status.ObservedGeneration)
	}
	if pt.Status.TraceID == "" {
		t.Error("the stored status has no trace id: the reconciler's proposal was not the status written")
	}

	// The reconcile after the grant writes nothing and creates the pods.
	p.clock.Step(time.Second)
	p.reconcile(t, job)
	if sent, _ := w.count("job"); sent != 1 {
		t.Errorf("%d status writes, want 1 (the first status and the grant together)", sent)
	}
	if n := len(pods(t, ns, map[string]string{driver.LabelPipeline: "job"})); n != 2 {
		t.Errorf("%d worker pods after the reconcile that followed the grant, want 2", n)
	}
	// The proposal is gone: one for the version it was made on is new
	// again, not handed back as overdue.
	p.clock.Step(time.Minute)
	if !p.s.Propose(stored, first, nil) {
		t.Error("the stored proposal was left behind after its write")
	}
}

// A proposal holds for the version it was computed from: a newer version
// of the object drops it, and the cycle writes nothing of it.
// (TestProposalHandedBack in package controllers checks when a proposal
// no cycle stores is handed back to the reconciler.)
func TestProposalForAnOlderVersionIsDropped(t *testing.T) {
	ns := namespace(t)
	pool := "pool-older-" + ns[strings.LastIndex(ns, "-")+1:]
	nodes(t, pool, 1, 4)
	w := newStatusWrites()
	p := startInProcess(t, ns, w.funcs())

	job := create(t, wrappers.NewPT(ns, "job").Phase("train", 2).PodTemplate(worker(pool, 1, 600, "")).Obj())
	stored := p.cached(t, job)
	first := firstStatus(t, stored, p.clock.Now())
	if !p.s.Propose(stored, first, nil) {
		t.Fatal("Propose refused a new proposal")
	}
	touched := stored.DeepCopy()
	touched.Labels = map[string]string{"touched": "yes"}
	if err := k8s.Update(context.Background(), touched); err != nil {
		t.Fatal(err)
	}
	p.cached(t, job)
	p.cycle(t)
	time.Sleep(time.Second) // a write the cycle sent would have returned
	if sent, _ := w.count("job"); sent != 0 {
		t.Errorf("%d status writes: a proposal for an older version was used", sent)
	}
	if ps := get(t, job).Status.Phases; len(ps) != 0 {
		t.Errorf("stored phases %+v, want none (the proposal was for an older version)", ps)
	}
	p.clock.Step(time.Minute)
	if !p.s.Propose(stored, first, nil) {
		t.Error("the proposal for an older version was left behind: it was handed back as overdue")
	}
}

// A proposal made while a write of the cycle's own is in flight for the
// same version is not that write's: the write does not carry it or run
// its callback, and the proposal, stale once the write lands, is dropped
// for the reconcile of the new version to decide again. While that write
// is in flight the proposal is not handed back either, however long it
// waits.
func TestProposalDuringAnotherWrite(t *testing.T) {
	ns := namespace(t)
	pool := "pool-during-" + ns[strings.LastIndex(ns, "-")+1:]
	nodes(t, pool, 1, 4)
	w := newStatusWrites()
	w.hold = "job"
	p := startInProcess(t, ns, w.funcs())

	job := create(t, wrappers.NewPT(ns, "job").Phase("train", 2).PodTemplate(worker(pool, 1, 600, "")).Obj())
	queued(t, job, p.clock.Now())
	stored := p.cached(t, job)
	cycleReturns(t, p) // the grant's write, held
	w.waitSent(t, "job", 1)

	var mu sync.Mutex
	callbacks := 0
	count := func(*v1alpha1.PhasedTraining) { mu.Lock(); callbacks++; mu.Unlock() }
	proposed := stored.Status.DeepCopy()
	proposed.Iteration = 7 // any step of the reconciler's
	if !p.s.Propose(stored, proposed, count) {
		t.Fatal("Propose refused a new proposal")
	}
	p.clock.Step(30 * time.Second) // beyond proposalWait
	if !p.s.Propose(stored, proposed, count) {
		t.Error("a proposal was handed back while a write of its pipeline was in flight")
	}
	close(w.release)
	w.waitDone(t, "job", 1)
	// The watch event of the write reaches the cache long after the
	// scheduler settled the write (in the writing goroutine, right after
	// it returned).
	pt := p.cached(t, job)
	if pt.Status.Iteration == 7 || len(pt.Status.Phases) != 1 || len(pt.Status.Phases[0].Assignments) != 2 {
		t.Fatalf("stored iteration %d, phases %+v: want the grant of 2 workers without the proposal", pt.Status.Iteration, pt.Status.Phases)
	}
	mu.Lock()
	n := callbacks
	mu.Unlock()
	if n != 0 {
		t.Errorf("the grant's write ran the proposal's callback %d times: it did not carry the proposal", n)
	}
	if !p.s.Propose(stored, proposed, count) {
		t.Error("the proposal on the version the write replaced was left behind (handed back as overdue)")
	}
	if sent, _ := w.count("job"); sent != 1 {
		t.Errorf("%d status writes, want the grant's 1", sent)
	}
}

// A cycle admits against the TenantQueues it lists: a pipeline borrows an
// idle cohort member's quota, the next one waits for its queue with the
// numbers, and each queue's use is written to its status.
func TestCycleAdmitsAgainstTenantQueues(t *testing.T) {
	ns := namespace(t)
	sfx := ns[strings.LastIndex(ns, "-")+1:]
	pool, qa, qb, cohort := "pool-tq-"+sfx, "team-a-"+sfx, "team-b-"+sfx, "research-"+sfx
	nodes(t, pool, 1, 8)
	createQueue(t, wrappers.MakeQueue(qa).Cohort(cohort).Nominal("nvidia.com/gpu", "2").Obj())
	createQueue(t, wrappers.MakeQueue(qb).Cohort(cohort).Nominal("nvidia.com/gpu", "4").Obj())
	w := newStatusWrites()
	p := startInProcess(t, ns, w.funcs())

	burst := create(t, wrappers.NewPT(ns, "burst").Queue(qa).Phase("train", 4).PodTemplate(worker(pool, 1, 600, "")).Obj())
	// next is younger by a second at least: creation times have 1 s
	// resolution, and the queue orders by age.
	time.Sleep(time.Until(get(t, burst).CreationTimestamp.Add(1100 * time.Millisecond)))
	next := create(t, wrappers.NewPT(ns, "next").Queue(qa).Phase("train", 3).PodTemplate(worker(pool, 1, 600, "")).Obj())
	for _, pt := range []*v1alpha1.PhasedTraining{burst, next} {
		queued(t, pt, p.clock.Now())
		p.cached(t, pt)
	}
	eventually(t, 20*time.Second, "the queues in the controllers' cache", func() (bool, error) {
		var l v1alpha1.TenantQueueList
		if err := p.cache.List(context.Background(), &l); err != nil {
			return false, err
		}
		n := 0
		for _, q := range l.Items {
			if q.Name == qa || q.Name == qb {
				n++
			}
		}
		return n == 2, fmt.Errorf("%d of 2", n)
	})
	p.cycle(t)
	for _, name := range []string{"burst", "next", qa, qb} {
		w.waitDone(t, name, 1)
	}

	if n := granted(t, burst); n != 4 {
		t.Errorf("burst: %d workers granted, want 4 (2 nominal + 2 borrowed from %s)", n, qb)
	}
	want := fmt.Sprintf("queue %s allows 2 more nvidia.com/gpu (nominal 2, 4 in use, with what cohort %s lends now); the gang needs 3", qa, cohort)
	if ps := get(t, next).Status.Phases[0]; ps.State != v1alpha1.PhaseQueued || ps.WaitingFor != want {
		t.Errorf("next: %s waiting for %q, want Queued waiting for %q", ps.State, ps.WaitingFor, want)
	}
	for name, want := range map[string]v1alpha1.TenantQueueStatus{
		qa: {
			Resources:     []v1alpha1.QueueResourceUsage{{Name: "nvidia.com/gpu", Nominal: resource.MustParse("2"), Used: resource.MustParse("4"), Borrowed: resource.MustParse("2")}},
			Usage:         "nvidia.com/gpu: 4/2 (2 borrowed)",
			AdmittedGangs: 1, PendingGangs: 1,
		},
		qb: {
			Resources: []v1alpha1.QueueResourceUsage{{Name: "nvidia.com/gpu", Nominal: resource.MustParse("4"), Used: resource.MustParse("0"), Borrowed: resource.MustParse("0")}},
			Usage:     "nvidia.com/gpu: 0/4",
		},
	} {
		q := getQueue(t, name)
		// The status observed the queue's spec (generation 1 on the API
		// server; a fake client left it 0).
		want.ObservedGeneration = q.Generation
		if d := cmp.Diff(want, q.Status); d != "" {
			t.Errorf("%s status (-want +got):\n%s", name, d)
		}
	}
}

// endedPhases is a PhaseTracer that keeps, per Step, the phases the
// stored status shows ended that the status before did not.
type endedPhases struct {
	mu    sync.Mutex
	steps [][]string
}

func (e *endedPhases) Step(_ context.Context, before, after *v1alpha1.PhasedTraining, _ phases.Step) {
	was := map[string]bool{}
	for _, ps := range before.Status.Phases {
		was[ps.Name] = ps.State.Ended()
	}
	var ended []string
	for _, ps := range after.Status.Phases {
		if ps.State.Ended() && !was[ps.Name] {
			ended = append(ended, ps.Name)
		}
	}
	e.mu.Lock()
	e.steps = append(e.steps, ended)
	e.mu.Unlock()
}

func (e *endedPhases) get() [][]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([][]string(nil), e.steps...)
}

func (e *endedPhases) reset() {
	e.mu.Lock()
	e.steps = nil
	e.mu.Unlock()
}

// A phase's end that only hands over to its successor is not written on
// its own: the scheduler stores it together with its decision on the
// successor (here a grant), in one status write, and the step is traced
// once, after that write, with the object as stored.
func TestPhaseEndIsStoredWithTheSuccessorsGrant(t *testing.T) {
	ns := namespace(t)
	pool := "pool-handover-" + ns[strings.LastIndex(ns, "-")+1:]
	nodes(t, pool, 1, 4)
	w := newStatusWrites()
	p := startInProcess(t, ns, w.funcs())
	tracer := &endedPhases{}
	p.r.Tracer = tracer

	// train's two workers run for a second (kwok ends them).
	job := create(t, wrappers.NewPT(ns, "job").Phase("train", 2).PodTemplate(worker(pool, 1, 1, "")).
		Phase("validate", 1).PodTemplate(worker(pool, 1, 600, "")).DependsOn("train").Obj())
	p.cached(t, job)
	p.reconcile(t, job) // proposes the first status
	p.cycle(t)          // stores it with train's grant
	w.waitDone(t, "job", 1)
	p.cached(t, job)
	p.reconcile(t, job) // creates train's pods
	if n := len(pods(t, ns, map[string]string{driver.LabelPipeline: "job", driver.LabelPhase: "train"})); n != 2 {
		t.Fatalf("%d pods after train's grant, want 2", n)
	}
	eventually(t, 60*time.Second, "train's pods Succeeded in the controllers' cache", func() (bool, error) {
		var l corev1.PodList
		if err := p.cache.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
			return false, err
		}
		done := 0
		for _, pod := range l.Items {
			if pod.Status.Phase == corev1.PodSucceeded {
				done++
			}
		}
		return done == 2, fmt.Errorf("%d of %d Succeeded", done, len(l.Items))
	})
	p.clock.SetTime(time.Now().Truncate(time.Second))
	before, _ := w.count("job")
	tracer.reset() // the first status's step

	p.reconcile(t, job)
	if n, _ := w.count("job"); n != before {
		t.Fatalf("the reconciler wrote train's end itself (%d writes): it only queues validate and should be proposed", n-before)
	}
	if st := get(t, job).Status.Phases[0].State; !st.Reserved() {
		t.Fatalf("train is %s before the cycle, want still reserved (as granted)", st)
	}
	if s := tracer.get(); len(s) != 0 {
		t.Fatalf("the step was traced before it was stored: %v", s)
	}
	p.cycle(t)
	w.waitDone(t, "job", before+1)

	pt := p.cached(t, job)
	if n, _ := w.count("job"); n != before+1 {
		t.Errorf("%d status writes for train's end and validate's grant, want 1", n-before)
	}
	if ps := pt.Status.Phases; len(ps) != 2 || ps[0].State != v1alpha1.PhaseSucceeded || ps[1].State != v1alpha1.PhaseStarting || len(ps[1].Assignments) != 1 {
		t.Fatalf("stored phases = %+v, want train Succeeded and validate granted 1 worker, Starting", ps)
	}
	// The step is traced once the scheduler settled its write.
	eventually(t, 10*time.Second, "the handover's step traced", func() (bool, error) {
		return len(tracer.get()) > 0, nil
	})
	if s := tracer.get(); len(s) != 1 || len(s[0]) != 1 || s[0][0] != "train" {
		t.Errorf("traced steps %v, want one step that ended train", s)
	}
	p.reconcile(t, job)
	if n, _ := w.count("job"); n != before+1 {
		t.Errorf("the reconcile after the write wrote the status again (%d writes since train ended)", n-before)
	}
	if n := len(pods(t, ns, map[string]string{driver.LabelPipeline: "job", driver.LabelPhase: "validate"})); n != 1 {
		t.Errorf("%d validate pods after the grant was stored, want 1", n)
	}
}

// With the namespace's quota full, a create that repeats one the cache
// does not show yet is refused by quota admission, not AlreadyExists: the
// pod that exists on the API server makes it no refusal, and the gang
// keeps its grant. A pod that does not exist is refused as before, and
// its gang released.
func TestRefusedCreateOfAnExistingPodIsNoRefusal(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	pool := "pool-refused-" + ns[strings.LastIndex(ns, "-")+1:]
	nodes(t, pool, 1, 4)
	p := startInProcess(t, ns, interceptor.Funcs{})

	job := create(t, wrappers.NewPT(ns, "job").Phase("train", 2).PodTemplate(worker(pool, 1, 600, "")).Obj())
	other := create(t, wrappers.NewPT(ns, "other").Phase("train", 1).PodTemplate(worker(pool, 1, 600, "")).Obj())
	for _, pt := range []*v1alpha1.PhasedTraining{job, other} {
		queued(t, pt, p.clock.Now())
		p.cached(t, pt)
	}
	p.cycle(t) // grants both: there is no quota yet
	eventually(t, 20*time.Second, "both pipelines granted", func() (bool, error) {
		return granted(t, job) == 2 && granted(t, other) == 1, fmt.Errorf("job %d, other %d", granted(t, job), granted(t, other))
	})
	quota := &corev1.ResourceQuota{}
	quota.Namespace, quota.Name = ns, "gpu-quota"
	quota.Spec.Hard = corev1.ResourceList{"requests.nvidia.com/gpu": gpuResources(2)["nvidia.com/gpu"]}
	if err := k8s.Create(ctx, quota); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the quota's status counted", func() (bool, error) {
		var q corev1.ResourceQuota
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(quota), &q); err != nil {
			return false, err
		}
		return len(q.Status.Hard) > 0, fmt.Errorf("status %+v", q.Status)
	})

	// job's two pods take the quota's 2 GPUs.
	p.cached(t, job)
	p.reconcile(t, job)
	if n := len(pods(t, ns, map[string]string{driver.LabelPipeline: "job"})); n != 2 {
		t.Fatalf("%d pods of job, want 2", n)
	}
	// other's pod is over the quota: refused, and its gang released.
	p.cached(t, other)
	p.reconcile(t, other)
	eventually(t, 20*time.Second, "other's gang released", func() (bool, error) {
		cur := get(t, other)
		return granted(t, other) == 0, fmt.Errorf("%s", describe(cur))
	})
	if n := len(pods(t, ns, map[string]string{driver.LabelPipeline: "other"})); n != 0 {
		t.Errorf("%d pods of other were created over the quota", n)
	}

	// A reconcile of job whose cache does not show its pods yet creates
	// them again; quota admission refuses the creates before the store
	// could say AlreadyExists, and the pods that exist make it no refusal.
	var mu sync.Mutex
	var creates []error
	stale := interceptor.NewClient(p.c.(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.PodList); ok {
				return nil // the cache does not show the pods yet
			}
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			err := c.Create(ctx, obj, opts...)
			if _, ok := obj.(*corev1.Pod); ok {
				mu.Lock()
				creates = append(creates, err)
				mu.Unlock()
			}
			return err
		},
	})
	r := &controllers.Reconciler{Client: stale, APIReader: k8s, Clock: p.clock}
	before := get(t, job)
	if _, err := r.Reconcile(ctx, reconcileRequest(job)); err != nil {
		t.Fatalf("reconcile with the pods not in the cache: %v", err)
	}
	mu.Lock()
	refusedByQuota := 0
	for _, err := range creates {
		if err != nil && strings.Contains(err.Error(), "exceeded quota") {
			refusedByQuota++
		}
	}
	n := len(creates)
	mu.Unlock()
	if n != 2 || refusedByQuota != 2 {
		t.Fatalf("the repeated creates: %v; want both refused by quota admission (the premise of this test)", creates)
	}
	after := get(t, job)
	if a, b := before.Status.Phases[0], after.Status.Phases[0]; !b.State.Reserved() || b.Attempt != a.Attempt || len(b.Assignments) != 2 {
		t.Errorf("job after the refused repeats: %s, want its grant of 2 kept in attempt %d", describe(after), a.Attempt)
	}
}

func reconcileRequest(pt *v1alpha1.PhasedTraining) ctrl.Request {
	return ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pt)}
}
