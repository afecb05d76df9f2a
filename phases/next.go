package phases

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// Instance identifies one attempt of one phase in one iteration.
type Instance struct {
	Name      string
	Iteration int32
	Attempt   int32
}

func (in Instance) String() string {
	return fmt.Sprintf("%s#%d.%d", in.Name, in.Iteration, in.Attempt)
}

// Observation is what the controller saw of one Running phase instance's
// workers (pods).
type Observation struct {
	// Granted is how many workers the gang holds now (0: use the status'
	// workers.granted, or the desired size).
	Granted                     int32
	Running, Succeeded, Failed  int32
	ChiefSucceeded, ChiefFailed bool
	// Outputs are the declared keys read from the workers' termination
	// messages so far.
	Outputs map[string]string
	// Lost counts workers preempted, evicted or deleted by someone else,
	// and LostReason says what happened to the first of them: the gang is
	// broken, so it is released whole and the same attempt queued again.
	Lost       int32
	LostReason string
	// Refused is the API server's reason for refusing a worker's pod (a
	// quota, an admission webhook); RefusedForGood says that retrying the
	// same pod cannot succeed (it is invalid), so the attempt fails.
	Refused        string
	RefusedForGood bool
}

// Observations maps Running instances to what was observed of them.
type Observations map[Instance]Observation

// Ending says a Running attempt ended.
type Ending struct {
	Instance
	// State is Succeeded or Failed.
	State v1alpha1.PhaseState
	// Reason is a condition reason for a failure (PhaseFailed,
	// PhaseTimedOut, ExpressionError); empty on success.
	Reason  string
	Message string
	Workers v1alpha1.WorkerCounts
	// Outputs holds the declared outputs observed.
	Outputs map[string]string
}

// Skip says a phase instance is Skipped because its when was false.
type Skip struct {
	Instance
	Message string
}

// Requeue says a reserved gang is released whole and the same attempt
// queued again, not before NotBefore: it did not start in time, a worker's
// pod was refused, or a worker was lost.
type Requeue struct {
	Instance
	// Cause is StartTimeout, FailedCreate or WorkerLost.
	Cause     v1alpha1.PhaseEventType
	NotBefore time.Time
	Message   string
	// StartFailures is the attempt's count of consecutive start failures
	// after this one (0 after a lost worker: that gang had started).
	StartFailures int32
}

// Step is everything Next decided. Decisions are listed in the order they
// were taken; applying them in that order (Apply) yields the next status.
type Step struct {
	// Queue lists instances to queue now (first attempts and retries).
	Queue   []Instance
	Skip    []Skip
	End     []Ending
	Requeue []Requeue
	// Iteration is the loop's current iteration after this step.
	Iteration int32
	// State is Running, Succeeded or Failed.
	State v1alpha1.PipelineState
	// Reason and Message explain State (a condition's reason and message).
	Reason, Message string
	// Wake is the earliest time at which Next would decide something
	// without a new observation (a timeout or a backoff ending); zero when
	// nothing is pending. The controller requeues itself for then.
	Wake time.Time
}

// Start-timeout backoff: a gang that could not start is usually blocked by
// something (an image pull, a bad node) that retrying at once would hit
// again, and its reservation blocks other gangs: back off exponentially.
const (
	startBackoffBase = 10 * time.Second
	startBackoffMax  = 10 * time.Minute
)

// StartBackoff returns the delay before requeueing after the n-th start
// timeout (n >= 1): 10s, 20s, 40s... capped at 10 minutes.
func StartBackoff(n int) time.Duration {
	d := startBackoffBase
	for i := 1; i < n; i++ {
		d *= 2
		if d >= startBackoffMax {
			return startBackoffMax
		}
	}
	return d
}

// The messages of attempts that failed on a timer or never started begin
// with these, so the pipeline's failure gets the matching reason.
const (
	timedOutPrefix    = "timed out"
	startFailedPrefix = "did not start"
)

