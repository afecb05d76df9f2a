package controllers

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// The Scheduler's work with the API server (grants assumed while their
// write is in flight, a failed write, a proposal stored with a grant or
// dropped for a newer version, TenantQueues' statuses, a phase's end
// stored with its successor's grant) is tested against a real
// kube-apiserver: test/e2e/inprocess_test.go runs the Scheduler and
// Reconciler there one step at a time. What is left here is bookkeeping
// in memory, tested with no client at all.

// A proposal holds while no cycle stores it, up to proposalWait, and is
// handed back to the reconciler after that; a write of its pipeline in
// flight keeps it however long it waits (that write may be the one that
// stores it).
func TestProposalHandedBack(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("train", 2).Obj()
	pt.ResourceVersion = "1"
	first := reconcileStatus(t, pt, nil, now)
	clk := clocktesting.NewFakeClock(now)
	s := &Scheduler{Clock: clk}
	if !s.Propose(pt, first, nil) {
		t.Fatal("Propose refused a new proposal")
	}
	clk.Step(proposalWait)
	if !s.Propose(pt, first, nil) {
		t.Fatal("a proposal pending for proposalWait was handed back already")
	}
	clk.Step(time.Second)
	if s.Propose(pt, first, nil) {
		t.Fatal("a proposal pending longer than proposalWait was not handed back")
	}
	if len(s.proposed) != 0 {
		t.Fatalf("%d proposals left after one was handed back", len(s.proposed))
	}

	// With a write of the pipeline in flight (dispatch assumes it first),
	// the proposal waits.
	key := client.ObjectKeyFromObject(pt)
	if !s.assume(key, pt.ResourceVersion, first) {
		t.Fatal("assume refused the first write")
	}
	if !s.Propose(pt, first, nil) {
		t.Fatal("Propose refused a new proposal")
	}
	clk.Step(proposalWait + time.Minute)
	if !s.Propose(pt, first, nil) {
		t.Error("a proposal was handed back while a write of its pipeline was in flight")
	}
}

// settle ends a write: a proposal it carried is stored and its callback
// returned; a proposal made on the same version while the write was in
// flight (not carried) is dropped without its callback; a failed write
// drops its assumption and asks for another cycle, a successful one keeps
// it until the cache shows the write.
func TestSettle(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("train", 2).Obj()
	pt.ResourceVersion = "1"
	key := client.ObjectKeyFromObject(pt)
	st := reconcileStatus(t, pt, nil, now)
	for _, tc := range []struct {
		name                      string
		written, carried          bool
		wantCallback, wantAgain   bool
		wantProposal, wantAssumed bool
	}{
		{name: "carried and written", written: true, carried: true, wantCallback: true, wantAssumed: true},
		{name: "written, proposal made meanwhile", written: true, wantAssumed: true},
		{name: "failed", wantAgain: true, wantProposal: true},
		{name: "carried, failed", carried: true, wantAgain: true, wantProposal: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Scheduler{Clock: clocktesting.NewFakeClock(now)}
			s.init()
			if !s.assume(key, pt.ResourceVersion, st) {
				t.Fatal("assume refused the first write")
			}
			if s.assume(key, pt.ResourceVersion, st) {
				t.Fatal("assume took a second write while one was in flight")
			}
			called := 0
			if !s.Propose(pt, st, func(*v1alpha1.PhasedTraining) { called++ }) {
				t.Fatal("Propose refused a new proposal")
			}
			stored, again := s.settle(key, pt.ResourceVersion, tc.written, tc.carried)
			if stored != nil {
				stored(pt)
			}
			if got := called == 1; got != tc.wantCallback {
				t.Errorf("callback ran %d times, want it run: %v", called, tc.wantCallback)
			}
			// A second write was skipped while this one was in flight:
			// another cycle is due whatever this one did.
			if !again {
				t.Error("settle did not ask for another cycle after a skipped write")
			}
			if _, ok := s.proposed[key]; ok != tc.wantProposal {
				t.Errorf("proposal left: %v, want %v", ok, tc.wantProposal)
			}
			if _, ok := s.assumed[key]; ok != tc.wantAssumed {
				t.Errorf("assumption left: %v, want %v", ok, tc.wantAssumed)
			}
			if s.inflight[key] {
				t.Error("the write is still in flight after settle")
			}
			if _, again := s.settle(key, pt.ResourceVersion, tc.written, tc.carried); again != tc.wantAgain {
				t.Errorf("settle with no write skipped: another cycle %v, want %v", again, tc.wantAgain)
			}
		})
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
