package controllers

import (
	"context"
	"k8s.io/apimachinery/pkg/api/resource"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// A cycle does not wait for its status writes: the grant is assumed at
// once, so the next cycle counts it and grants nothing twice while the
// write is in flight; a write that fails drops the assumption and the
// capacity is free again.
func TestCycleAssumesGrantsUntilTheirWriteReturns(t *testing.T) {
	ctx := context.Background()
	pt := wrappers.MakePT("job").Phase("train", 2).Obj()
	pt.Status = *reconcileStatus(t, pt, nil, now)
	n1 := wrappers.MakeNode("n1", "4")
	release := make(chan struct{})
	var writes atomic.Int32
	c := fake.NewClientBuilder().WithScheme(Scheme()).
		WithStatusSubresource(&v1alpha1.PhasedTraining{}).
		WithObjects(pt.DeepCopy(), &n1).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
			writes.Add(1)
			<-release
			return apierrors.NewServiceUnavailable("test: the API server is away")
		}}).Build()
	s := &Scheduler{Client: c, Clock: clocktesting.NewFakeClock(now)}
	key := client.ObjectKeyFromObject(pt)
	granted := func() int {
		v, err := s.view(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range v.PTs {
			if client.ObjectKeyFromObject(p) == key {
				return len(p.Status.Phases[0].Assignments)
			}
		}
		t.Fatal("pipeline not in view")
		return 0
	}

	if err := s.Cycle(ctx); err != nil { // returns with the write blocked
		t.Fatal(err)
	}
	if got := granted(); got != 2 {
		t.Fatalf("while the write is in flight, the view shows %d workers granted, want the assumed 2", got)
	}
	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	for writes.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	waitWrites(s)
	if n := writes.Load(); n != 1 {
		t.Errorf("%d status writes for one pipeline, want 1: the second cycle must count the assumed grant", n)
	}
	if got := granted(); got != 0 {
		t.Errorf("after the write failed, the view shows %d workers granted, want 0", got)
	}
}

// waitWrites waits until the scheduler has no status write in flight.
func waitWrites(s *Scheduler) {
	for {
		s.mu.Lock()
		busy := len(s.inflight) > 0
		s.mu.Unlock()
		if !busy {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// proposeFirstStatus does what the reconciler does for a new pipeline:
// it computes the first status of the stored object and proposes it.
func proposeFirstStatus(ctx context.Context, t *testing.T, c client.Client, s *Scheduler, key client.ObjectKey) (*v1alpha1.PhasedTraining, *v1alpha1.PhasedTrainingStatus) {
	t.Helper()
	pt := &v1alpha1.PhasedTraining{}
	if err := c.Get(ctx, key, pt); err != nil {
		t.Fatal(err)
	}
	first := reconcileStatus(t, pt, nil, now)
	if !s.Propose(pt, first, nil) {
		t.Fatal("Propose refused a new proposal")
	}
	return pt, first
}

// A new pipeline's first status, proposed by the reconciler, is stored by
// the next cycle together with the grant: one status write, after which
// the reconciler has nothing to write before it creates the pods.
func TestProposedFirstStatusIsWrittenWithTheGrant(t *testing.T) {
	ctx := context.Background()
	n1 := wrappers.MakeNode("n1", "4")
	var writes atomic.Int32
	c := fake.NewClientBuilder().WithScheme(Scheme()).
		WithStatusSubresource(&v1alpha1.PhasedTraining{}).
		WithObjects(wrappers.MakePT("job").Phase("train", 2).Obj(), &n1).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			writes.Add(1)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}}).Build()
	s := &Scheduler{Client: c, Clock: clocktesting.NewFakeClock(now)}
	key := client.ObjectKey{Namespace: "ns", Name: "job"}
	pt, first := proposeFirstStatus(ctx, t, c, s, key)
	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	waitWrites(s)

	if err := c.Get(ctx, key, pt); err != nil {
		t.Fatal(err)
	}
	if n := writes.Load(); n != 1 {
		t.Errorf("%d status writes, want 1 (the first status and the grant together)", n)
	}
	ps := pt.Status.Phases
	if len(ps) != 1 || ps[0].State != v1alpha1.PhaseStarting || len(ps[0].Assignments) != 2 {
		t.Fatalf("stored phases = %+v, want train granted 2 workers and Starting", ps)
	}
	if ps[0].QueuedTime == nil || !ps[0].QueuedTime.Equal(first.Phases[0].QueuedTime) || pt.Status.ObservedGeneration != first.ObservedGeneration {
		t.Errorf("the proposal's queue time %v / observed generation %d were not kept: %v / %d",
			first.Phases[0].QueuedTime, first.ObservedGeneration, ps[0].QueuedTime, pt.Status.ObservedGeneration)
	}
	if after := reconcileStatus(t, pt, nil, now.Add(time.Second)); !equality.Semantic.DeepEqual(&pt.Status, after) {
		t.Errorf("the reconcile after the grant would write the status again:\n%s", cmp.Diff(pt.Status, *after))
	}
	s.mu.Lock()
	left := len(s.proposed)
	s.mu.Unlock()
	if left != 0 {
		t.Errorf("%d proposals left after the write", left)
	}
}