// Next decides what happens now. It is pure: it reads status, obs and now,
// and returns decisions without changing status. It applies its own
// decisions to a copy and decides again until nothing changes, so one call
// takes a pipeline as far as it can go (a phase ending, its dependents being
// skipped, theirs being queued...). Calling it again with the status the
// controller wrote (Apply) returns an empty step: it is idempotent.
func (p *Pipeline) Next(status *v1alpha1.PhasedTrainingStatus, obs Observations, now time.Time) Step {
	ws := &v1alpha1.PhasedTrainingStatus{}
	if status != nil {
		ws = status.DeepCopy()
	}
	var step Step
	// Each round decides at least one instance; a pipeline has at most
	// phases × iterations × (retries + 2) decisions.
	for range 1 << 16 {
		var r Step
		p.round(ws, obs, now, &r)
		step.Queue = append(step.Queue, r.Queue...)
		step.Skip = append(step.Skip, r.Skip...)
		step.End = append(step.End, r.End...)
		step.Requeue = append(step.Requeue, r.Requeue...)
		if r.State == v1alpha1.PipelineFailed {
			step.State, step.Reason, step.Message = r.State, r.Reason, r.Message
			break
		}
		if len(r.Queue)+len(r.Skip)+len(r.End)+len(r.Requeue) == 0 {
			break
		}
		p.Apply(ws, r, now)
	}
	step.Iteration = p.currentIteration(ws)
	if step.State == "" {
		step.State, step.Reason, step.Message = p.outcome(ws)
	}
	if step.State != v1alpha1.PipelineFailed {
		step.Wake = p.wake(ws, now)
	}
	return step
}

// latest returns the entry with the highest attempt of a phase instance.
func latest(s *v1alpha1.PhasedTrainingStatus, name string, it int32) *v1alpha1.PhaseStatus {
	return s.Phase(name, it)
}

func find(s *v1alpha1.PhasedTrainingStatus, in Instance) *v1alpha1.PhaseStatus {
	for i := range s.Phases {
		e := &s.Phases[i]
		if e.Name == in.Name && e.Iteration == in.Iteration && e.Attempt == in.Attempt {
			return e
		}
	}
	return nil
}

// endedOK reports whether the instance ended in a way its dependents may
// run after.
func endedOK(e *v1alpha1.PhaseStatus) bool {
	return e != nil && (e.State == v1alpha1.PhaseSucceeded || e.State == v1alpha1.PhaseSkipped)
}

func (p *Pipeline) currentIteration(s *v1alpha1.PhasedTrainingStatus) int32 {
	if p.loop == nil {
		return 0
	}
	var cur int32
	for i := range s.Phases {
		if c := p.byName[s.Phases[i].Name]; c != nil && c.InLoop && s.Phases[i].Iteration > cur {
			cur = s.Phases[i].Iteration
		}
	}
	return cur
}

type loopState int

const (
	loopRunning loopState = iota // iteration cur still runs
	loopNext                     // iteration cur ended, cur+1 may start
	loopDone                     // no more iterations
)

// loopState evaluates the loop at iteration cur; err is an until error.
func (p *Pipeline) loopState(s *v1alpha1.PhasedTrainingStatus, cur int32) (loopState, string, error) {
	if p.loop == nil {
		return loopDone, "", nil
	}
	for _, i := range p.loop.chain {
		if !endedOK(latest(s, p.phases[i].Name, cur)) {
			return loopRunning, "", nil
		}
	}
	if p.loop.until != nil {
		stop, err := p.env.run(p.loop.until, p.env.graphEnv(cur, p.views(s, cur)))
		if err != nil {
			return loopDone, "", err
		}
		if stop {
			return loopDone, fmt.Sprintf("iterate.until was true after iteration %d", cur), nil
		}
	}
	if cur+1 >= p.loop.maxIterations {
		return loopDone, fmt.Sprintf("reached iterate.maxIterations (%d)", p.loop.maxIterations), nil
	}
	return loopNext, "", nil
}

// views returns what expressions see of every phase. Loop phases are seen
// at iteration it (the evaluating phase's own iteration inside the loop,
// the last one outside it); other phases run once, at iteration 0.
func (p *Pipeline) views(s *v1alpha1.PhasedTrainingStatus, it int32) []view {
	vs := make([]view, len(p.phases))
	for i, c := range p.phases {
		at := int32(0)
		if c.InLoop {
			at = it
		}
		e := latest(s, c.Name, at)
		if e == nil {
			vs[i] = view{state: v1alpha1.PhasePending, itr: int(at)}
			continue
		}
		vs[i] = view{
			state:     e.State,
			workers:   int(e.Workers.Granted),
			succeeded: int(e.Workers.Succeeded),
			failed:    int(e.Workers.Failed),
			running:   int(e.Workers.Running),
			attempt:   int(e.Attempt),
			itr:       int(e.Iteration),
			outputs:   e.Outputs,
			reported:  true,
		}
	}
	return vs
}

