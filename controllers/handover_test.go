package controllers

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
	"github.com/phasegang/phasegang/phases"
)

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

// A phase's end that only hands over to its successor is not written on
// its own: the scheduler stores it together with its decision on the
// successor (here a grant), in one status write, and the step is traced
// once, after that write, with the object as stored.
func TestPhaseEndIsStoredWithTheSuccessorsGrant(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(now)
	n1 := wrappers.MakeNode("n1", "4")
	var writes atomic.Int32
	c := fake.NewClientBuilder().WithScheme(Scheme()).
		WithStatusSubresource(&v1alpha1.PhasedTraining{}, &corev1.Pod{}).
		WithIndex(&corev1.Pod{}, podPipelineIndex, podPipelineKey).
		WithObjects(wrappers.MakePT("job").Phase("train", 2).Phase("validate", 1).DependsOn("train").Obj(), &n1).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if _, ok := obj.(*v1alpha1.PhasedTraining); ok {
				writes.Add(1)
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}}).Build()
	tracer := &endedPhases{}
	s := &Scheduler{Client: c, Clock: clk, Config: engine.DefaultConfig()}
	r := &Reconciler{Client: c, Clock: clk, Scheduler: s, Tracer: tracer}
	key := client.ObjectKey{Namespace: "ns", Name: "job"}
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
	}
	cycle := func() {
		t.Helper()
		if err := s.Cycle(ctx); err != nil {
			t.Fatal(err)
		}
		waitWrites(s)
	}
	stored := func() *v1alpha1.PhasedTraining {
		t.Helper()
		pt := &v1alpha1.PhasedTraining{}
		if err := c.Get(ctx, key, pt); err != nil {
			t.Fatal(err)
		}
		return pt
	}

	// train is granted and its two pods are created; both succeed.
	reconcile()
	cycle()
	reconcile()
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("%d pods after train's grant, want 2", len(pods.Items))
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		p.Status.Phase = corev1.PodSucceeded
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "worker", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}}
		if err := c.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	before := writes.Load()
	tracer.steps = nil // the first status's step

	reconcile()
	if n := writes.Load() - before; n != 0 {
		t.Fatalf("the reconciler wrote train's end itself (%d writes): it only queues validate and should be proposed", n)
	}
	if st := stored().Status.Phases[0].State; !st.Reserved() {
		t.Fatalf("train is %s before the cycle, want still reserved (as granted)", st)
	}
	if len(tracer.steps) != 0 {
		t.Fatalf("the step was traced before it was stored: %v", tracer.steps)
	}
	cycle()

	pt := stored()
	if n := writes.Load() - before; n != 1 {
		t.Errorf("%d status writes for train's end and validate's grant, want 1", n)
	}
	if ps := pt.Status.Phases; len(ps) != 2 || ps[0].State != v1alpha1.PhaseSucceeded || ps[1].State != v1alpha1.PhaseStarting || len(ps[1].Assignments) != 1 {
		t.Fatalf("stored phases = %+v, want train Succeeded and validate granted 1 worker, Starting", ps)
	}
	if len(tracer.steps) != 1 || len(tracer.steps[0]) != 1 || tracer.steps[0][0] != "train" {
		t.Errorf("traced steps %v, want one step that ended train", tracer.steps)
	}
	reconcile()
	if n := writes.Load() - before; n != 1 {
		t.Errorf("the reconcile after the write wrote the status again (%d writes in all)", n)
	}
	var validate corev1.PodList
	if err := c.List(ctx, &validate, client.MatchingLabels{"phasegang.dev/phase": "validate"}); err != nil {
		t.Fatal(err)
	}
	if len(validate.Items) != 1 {
		t.Errorf("%d validate pods after the grant was stored, want 1", len(validate.Items))
	}
}
