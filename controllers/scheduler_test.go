package controllers

import (
	"context"
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
	if !s.Propose(pt, first) {
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
	if len(ps) != 1 || ps[0].State != v1alpha1.PhaseRunning || len(ps[0].Assignments) != 2 {
		t.Fatalf("stored phases = %+v, want train granted 2 workers", ps)
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
	if !s.Propose(pt, first) {
		t.Fatal("a proposal pending for proposalWait was handed back already")
	}
	clk.Step(time.Second)
	if s.Propose(pt, first) {
		t.Fatal("a proposal pending longer than proposalWait was not handed back")
	}

	// A newer version of the object drops the proposal.
	if !s.Propose(pt, first) {
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