func (p *Pipeline) fail(r *Step, reason, msg string) {
	r.State, r.Reason, r.Message = v1alpha1.PipelineFailed, reason, msg
}

func phaseLabel(c *CompiledPhase, it int32) string {
	if c.InLoop {
		return fmt.Sprintf("phase %s (iteration %d)", c.Name, it)
	}
	return "phase " + c.Name
}

// round takes the decisions that the status allows now, without applying
// them; Next applies and repeats. Each step returns false when it failed
// the pipeline, which ends the round.
func (p *Pipeline) round(s *v1alpha1.PhasedTrainingStatus, obs Observations, now time.Time, r *Step) {
	if !p.checkRunning(s, obs, now, r) {
		return
	}
	if !p.retryFailed(s, r) {
		return
	}
	p.startReady(s, r)
}

// checkRunning is step 1, the running attempts: ended, timed out, or not
// started in time.
func (p *Pipeline) checkRunning(s *v1alpha1.PhasedTrainingStatus, obs Observations, now time.Time, r *Step) bool {
	for i := range s.Phases {
		e := &s.Phases[i]
		c := p.byName[e.Name]
		if c == nil || !e.State.Reserved() || latest(s, e.Name, e.Iteration) != e {
			continue
		}
		in := Instance{e.Name, e.Iteration, e.Attempt}
		if o, observed := obs[in]; observed {
			handled, ok := p.checkObserved(c, e, in, o, now, r)
			if !ok {
				return false
			}
			if handled {
				continue
			}
		}
		p.checkTimeouts(c, e, in, now, r)
	}
	return true
}

// checkObserved decides on running attempt e from what its workers did:
// ended, lost a worker, or refused by the API server. handled is whether
// it decided; ok is false when it failed the pipeline.
func (p *Pipeline) checkObserved(c *CompiledPhase, e *v1alpha1.PhaseStatus, in Instance, o Observation, now time.Time, r *Step) (handled, ok bool) {
	if end, decided, err := p.judge(c, e, o); err != nil {
		p.fail(r, v1alpha1.ReasonExpressionError, fmt.Sprintf("%s: %s: %v", c.Path.Child("successPolicy"), phaseLabel(c, e.Iteration), err))
		return true, false
	} else if decided {
		end.Instance = in
		r.End = append(r.End, end)
		return true, true
	}
	if o.Lost > 0 {
		r.Requeue = append(r.Requeue, lostWorkers(in, o, now))
		return true, true
	}
	if o.Refused != "" {
		p.startFailed(r, c, e, in, v1alpha1.PhaseEventFailedCreate, o.RefusedForGood,
			"the API server refused a worker's pod: "+o.Refused, now)
		return true, true
	}
	return false, true
}

// checkTimeouts fails running attempt e past its timeout, or past its
// start timeout with a worker not yet running.
func (p *Pipeline) checkTimeouts(c *CompiledPhase, e *v1alpha1.PhaseStatus, in Instance, now time.Time, r *Step) {
	if c.Timeout > 0 && e.StartTime != nil && now.After(e.StartTime.Add(c.Timeout)) {
		r.End = append(r.End, Ending{
			Instance: in, State: v1alpha1.PhaseFailed, Reason: v1alpha1.ReasonPhaseTimedOut,
			Message: fmt.Sprintf("%s after %s (spec.phases[%d].timeout)", timedOutPrefix, c.Timeout, c.Index),
			Workers: e.Workers,
		})
		return
	}
	if c.StartTimeout > 0 && e.ReservedTime != nil && e.StartTime == nil && now.After(e.ReservedTime.Add(c.StartTimeout)) {
		msg := fmt.Sprintf("not every worker was running %s after the gang was reserved", c.StartTimeout)
		if e.WaitingFor != "" {
			msg += " (" + e.WaitingFor + ")"
		}
		p.startFailed(r, c, e, in, v1alpha1.PhaseEventStartTimeout, false, msg, now)
	}
}

