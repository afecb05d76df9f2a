package driver

import (
	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
)

// LedgerDelta is what an incremental engine.State must be told when a
// pipeline's status changes: the simulator keeps one State for a whole run
// instead of rebuilding a Snapshot every cycle, and learns from it which
// gangs to submit, withdraw and release.
type LedgerDelta struct {
	// Submit lists attempts newly queued.
	Submit []engine.Request
	// Withdraw lists attempts no longer queued and not granted.
	Withdraw []engine.GangKey
	// Release lists grants no longer held.
	Release []engine.GangKey
	// Upcoming is the pipeline's upcoming phases now (State.Expect).
	Upcoming []engine.Request
}

// Delta compares a pipeline's demand under two statuses (the same Demand
// the controller builds every cycle, so both see the same requests).
func Delta(pt *v1alpha1.PhasedTraining, before, after *v1alpha1.PhasedTrainingStatus, classes Priorities) LedgerDelta {
	return DeltaOf(DemandOf(pt, before, classes), DemandOf(pt, after, classes))
}

// DeltaOf compares two demands of one pipeline. A caller that keeps the
// last Demand (the simulator) builds one Demand per status change, not two.
func DeltaOf(old, cur Demand) LedgerDelta {
	var d LedgerDelta
	d.Upcoming = cur.Upcoming
	oldQueued, curQueued := keySet(old.Queue), keySet(cur.Queue)
	oldGranted, curGranted := grantSet(old.Ledger), grantSet(cur.Ledger)
	for _, r := range cur.Queue {
		if !oldQueued[r.Gang] || oldGranted[r.Gang] {
			d.Submit = append(d.Submit, r)
		}
	}
	for _, r := range old.Queue {
		if !curQueued[r.Gang] && !curGranted[r.Gang] {
			d.Withdraw = append(d.Withdraw, r.Gang)
		}
	}
	for _, g := range old.Ledger {
		if !curGranted[g.Gang] {
			d.Release = append(d.Release, g.Gang)
		}
	}
	return d
}

// DemandOf is a pipeline's demand under status st (none for a nil st).
func DemandOf(pt *v1alpha1.PhasedTraining, st *v1alpha1.PhasedTrainingStatus, classes Priorities) Demand {
	return DemandIn(pt, st, classes, nil)
}

// DemandIn is DemandOf on a cluster with topology levels (Demand.Levels).
func DemandIn(pt *v1alpha1.PhasedTraining, st *v1alpha1.PhasedTrainingStatus, classes Priorities, levels []string) Demand {
	d := Demand{Levels: levels}
	if st == nil {
		return d
	}
	view := *pt
	view.Status = *st
	d.Add(&view, classes)
	return d
}

func keySet(rs []engine.Request) map[engine.GangKey]bool {
	out := make(map[engine.GangKey]bool, len(rs))
	for _, r := range rs {
		out[r.Gang] = true
	}
	return out
}

func grantSet(gs []engine.Grant) map[engine.GangKey]bool {
	out := make(map[engine.GangKey]bool, len(gs))
	for _, g := range gs {
		out[g.Gang] = true
	}
	return out
}
