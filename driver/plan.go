package driver

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/phases"
)

// Change is one pipeline's new status after a scheduling cycle, with the
// events that tell it.
type Change struct {
	Pipeline *v1alpha1.PhasedTraining
	Status   *v1alpha1.PhasedTrainingStatus
	Events   []Event
}

// Changes collects a cycle's changes, one per pipeline ("namespace/name").
type Changes map[string]*Change

// Touch returns the pipeline's change, starting it from its status.
func (cs Changes) Touch(pt *v1alpha1.PhasedTraining) *Change {
	key := pt.Namespace + "/" + pt.Name
	c, ok := cs[key]
	if !ok {
		c = &Change{Pipeline: pt, Status: pt.Status.DeepCopy()}
		cs[key] = c
	}
	return c
}

// Keys returns the changed pipelines in name order.
func (cs Changes) Keys() []string {
	keys := make([]string, 0, len(cs))
	for k := range cs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ApplyPlan turns one engine Plan into status changes of the pipelines it
// concerns: lost and displaced gangs queued again, workers moved, refused
// workers that stay, surplus given back, new grants and growth, what
// queued gangs wait for, and Infeasible set or lifted. Every
// changed status then gets the conditions and state its phases imply.
// The pipelines the Demand was built from are read, never written.
func ApplyPlan(plan engine.Plan, d *Demand, now time.Time, changes Changes) {
	stamp := metav1.NewTime(now)
	for _, rel := range plan.Releases {
		if g, ok := d.Gangs[rel.Gang]; ok && Requeues(rel.Reason) {
			applyRequeue(changes.Touch(g.Pipeline), g.Index, rel, stamp)
		}
	}
	for _, mv := range plan.Moves {
		if g, ok := d.Gangs[mv.Gang]; ok {
			applyMove(changes.Touch(g.Pipeline), g.Index, mv, stamp)
		}
	}
	for _, rf := range plan.Refused {
		if g, ok := d.Gangs[rf.Gang]; ok {
			applyRefused(g, rf, stamp, changes)
		}
	}
	for _, shr := range plan.Shrinks {
		if g, ok := d.Gangs[shr.Gang]; ok {
			applyShrink(changes.Touch(g.Pipeline), g.Index, shr, stamp)
		}
	}
	for _, rv := range plan.Reserves {
		if g, ok := d.Gangs[rv.Gang]; ok {
			applyReserve(changes.Touch(g.Pipeline), g, rv, now)
		}
	}
	for _, gr := range plan.Grows {
		if g, ok := d.Gangs[gr.Gang]; ok {
			applyGrow(changes.Touch(g.Pipeline), g.Index, gr, stamp)
		}
	}
	applyWaiting(plan.Waiting, d, changes)
	applyInfeasible(plan.Infeasible, d, changes)
	applyNoClass(d, changes)
	for _, c := range changes {
		if !settled(c.Status) {
			setPhaseConditions(c.Status, c.Pipeline.Generation)
		}
		c.Status.State = v1alpha1.StateFromConditions(c.Status.Conditions)
		setWorkersSummary(c.Pipeline, c.Status)
		if d.NodeDomains != nil {
			setWorkerDomains(c.Status, d.NodeDomains)
		}
	}
}

// Requeues says whether a release is the cluster's fault, not the job's:
// the gang is released whole and the same attempt queued again.
func Requeues(r engine.ReleaseReason) bool {
	return r == engine.ReleaseNodeLost || r == engine.ReleaseDisplaced || r == engine.ReleasePreempted
}

// applyRequeue queues the same attempt again for a fresh gang: a lost
// node, or capacity a pod phasegang does not manage took before the gang
// was bound, breaks the gang; the attempt keeps the pipeline's age, and
// the job's retries are not spent on the cluster's fault.
func applyRequeue(c *Change, i int, rel engine.Release, stamp metav1.Time) {
	ps := &c.Status.Phases[i]
	typ, reason := v1alpha1.PhaseEventNodeLost, "NodeLost"
	switch rel.Reason {
	case engine.ReleaseDisplaced:
		typ, reason = v1alpha1.PhaseEventDisplaced, "Displaced"
	case engine.ReleasePreempted:
		typ, reason = v1alpha1.PhaseEventPreempted, "Preempted"
	}
	ps.AddHistory(v1alpha1.PhaseEvent{Time: stamp, Type: typ, Message: rel.Message})
	ps.State, ps.Message = v1alpha1.PhaseQueued, rel.Message+"; the gang was released and queued again"
	ps.Assignments, ps.Reservation, ps.ReservedTime, ps.StartTime = nil, nil, nil, nil
	ps.Workers.Granted, ps.Workers.Running = 0, 0
	ps.WaitingFor = ""
	ps.QueuedTime = &stamp
	c.Events = append(c.Events, warning(reason, "Schedule", fmt.Sprintf("phase %s: %s; gang released and queued again", PhaseLabel(ps), rel.Message)))
}

// applyMove gives moved workers their new nodes; the rest of the gang and
// its pods stay. The workers' old pods, pinned elsewhere, are replaced by
// SyncWorkers.
func applyMove(c *Change, i int, mv engine.Move, stamp metav1.Time) {
	ps := &c.Status.Phases[i]
	for _, w := range mv.Workers {
		if int(w.Index) < len(ps.Assignments) && ps.Assignments[w.Index] == w.From {
			ps.Assignments[w.Index] = w.To
		}
	}
	setReservation(ps)
	ps.AddHistory(v1alpha1.PhaseEvent{Time: stamp, Type: v1alpha1.PhaseEventMoved, Workers: ps.Workers.Granted, Message: mv.Message})
	c.Events = append(c.Events, warning("WorkersMoved", "Schedule", fmt.Sprintf("phase %s: %s", PhaseLabel(ps), mv.Message)))
}

// applyRefused says, once, that a worker kube-scheduler refused stays on
// its node because no other node fits it: the history and an Event carry
// it, and nothing is written again while the engine says the same.
func applyRefused(g Gang, rf engine.Refusal, stamp metav1.Time, changes Changes) {
	if slices.ContainsFunc(g.Status().History, func(e v1alpha1.PhaseEvent) bool {
		return e.Type == v1alpha1.PhaseEventRefused && e.Message == rf.Message
	}) {
		return
	}
	c := changes.Touch(g.Pipeline)
	ps := &c.Status.Phases[g.Index]
	ps.AddHistory(v1alpha1.PhaseEvent{Time: stamp, Type: v1alpha1.PhaseEventRefused, Workers: ps.Workers.Granted, Message: rf.Message})
	c.Events = append(c.Events, warning("WorkerRefused", "Schedule", fmt.Sprintf("phase %s: %s", PhaseLabel(ps), rf.Message)))
}

func applyShrink(c *Change, i int, shr engine.Shrink, stamp metav1.Time) {
	ps := &c.Status.Phases[i]
	ps.Assignments = ps.Assignments[:len(ps.Assignments)-len(shr.Workers)]
	setReservation(ps)
	ps.AddHistory(v1alpha1.PhaseEvent{Time: stamp, Type: v1alpha1.PhaseEventShrink, Workers: ps.Workers.Granted,
		Message: fmt.Sprintf("gave back %d surplus workers for %s", len(shr.Workers), shr.For.Pipeline)})
	c.Events = append(c.Events, normal("Shrunk", "Schedule", fmt.Sprintf("phase %s gave back %d surplus workers (now %d) for %s", PhaseLabel(ps), len(shr.Workers), len(ps.Assignments), shr.For.Pipeline)))
}

func applyReserve(c *Change, g Gang, rv engine.Reservation, now time.Time) {
	i := g.Index
	ps := &c.Status.Phases[i]
	nodes := make([]string, len(rv.Workers))
	for _, w := range rv.Workers {
		nodes[w.Index] = w.Node
	}
	var wait time.Duration
	if ps.QueuedTime != nil {
		wait = now.Sub(ps.QueuedTime.Time)
	}
	Reserve(c.Status, i, nodes, now)
	// The gang's size, so the status can tell Starting from Running (at
	// least min workers run): from the phase the Demand read.
	phases.SetSize(&ps.Workers, g.Phase.Gang)
	setCondition(c.Status, c.Pipeline.Generation, v1alpha1.ConditionInfeasible, false, v1alpha1.ReasonGangReserved, "the gang fits")
	if wait >= NoteworthyWait {
		c.Events = append(c.Events, normal("Reserved", "Schedule", fmt.Sprintf("phase %s: reserved %d workers on %s after %s queued", PhaseLabel(ps), len(nodes), reservationText(ps.Reservation), wait.Round(time.Second))))
	}
}

// NoteworthyWait is how long a phase must have been queued for its
// reservation to be an Event: a person reads why a phase started late,
// not that one started at once (the phase's history records every
// reservation, and each Event is one more API write).
const NoteworthyWait = time.Minute

// Reserve records a grant in phase status i: the phase's gang is
// reserved, worker w on nodes[w], and Starting (no pod of it exists yet;
// Advance makes it Running once its workers run). The simulator's
// baseline policies, which grant outside the engine's gangs, record their
// grants with it too.
func Reserve(st *v1alpha1.PhasedTrainingStatus, i int, nodes []string, now time.Time) {
	stamp := metav1.NewTime(now)
	ps := &st.Phases[i]
	ps.State = v1alpha1.PhaseStarting
	ps.Workers.Running, ps.Workers.Succeeded, ps.Workers.Failed = 0, 0, 0
	ps.Assignments = slices.Clone(nodes)
	setReservation(ps)
	ps.ReservedTime, ps.StartTime, ps.NotBefore = &stamp, nil, nil
	ps.AddHistory(v1alpha1.PhaseEvent{Time: stamp, Type: v1alpha1.PhaseEventReserved, Workers: ps.Workers.Granted, Message: ps.WaitingFor})
	ps.WaitingFor, ps.Message = "", ""
}

func applyGrow(c *Change, i int, gr engine.Reservation, stamp metav1.Time) {
	ps := &c.Status.Phases[i]
	for _, w := range gr.Workers {
		if int(w.Index) == len(ps.Assignments) {
			ps.Assignments = append(ps.Assignments, w.Node)
		}
	}
	setReservation(ps)
	ps.AddHistory(v1alpha1.PhaseEvent{Time: stamp, Type: v1alpha1.PhaseEventGrow, Workers: ps.Workers.Granted,
		Message: fmt.Sprintf("grew by %d workers", len(gr.Workers))})
	c.Events = append(c.Events, normal("Grown", "Schedule", fmt.Sprintf("phase %s grew by %d workers (now %d)", PhaseLabel(ps), len(gr.Workers), len(ps.Assignments))))
}

// applyWaiting writes what each queued gang waits for, when it changed.
func applyWaiting(waits []engine.Wait, d *Demand, changes Changes) {
	for _, w := range waits {
		g, ok := d.Gangs[w.Gang]
		if !ok {
			continue
		}
		if msg := w.Message(); g.Status().WaitingFor != msg {
			changes.Touch(g.Pipeline).Status.Phases[g.Index].WaitingFor = msg
		}
	}
}

// applyInfeasible marks the pipelines with a phase that can never fit
// (queued or upcoming) Infeasible, naming the first such phase and the
// numbers, and lifts the condition of those whose phases fit again
// (nodes were added).
func applyInfeasible(infs []engine.Infeasible, d *Demand, changes Changes) {
	first := map[string]engine.Infeasible{}
	for _, inf := range infs {
		if _, seen := first[inf.Gang.Pipeline]; !seen {
			first[inf.Gang.Pipeline] = inf
		}
	}
	for _, key := range d.pipelineKeys() {
		pt := d.Pipelines[key]
		inf, never := first[key]
		switch {
		case never:
			markInfeasible(pt, inf, d, changes)
		case isTrue(&pt.Status, v1alpha1.ConditionInfeasible):
			c := changes.Touch(pt)
			setCondition(c.Status, pt.Generation, v1alpha1.ConditionInfeasible, false, v1alpha1.ReasonWaitingForCapacity, "the gang fits the cluster now")
		}
	}
}

func markInfeasible(pt *v1alpha1.PhasedTraining, inf engine.Infeasible, d *Demand, changes Changes) {
	label := PhaseLabel(&v1alpha1.PhaseStatus{Name: inf.Gang.Phase, Iteration: inf.Gang.Iteration, Attempt: inf.Gang.Attempt})
	msg := fmt.Sprintf("phase %s can never fit: %s", label, inf.Message)
	_, queued := d.Gangs[inf.Gang]
	if !queued {
		msg += "; no phase of the pipeline runs until it can"
	}
	// The gang that never fits says so; its siblings say they are held
	// (the engine's Wait, WaitPipelineCannotFinish).
	wait := "never fits: " + inf.Message
	for i := range pt.Status.Phases {
		ps := &pt.Status.Phases[i]
		if queued && GangKey(pt, ps) == inf.Gang && ps.WaitingFor != wait {
			changes.Touch(pt).Status.Phases[i].WaitingFor = wait
		}
	}
	cond := meta.FindStatusCondition(pt.Status.Conditions, string(v1alpha1.ConditionInfeasible))
	if cond != nil && cond.Status == metav1.ConditionTrue && cond.Message == msg {
		return
	}
	c := changes.Touch(pt)
	setCondition(c.Status, pt.Generation, v1alpha1.ConditionInfeasible, true, v1alpha1.ReasonGangNeverFits, msg)
	c.Events = append(c.Events, warning(v1alpha1.ReasonGangNeverFits, "Schedule", msg))
}

// setReservation derives the node → workers summary from the assignments.
func setReservation(ps *v1alpha1.PhaseStatus) {
	ps.Reservation = map[string]int32{}
	for _, n := range ps.Assignments {
		ps.Reservation[n]++
	}
	ps.Workers.Granted = int32(len(ps.Assignments))
}

func reservationText(r map[string]int32) string {
	nodes := make([]string, 0, len(r))
	for n := range r {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = fmt.Sprintf("%s×%d", n, r[n])
	}
	return strings.Join(parts, ", ")
}