// A proposal holds for the version it was computed from, and one that no
// cycle stores within proposalWait is handed back to the reconciler.
func TestProposalLifetime(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(Scheme()).
		WithStatusSubresource(&v1alpha1.PhasedTraining{}).
		WithObjects(wrappers.MakePT("job").Phase("train", 2).Obj()).Build()
	clk := clocktesting.NewFakeClock(now)
	s := &Scheduler{Client: c, Clock: clk}
	key := client.ObjectKey{Namespace: "ns", Name: "job"}
	pt, first := proposeFirstStatus(ctx, t, c, s, key)
	clk.Step(proposalWait)
	if !s.Propose(pt, first, nil) {
		t.Fatal("a proposal pending for proposalWait was handed back already")
	}
	clk.Step(time.Second)
	if s.Propose(pt, first, nil) {
		t.Fatal("a proposal pending longer than proposalWait was not handed back")
	}

	// A newer version of the object drops the proposal.
	if !s.Propose(pt, first, nil) {
		t.Fatal("Propose refused a new proposal")
	}
	pt.Labels = map[string]string{"touched": "yes"}
	if err := c.Update(ctx, pt); err != nil {
		t.Fatal(err)
	}
	v, err := s.view(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Proposed) != 0 || len(v.PTs) != 1 || len(v.PTs[0].Status.Phases) != 0 {
		t.Errorf("a proposal for an older version was used: proposed %d, phases %+v", len(v.Proposed), v.PTs[0].Status.Phases)
	}
	s.mu.Lock()
	left := len(s.proposed)
	s.mu.Unlock()
	if left != 0 {
		t.Errorf("%d proposals left for an older version", left)
	}
}

// A cycle admits against the TenantQueues it lists: a pipeline borrows an
// idle cohort member's quota, the next one waits for its queue with the
// numbers, and each queue's use is written to its status.
func TestCycleAdmitsAgainstTenantQueues(t *testing.T) {
	ctx := context.Background()
	node := wrappers.GPUNode("n1", 8)
	teamA := wrappers.MakeQueue("team-a").Cohort("research").Nominal("nvidia.com/gpu", "2").Obj()
	teamB := wrappers.MakeQueue("team-b").Cohort("research").Nominal("nvidia.com/gpu", "4").Obj()
	objs := []client.Object{&node, &teamA, &teamB}
	for i, name := range []string{"burst", "next"} {
		pt := wrappers.MakePT(name).Queue("team-a").Created(wrappers.T0.Add(time.Duration(i)*time.Minute)).Phase("train", int32(4-i)).GPUs(1).Obj()
		pt.Status = *reconcileStatus(t, pt, nil, now)
		objs = append(objs, pt)
	}
	c := fake.NewClientBuilder().WithScheme(Scheme()).
		WithStatusSubresource(&v1alpha1.PhasedTraining{}, &v1alpha1.TenantQueue{}).
		WithObjects(objs...).Build()
	s := &Scheduler{Client: c, Clock: clocktesting.NewFakeClock(now)}
	if err := s.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	waitWrites(s)
	for len(s.writers) > 0 {
		time.Sleep(time.Millisecond)
	}

	get := func(name string) v1alpha1.PhaseStatus {
		var pt v1alpha1.PhasedTraining
		if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, &pt); err != nil {
			t.Fatal(err)
		}
		return pt.Status.Phases[0]
	}
	if ps := get("burst"); len(ps.Assignments) != 4 {
		t.Errorf("burst: %d workers granted, want 4 (2 nominal + 2 borrowed from team-b)", len(ps.Assignments))
	}
	want := "queue team-a allows 2 more nvidia.com/gpu (nominal 2, 4 in use, with what cohort research lends now); the gang needs 3"
	if ps := get("next"); ps.State != v1alpha1.PhaseQueued || ps.WaitingFor != want {
		t.Errorf("next: %s waiting for %q, want Queued waiting for %q", ps.State, ps.WaitingFor, want)
	}
	for name, want := range map[string]v1alpha1.TenantQueueStatus{
		"team-a": {
			Resources:     []v1alpha1.QueueResourceUsage{{Name: "nvidia.com/gpu", Nominal: resource.MustParse("2"), Used: resource.MustParse("4"), Borrowed: resource.MustParse("2")}},
			Usage:         "nvidia.com/gpu: 4/2 (2 borrowed)",
			AdmittedGangs: 1, PendingGangs: 1,
		},
		"team-b": {
			Resources: []v1alpha1.QueueResourceUsage{{Name: "nvidia.com/gpu", Nominal: resource.MustParse("4"), Used: resource.MustParse("0"), Borrowed: resource.MustParse("0")}},
			Usage:     "nvidia.com/gpu: 0/4",
		},
	} {
		var tq v1alpha1.TenantQueue
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &tq); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, tq.Status); d != "" {
			t.Errorf("%s status (-want +got):\n%s", name, d)
		}
	}
}

func TestWakeAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		recheck time.Time
		want    time.Duration
		wake    bool
	}{
		{time.Time{}, 0, false},                           // nothing timed ahead
		{now.Add(2 * time.Second), 2 * time.Second, true}, // before the next tick
		{now.Add(time.Minute), time.Minute, false},        // the ticker comes first
		{now.Add(-time.Second), 0, true},                  // already due: at once
	} {
		d, ok := wakeAfter(tc.recheck, now, 5*time.Second)
		if d != tc.want || ok != tc.wake {
			t.Errorf("wakeAfter(%v) = %v, %v; want %v, %v", tc.recheck.Sub(now), d, ok, tc.want, tc.wake)
		}
	}
}

// A proposal made while a write of the cycle's own is in flight for the
// same version is not that write's: the write does not run its callback
// (the status it stored does not show the proposed step), and the
// proposal, stale once the write lands, is dropped for the reconcile of
// the new version to decide again. While that write is in flight the
// proposal is not handed back either, however long it waits.
func TestProposalDuringAnotherWrite(t *testing.T) {
	ctx := context.Background()
	pt := wrappers.MakePT("job").Phase("train", 2).Obj()
	pt.Status = *reconcileStatus(t, pt, nil, now)
	n1 := wrappers.MakeNode("n1", "4")
	release := make(chan struct{})
	var writes atomic.Int32
	c := fake.NewClientBuilder().WithScheme(Scheme()).
		WithStatusSubresource(&v1alpha1.PhasedTraining{}).
		WithObjects(pt.DeepCopy(), &n1).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			writes.Add(1)
			<-release
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}}).Build()
	clk := clocktesting.NewFakeClock(now)
	s := &Scheduler{Client: c, Clock: clk}
	if err := s.Cycle(ctx); err != nil { // the grant's write, held
		t.Fatal(err)
	}
	for writes.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	stored := &v1alpha1.PhasedTraining{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pt), stored); err != nil {
		t.Fatal(err)
	}
	var callbacks atomic.Int32
	proposed := stored.Status.DeepCopy()
	proposed.Iteration = 7 // any step of the reconciler's
	count := func(*v1alpha1.PhasedTraining) { callbacks.Add(1) }
	if !s.Propose(stored, proposed, count) {
		t.Fatal("Propose refused a new proposal")
	}
	clk.Step(proposalWait + time.Second)
	if !s.Propose(stored, proposed, count) {
		t.Error("a proposal was handed back while a write of its pipeline was in flight")
	}
	close(release)
	waitWrites(s)
	if n := callbacks.Load(); n != 0 {
		t.Errorf("the grant's write ran the proposal's callback %d times: it did not carry the proposal", n)
	}
	s.mu.Lock()
	left := len(s.proposed)
	s.mu.Unlock()
	if left != 0 {
		t.Errorf("%d proposals left on a version the write replaced", left)
	}
}