// retryFailed is step 2, the failed attempts: retry, or fail the pipeline
// once a phase has used up its retries.
func (p *Pipeline) retryFailed(s *v1alpha1.PhasedTrainingStatus, r *Step) bool {
	for i := range s.Phases {
		e := &s.Phases[i]
		c := p.byName[e.Name]
		if c == nil || e.State != v1alpha1.PhaseFailed || latest(s, e.Name, e.Iteration) != e {
			continue
		}
		if e.Attempt < c.Spec.MaxRetries {
			r.Queue = append(r.Queue, Instance{e.Name, e.Iteration, e.Attempt + 1})
			continue
		}
		reason := v1alpha1.ReasonPhaseFailed
		if strings.HasPrefix(e.Message, timedOutPrefix) {
			reason = v1alpha1.ReasonPhaseTimedOut
		} else if strings.HasPrefix(e.Message, startFailedPrefix) {
			reason = v1alpha1.ReasonStartFailed
		}
		p.fail(r, reason, fmt.Sprintf("%s failed after %d attempt(s): %s", phaseLabel(c, e.Iteration), e.Attempt+1, e.Message))
		return false
	}
	return true
}

// startReady is steps 3 and 4: the loop, then the phases whose
// dependencies ended, queued or skipped by their when.
func (p *Pipeline) startReady(s *v1alpha1.PhasedTrainingStatus, r *Step) {
	cur := p.currentIteration(s)
	ls, _, err := p.loopState(s, cur)
	if err != nil {
		p.fail(r, v1alpha1.ReasonExpressionError, fmt.Sprintf("spec.iterate.until: after iteration %d: %v", cur, err))
		return
	}
	for _, c := range p.phases {
		it, due := nextIteration(c, ls, cur)
		if !due || latest(s, c.Name, it) != nil || !p.depsEnded(s, c, it, cur) {
			continue
		}
		if !p.queueOrSkip(s, c, it, cur, r) {
			return
		}
	}
}

// nextIteration is the iteration of c that may start next with the loop
// in state ls at iteration cur; due is false when none may: c is in a
// loop that is done, or waits for a loop that is not.
func nextIteration(c *CompiledPhase, ls loopState, cur int32) (it int32, due bool) {
	if c.InLoop {
		switch ls {
		case loopDone:
			return 0, false
		case loopNext:
			return cur + 1, true
		default:
			return cur, true
		}
	}
	return 0, !c.AfterLoop || ls == loopDone
}

// depsEnded reports whether every dependency of c's iteration it ended
// well.
func (p *Pipeline) depsEnded(s *v1alpha1.PhasedTrainingStatus, c *CompiledPhase, it, cur int32) bool {
	for _, d := range c.deps {
		dc := p.phases[d]
		at := int32(0)
		if dc.InLoop {
			// Inside the loop: the same iteration. After it: the last.
			at = cur
			if c.InLoop {
				at = it
			}
		}
		if !endedOK(latest(s, dc.Name, at)) {
			return false
		}
	}
	return true
}

// queueOrSkip queues c's iteration it, or skips it when its when is false;
// false when evaluating when failed the pipeline.
func (p *Pipeline) queueOrSkip(s *v1alpha1.PhasedTrainingStatus, c *CompiledPhase, it, cur int32, r *Step) bool {
	in := Instance{Name: c.Name, Iteration: it}
	if c.when != nil {
		view := it
		if !c.InLoop {
			view = cur
		}
		ok, err := p.env.run(c.when, p.env.graphEnv(view, p.views(s, view)))
		if err != nil {
			p.fail(r, v1alpha1.ReasonExpressionError, fmt.Sprintf("%s: %s: %v", c.Path.Child("when"), phaseLabel(c, it), err))
			return false
		}
		if !ok {
			r.Skip = append(r.Skip, Skip{Instance: in, Message: "when was false: " + c.Spec.When})
			return true
		}
	}
	r.Queue = append(r.Queue, in)
	return true
}

// lostWorkers releases a gang that lost a worker to someone else (a
// preemption, an eviction, a deletion): a synchronous gang cannot go on
// without it, and re-creating the worker alone would run the gang as two
// halves. The same attempt queues again at once: it is the cluster's doing,
// not the job's, so no retry is spent and no backoff applies.
func lostWorkers(in Instance, o Observation, now time.Time) Requeue {
	what := "a worker was lost"
	if o.Lost > 1 {
		what = fmt.Sprintf("%d workers were lost", o.Lost)
	}
	if o.LostReason != "" {
		what += " (" + o.LostReason + ")"
	}
	return Requeue{Instance: in, Cause: v1alpha1.PhaseEventWorkerLost, NotBefore: now,
		Message: what + "; the gang was released whole and queued again"}
}

// startFailed releases a reserved gang that could not start and queues the
// same attempt again with backoff, or fails the attempt when the failure
// cannot pass (forGood) or has happened more than startBackoffLimit times
// in a row: a gang that can never start must not hold and release
// capacity forever.
func (p *Pipeline) startFailed(r *Step, c *CompiledPhase, e *v1alpha1.PhaseStatus, in Instance, cause v1alpha1.PhaseEventType, forGood bool, msg string, now time.Time) {
	n := e.StartFailures + 1
	if forGood || n > c.StartBackoffLimit {
		if forGood {
			msg = startFailedPrefix + ": " + msg
		} else {
			msg = fmt.Sprintf("%s after %d tries (%s.startBackoffLimit: %d): %s", startFailedPrefix, n, c.Path, c.StartBackoffLimit, msg)
		}
		r.End = append(r.End, Ending{Instance: in, State: v1alpha1.PhaseFailed, Reason: v1alpha1.ReasonStartFailed, Message: msg, Workers: e.Workers})
		return
	}
	b := StartBackoff(int(n))
	r.Requeue = append(r.Requeue, Requeue{
		Instance: in, Cause: cause, NotBefore: now.Add(b), StartFailures: n,
		Message: fmt.Sprintf("start failure %d of at most %d: %s; the gang was released and queued again with a %s backoff",
			n, c.StartBackoffLimit, msg, b),
	})
}

// judge applies the success policy to an observation of a Running attempt.
func (p *Pipeline) judge(c *CompiledPhase, e *v1alpha1.PhaseStatus, o Observation) (Ending, bool, error) {
	granted := o.Granted
	if granted == 0 {
		granted = e.Workers.Granted
	}
	if granted == 0 {
		granted = c.Desired()
	}
	w := e.Workers
	w.Granted, w.Running, w.Succeeded, w.Failed = granted, o.Running, o.Succeeded, o.Failed
	if w.Min == 0 {
		SetSize(&w, c.Spec.Gang)
	}
	outs := map[string]string{}
	for _, k := range c.Spec.Outputs {
		if v, ok := o.Outputs[k]; ok {
			outs[k] = v
		}
	}
	if len(outs) == 0 {
		outs = nil
	}
	end := Ending{Workers: w, Outputs: outs}
	succeed := func(msg string) (Ending, bool, error) {
		end.State, end.Message = v1alpha1.PhaseSucceeded, msg
		return end, true, nil
	}
	failed := func(msg string) (Ending, bool, error) {
		end.State, end.Reason, end.Message = v1alpha1.PhaseFailed, v1alpha1.ReasonPhaseFailed, msg
		return end, true, nil
	}
	allEnded := o.Succeeded+o.Failed >= granted
	switch c.policy {
	case policyChief:
		switch {
		case o.ChiefFailed:
			return failed("worker 0 (chief) failed")
		case o.ChiefSucceeded:
			return succeed("worker 0 (chief) succeeded")
		}
	case policyExpr:
		ok, err := p.env.run(c.expr, p.env.policyEnv(c.Index, c.Name, granted, o.Succeeded, o.Failed, o.Running, outs))
		switch {
		case err != nil && allEnded:
			return end, false, err
		case err != nil:
			// Typically an output not reported yet: wait for more workers.
		case ok:
			return succeed("successPolicy was true: " + c.Spec.SuccessPolicy)
		case allEnded:
			return failed(fmt.Sprintf("successPolicy was false with every worker ended (%d succeeded, %d failed of %d): %s",
				o.Succeeded, o.Failed, granted, c.Spec.SuccessPolicy))
		}
	default:
		switch {
		case o.Failed > 0:
			return failed(fmt.Sprintf("%d of %d workers failed", o.Failed, granted))
		case o.Succeeded >= granted:
			return succeed(fmt.Sprintf("all %d workers succeeded", granted))
		}
	}
	return end, false, nil
}

// outcome derives the pipeline's state from a status no decision is left
// for.
func (p *Pipeline) outcome(s *v1alpha1.PhasedTrainingStatus) (v1alpha1.PipelineState, string, string) {
	cur := p.currentIteration(s)
	ls, why, err := p.loopState(s, cur)
	if err != nil || ls != loopDone {
		return v1alpha1.PipelineRunning, v1alpha1.ReasonPhaseRunning, p.active(s)
	}
	for _, c := range p.phases {
		at := int32(0)
		if c.InLoop {
			at = cur
		}
		if !endedOK(latest(s, c.Name, at)) {
			return v1alpha1.PipelineRunning, v1alpha1.ReasonPhaseRunning, p.active(s)
		}
	}
	msg := "every phase succeeded or was skipped"
	if why != "" {
		msg += "; the loop ended: " + why
	}
	return v1alpha1.PipelineSucceeded, v1alpha1.ReasonAllPhasesEnded, msg
}

// active names the instances queued or running, for messages and
// status.currentPhase.
func (p *Pipeline) active(s *v1alpha1.PhasedTrainingStatus) string {
	var names []string
	seen := map[string]bool{}
	for i := range s.Phases {
		e := &s.Phases[i]
		if (e.State == v1alpha1.PhaseQueued || e.State.Reserved()) && !seen[e.Name] {
			seen[e.Name] = true
			names = append(names, e.Name)
		}
	}
	return strings.Join(names, ",")
}

func (p *Pipeline) wake(s *v1alpha1.PhasedTrainingStatus, now time.Time) time.Time {
	var w time.Time
	consider := func(t time.Time) {
		if !t.After(now) {
			return
		}
		if w.IsZero() || t.Before(w) {
			w = t
		}
	}
	for i := range s.Phases {
		e := &s.Phases[i]
		c := p.byName[e.Name]
		if c == nil {
			continue
		}
		switch e.State {
		case v1alpha1.PhaseQueued:
			if e.NotBefore != nil {
				consider(e.NotBefore.Time)
			}
		case v1alpha1.PhaseStarting, v1alpha1.PhaseRunning:
			if c.Timeout > 0 && e.StartTime != nil {
				consider(e.StartTime.Add(c.Timeout))
			}
			if c.StartTimeout > 0 && e.ReservedTime != nil && e.StartTime == nil {
				consider(e.ReservedTime.Add(c.StartTimeout))
			}
		}
	}
	// now.After(deadline) is strict, so wake just past the deadline.
	if !w.IsZero() {
		w = w.Add(time.Nanosecond)
	}
	return w
}

// Apply writes a step's decisions into status, stamping times with now.
// The controller calls it with the step Next returned (then writes the
// status); Next uses it on its working copy, so both see the same result.
// Conditions are left to the caller.
func (p *Pipeline) Apply(s *v1alpha1.PhasedTrainingStatus, step Step, now time.Time) {
	t := metav1.NewTime(now)
	for _, end := range step.End {
		e := find(s, end.Instance)
		if e == nil {
			continue
		}
		e.State, e.Message, e.EndTime = end.State, end.Message, &t
		e.Workers = end.Workers
		if end.Outputs != nil {
			e.Outputs = end.Outputs
		}
	}
	for _, rq := range step.Requeue {
		e := find(s, rq.Instance)
		if e == nil {
			continue
		}
		nb := metav1.NewTime(rq.NotBefore)
		e.State, e.Message, e.NotBefore = v1alpha1.PhaseQueued, rq.Message, &nb
		e.Reservation, e.Assignments, e.Domains, e.ReservedTime, e.StartTime = nil, nil, nil, nil, nil
		e.Workers.Granted, e.Workers.Running = 0, 0
		e.StartFailures = rq.StartFailures
		// The queue wait starts again (Reserved's "after ... queued" and
		// the wait metric count queueing, not the time the gang held its
		// nodes); the pipeline keeps its age in the queue's order.
		e.QueuedTime = &t
	}
	for _, sk := range step.Skip {
		s.Phases = append(s.Phases, v1alpha1.PhaseStatus{
			Name: sk.Name, Iteration: sk.Iteration, Attempt: sk.Attempt,
			State: v1alpha1.PhaseSkipped, Message: sk.Message, EndTime: &t,
		})
	}
	for _, q := range step.Queue {
		var w v1alpha1.WorkerCounts
		if c := p.byName[q.Name]; c != nil {
			SetSize(&w, c.Spec.Gang)
		}
		s.Phases = append(s.Phases, v1alpha1.PhaseStatus{
			Name: q.Name, Iteration: q.Iteration, Attempt: q.Attempt,
			State: v1alpha1.PhaseQueued, Workers: w, QueuedTime: &t,
		})
	}
	s.Iteration = p.currentIteration(s)
	s.CurrentPhase = p.active(s)
}
