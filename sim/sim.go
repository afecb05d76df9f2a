package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/eventqueue"
	"github.com/phasegang/phasegang/phases"
)

// Policy is a way to schedule a workload.
type Policy string

// Policies. Only PolicyPhasegang is what phasegang does; the others are
// what the alternatives do to a multi-phase pipeline, run on the very same
// capacity model so the comparison is fair.
const (
	// PolicyPhasegang: one gang per phase, released between phases,
	// elastic phases start at min and grow.
	PolicyPhasegang Policy = "phasegang"
	// PolicyPerPod: pods are placed one at a time in creation order, first
	// come first served, with no gang (kube-scheduler's default). Pods of
	// jobs created together interleave, as concurrent job controllers'
	// pods do. A phase runs once all its pods are placed.
	PolicyPerPod Policy = "per-pod"
	// PolicyWholeJob: one gang that fits every phase of the pipeline (see submitHold),
	// reserved at admission and held through every phase (admission-level
	// gang scheduling of the whole pipeline).
	PolicyWholeJob Policy = "whole-job"
	// PolicyRigid: per-phase gangs, always of desired size (no elasticity).
	PolicyRigid Policy = "per-phase-rigid"
	// PolicyStrictFIFO: per-phase gangs of desired size admitted strictly
	// in queue order: a gang that does not fit holds back every gang
	// behind it, and nothing backfills (Kueue's StrictFIFO queueing, a
	// plain gang scheduler's queue).
	PolicyStrictFIFO Policy = "strict-fifo"
	// PolicyKueue models Kueue as test/peers drives it (kueue.go): each
	// phase a batch/v1 Job created when the previous phase ends, queued
	// as a Workload at its own creation time (not its pipeline's),
	// admitted BestEffortFIFO (priority, then creation; a Job that does
	// not fit is parked until Kueue's next requeue batch, never waited
	// for) against one ClusterQueue whose quota is the cluster's GPUs, on
	// quota alone; its pods then go to kube-scheduler one at a time, each
	// on the node with the most room.
	PolicyKueue Policy = "kueue"
	// PolicyVolcano models Volcano as test/peers drives it (volcano.go):
	// each phase a vcjob created when the previous phase ends, a rigid
	// gang (minAvailable = its size) ordered by its own creation time;
	// vc-scheduler's allocate places every waiting gang that fits, oldest
	// first, and waits for none (no reservation for a gang that does
	// not fit).
	PolicyVolcano Policy = "volcano"
)

// Policies lists every policy, phasegang first.
var Policies = []Policy{PolicyPhasegang, PolicyPerPod, PolicyWholeJob, PolicyRigid, PolicyStrictFIFO}

// PeerPolicies model a peer as the peer harness (test/peers) runs it;
// they are not baselines of the suite.
var PeerPolicies = []Policy{PolicyKueue, PolicyVolcano}

// ParsePolicy checks a policy name.
func ParsePolicy(s string) (Policy, error) {
	for _, p := range slices.Concat(Policies, PeerPolicies) {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown policy %q (want one of %v)", s, slices.Concat(Policies, PeerPolicies))
}

// Options configure one run.
type Options struct {
	Policy Policy
	// Engine configures the engine (starvation bound); nil means
	// engine.DefaultConfig().
	Engine *engine.Config
	// Record keeps every worker's interval (for the Gantt chart and the
	// capacity checks) and every pipeline's final status (for the parity
	// test against the controller); off for large traces.
	Record bool
	// Clock measures the engine's wall time for the decisions/s figure;
	// nil leaves it unmeasured (results stay deterministic).
	Clock func() time.Time
	// Progress, if set, is called now and then with the virtual time
	// reached and the virtual time of the last arrival.
	Progress func(now, last time.Duration)
	// Observer, if set, sees every phase attempt as it ends (the tracing
	// exporter uses it).
	Observer func(PhaseRecord)
}

// Epoch is the virtual clock's zero: the engine sees Epoch + virtual time.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type eventKind int

const (
	evArrive eventKind = iota
	evEnd
	evFail
	evNodeLost
	// evWake runs a cycle at a plan's Recheck: nothing else happens then,
	// but time alone may change a decision (a preemption, a fence).
	evWake
	// evKueueRequeue: PolicyKueue requeues its parked Workloads.
	evKueueRequeue
)

type event struct {
	kind eventKind
	pipe *pipeRun
	run  *phaseRun
	ver  int
	node string // evNodeLost
}

// compiled is a Pipeline with its phases' specs and Shapes (read once per
// workload spec, as the controller reads each phase once per cycle).
type compiled struct {
	pl    *phases.Pipeline
	specs map[string]driver.SpecPhase
	gpus  map[string]float64 // GPUs per worker
}

// pipeRun is one pipeline: its PhasedTraining (spec and status, as the
// API server would hold them) and what the virtual cluster knows of it.
type pipeRun struct {
	name    string
	w       *Workload
	c       *compiled
	pt      *v1alpha1.PhasedTraining
	arrival time.Duration
	// demand is the pipeline's demand under its current status, for the
	// next status change's driver.DeltaOf.
	demand driver.Demand
	// obs is what the virtual kubelets report of its running gangs.
	obs      driver.Observations
	queuedAt map[phases.Instance]time.Duration
	done     bool
	result   PipelineResult
	// whole-job: the pipeline's held gang.
	hold *holdState
	// per-pod: pods placed per queued instance.
	pods map[phases.Instance]*podGroup
}

type holdState struct {
	key     engine.GangKey
	nodes   []string
	since   time.Duration
	granted bool
	gpus    float64
	busy    float64 // GPU-seconds its phases ran
}

type podGroup struct {
	nodes    []string
	placedAt []time.Duration
	placed   int
}

type phaseRun struct {
	p       *pipeRun
	inst    phases.Instance
	key     engine.GangKey
	nodes   []string
	since   []time.Duration // per worker: when it started
	gpus    float64
	work    float64 // remaining worker-seconds at desired size
	desired int
	last    time.Duration
	ver     int
	started time.Duration
	queued  time.Duration
	grows   int
	shrinks int
	resizes []Resize
}

type simulator struct {
	opts    Options
	sc      *Scenario
	scaling *Scaling
	// crossDomain slows runs that span topology domains (nil: none).
	crossDomain *crossDomainModel
	// nodeDomains are the nodes' domain paths (status.phases[].domains).
	nodeDomains map[string]string
	now         time.Duration
	st          *engine.State
	events      eventqueue.Queue[event]
	pipes       []*pipeRun
	byName      map[string]*pipeRun
	runs        map[engine.GangKey]*phaseRun
	dirty       map[*pipeRun]bool
	res         *Result
	last        time.Duration
	engWall     time.Duration
	// lostNodes says a node was removed since the last cycle.
	lostNodes bool
	// wakes are the evWake instants pushed and not yet reached.
	wakes map[time.Duration]bool
	// queues tracks the tenant queues' demand and use (nil without
	// queues).
	queues *queueTracker
	// kueue is PolicyKueue's admission (nil under other policies).
	kueue *kueueAdmission
}

// Run simulates a scenario under one policy.
func Run(sc *Scenario, opts Options) (*Result, error) {
	if opts.Policy == "" {
		opts.Policy = PolicyPhasegang
	}
	cfg := engine.DefaultConfig()
	if opts.Engine != nil {
		cfg = *opts.Engine
	}
	cfg.SkipWaiting = true
	if opts.Policy == PolicyPerPod || opts.Policy == PolicyKueue || opts.Policy == PolicyVolcano {
		// One pod at a time, first come first served, and a pod that does
		// not fit never holds back the pods behind it.
		cfg.StarvationBound = time.Duration(1<<63 - 1)
	}
	if opts.Policy == PolicyStrictFIFO {
		cfg.StrictFIFO = true
	}
	s := &simulator{
		opts: opts, sc: sc, scaling: sc.Scaling,
		byName: map[string]*pipeRun{},
		runs:   map[engine.GangKey]*phaseRun{},
		dirty:  map[*pipeRun]bool{},
		wakes:  map[time.Duration]bool{},
		res:    &Result{Scenario: sc.Name, Policy: opts.Policy, GPUs: sc.Cluster.GPUs()},
	}
	nodes := sc.Cluster.Nodes()
	s.crossDomain = newCrossDomainModel(sc.Cluster, nodes)
	s.nodeDomains = driver.NodeDomains(nodes)
	s.st = engine.NewState(cfg, nodes, nil)
	if opts.Policy == PolicyKueue {
		s.kueue = newKueueAdmission(sc.Cluster.GPUs())
	}
	if len(sc.Quotas) > 0 {
		s.st.SetQuotas(sc.engineQuotas())
	}
	if len(sc.Queues) > 0 {
		s.st.SetQueues(sc.engineQueues())
		s.queues = newQueueTracker(sc.engineQueues())
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	var wallStart time.Time
	if opts.Clock != nil {
		wallStart = opts.Clock()
	}
	s.loop()
	if opts.Clock != nil {
		s.res.Wall = opts.Clock().Sub(wallStart)
		s.res.EngineWall = s.engWall
	}
	s.finish()
	return s.res, nil
}

func (s *simulator) load() error {
	cache := map[string]*compiled{}
	for i := range s.sc.Workload {
		w := &s.sc.Workload[i]
		key := w.specKey
		if key == "" {
			key = fmt.Sprintf("#%d", i)
		}
		c, ok := cache[key]
		if !ok {
			v1alpha1.SetDefaults(&w.Training)
			pl, errs := phases.Compile(&w.Training)
			if len(errs) > 0 {
				return fmt.Errorf("workload[%d].training: %w", i, errs.ToAggregate())
			}
			c = &compiled{pl: pl, specs: driver.SpecPhases(&w.Training), gpus: map[string]float64{}}
			for name, sp := range c.specs {
				c.gpus[name] = float64(sp.Shape.Footprint["nvidia.com/gpu"]) / 1000
			}
			cache[key] = c
		}
		count := max(w.Count, 1)
		for r := range count {
			name := w.Training.Name
			if w.Count > 1 {
				name = fmt.Sprintf("%s-%d", w.Training.Name, r)
			}
			ns := w.Training.Namespace
			if ns == "" {
				ns = "default"
			}
			arrival := w.Arrival.Duration + time.Duration(r)*w.Interval.Duration
			p := &pipeRun{
				name: ns + "/" + name, w: w, c: c, arrival: arrival,
				pt: &v1alpha1.PhasedTraining{
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Generation: 1, CreationTimestamp: metav1.NewTime(Epoch.Add(arrival))},
					Spec:       w.Training.Spec,
				},
				obs:      driver.Observations{},
				queuedAt: map[phases.Instance]time.Duration{},
				pods:     map[phases.Instance]*podGroup{},
			}
			p.result = PipelineResult{Name: p.name, Arrival: arrival, State: StateUnfinished}
			if _, dup := s.byName[p.name]; dup {
				return fmt.Errorf("workload[%d]: pipeline %s appears twice", i, p.name)
			}
			s.byName[p.name] = p
			s.pipes = append(s.pipes, p)
			s.push(arrival, event{kind: evArrive, pipe: p})
			s.last = max(s.last, arrival)
		}
	}
	for _, f := range s.sc.NodeFailures {
		s.push(f.At.Duration, event{kind: evNodeLost, node: f.Node})
	}
	return nil
}

func (s *simulator) push(at time.Duration, e event) { s.events.Push(at, e) }

func (s *simulator) loop() {
	step := 0
	loop := eventqueue.Loop[event]{
		Handle: s.handle,
		// Progress pipelines and schedule until nothing changes at this
		// instant (a whole-job pipeline starts its next phase at once).
		Settle: func(time.Duration, int) bool {
			s.progressDirty()
			return s.cycle() || len(s.dirty) > 0
		},
		MaxRounds: 1000,
		AfterInstant: func(time.Duration) {
			if s.queues != nil {
				s.queues.sample(s)
			}
			step++
			if s.opts.Progress != nil && step%1024 == 0 {
				s.opts.Progress(s.now, s.last)
			}
		},
	}
	// An instant that finds no fixpoint in 1000 rounds moves on to the
	// next, and there is no step cap: the run never stops early.
	_, _ = loop.Run(&s.events)
	s.detectStuck()
}

// handle applies one event at its instant.
func (s *simulator) handle(now time.Duration, e event) {
	s.now = now
	switch e.kind {
	case evArrive:
		s.arrive(e.pipe)
	case evEnd:
		if e.run.ver == e.ver && s.runs[e.run.key] == e.run {
			s.end(e.run, false)
		}
	case evFail:
		if s.runs[e.run.key] == e.run {
			s.end(e.run, true)
		}
	case evNodeLost:
		s.st.RemoveNode(e.node)
		s.lostNodes = true // the next cycle releases its gangs
	case evWake:
		delete(s.wakes, s.now)
	case evKueueRequeue:
		s.kueue.unpark()
		s.kueueAdmit()
	}
}

func (s *simulator) arrive(p *pipeRun) {
	if s.opts.Policy == PolicyWholeJob {
		s.submitHold(p)
	}
	s.dirty[p] = true
}

// progressDirty lets every touched pipeline's state machine decide.
func (s *simulator) progressDirty() {
	for len(s.dirty) > 0 {
		batch := make([]*pipeRun, 0, len(s.dirty))
		for p := range s.dirty {
			batch = append(batch, p)
		}
		clear(s.dirty)
		slices.SortFunc(batch, func(a, b *pipeRun) int { return strings.Compare(a.name, b.name) })
		for _, p := range batch {
			s.progress(p)
		}
	}
}

// progress advances a pipeline exactly as the controller's reconciler
// does (driver.Advance on what the virtual kubelets observed), then tells
// the engine and the virtual cluster what the new status implies.
func (s *simulator) progress(p *pipeRun) {
	if p.done {
		return
	}
	now := Epoch.Add(s.now)
	adv := driver.Advance(p.c.pl, p.pt, p.obs, now)
	s.setStatus(p, adv.Status)
	switch adv.Step.State {
	case v1alpha1.PipelineSucceeded, v1alpha1.PipelineFailed:
		s.close(p, string(adv.Step.State), adv.Step.Message)
	}
}

// setStatus stores a pipeline's new status and carries out what changed
// between the two: attempts newly queued wait for capacity, attempts no
// longer queued leave the queue, and grants no longer held are released,
// their workers stopped (a failed pipeline's siblings, a gang requeued).
// The engine's State is told through driver.Delta, from the same demand
// the controller rebuilds every cycle.
func (s *simulator) setStatus(p *pipeRun, st *v1alpha1.PhasedTrainingStatus) {
	p.pt.Status = *st
	cur := driver.DemandIn(p.pt, st, s.sc.PriorityClasses, s.sc.Cluster.levels())
	d := driver.DeltaOf(p.demand, cur)
	p.demand = cur
	for _, key := range d.Release {
		if r := s.runs[key]; r != nil {
			s.stop(r)
		}
		s.release(p, key)
	}
	for _, key := range d.Withdraw {
		s.withdraw(p, instanceOf(key))
		delete(p.queuedAt, instanceOf(key))
	}
	for _, r := range d.Submit {
		in := instanceOf(r.Gang)
		p.queuedAt[in] = s.now
		s.enqueue(p, in, r)
	}
	if s.opts.Policy == PolicyPhasegang || s.rigid() {
		s.st.Expect(p.name, s.policyRequests(d.Upcoming))
	}
}

func instanceOf(k engine.GangKey) phases.Instance {
	return phases.Instance{Name: k.Phase, Iteration: k.Iteration, Attempt: k.Attempt}
}

// policyRequests adapts the driver's requests to the policy: per-phase
// rigid gangs always ask for their desired size.
func (s *simulator) policyRequests(rs []engine.Request) []engine.Request {
	if !s.rigid() {
		return rs
	}
	out := slices.Clone(rs)
	for i := range out {
		out[i].Min = out[i].Desired
	}
	return out
}

// rigid reports whether the policy's gangs always ask for their desired
// size (per-phase-rigid, strict-fifo).
func (s *simulator) rigid() bool {
	return s.opts.Policy == PolicyRigid || s.opts.Policy == PolicyStrictFIFO
}

// close ends a pipeline: its queued gangs are withdrawn and its hold (if
// any) released.
func (s *simulator) close(p *pipeRun, state, msg string) {
	if p.done {
		return
	}
	p.done = true
	p.result.State, p.result.Message, p.result.Finish = state, msg, s.now
	for in := range p.queuedAt {
		s.withdraw(p, in)
	}
	s.st.Expect(p.name, nil)
	if !s.opts.Record {
		// Nothing reads a finished pipeline's status unless the run is
		// recorded (finish): let it go, or a long trace keeps every
		// pipeline's whole status to the end.
		p.pt.Status, p.demand, p.obs = v1alpha1.PhasedTrainingStatus{}, driver.Demand{}, nil
	}
	if p.hold != nil {
		if p.hold.granted {
			s.st.Release(p.hold.key)
			s.res.IdleReservedGPUSeconds += p.hold.gpus*float64(len(p.hold.nodes))*(s.now-p.hold.since).Seconds() - p.hold.busy
		} else {
			s.st.Withdraw(p.hold.key)
		}
	}
}

func podKey(p *pipeRun, in phases.Instance, w int) engine.GangKey {
	return engine.GangKey{Pipeline: p.name, Phase: fmt.Sprintf("%s/%05d", in.Name, w), Iteration: in.Iteration, Attempt: in.Attempt}
}

// enqueue makes a queued phase attempt (the driver's request) wait for
// capacity, the policy's way.
func (s *simulator) enqueue(p *pipeRun, in phases.Instance, req engine.Request) {
	req.Queued = Epoch.Add(s.now)
	switch s.opts.Policy {
	case PolicyPhasegang:
		s.st.Submit(req)
	case PolicyRigid, PolicyStrictFIFO:
		req.Min = req.Desired
		s.st.Submit(req)
	case PolicyPerPod:
		s.submitPods(p, in, req)
	case PolicyKueue:
		s.kueue.queue(p, in, req, s.now)
		s.kueueAdmit()
	case PolicyVolcano:
		req.Min = req.Desired
		req.Created = Epoch.Add(s.now)
		s.st.Submit(req)
	case PolicyWholeJob:
		if p.hold.granted {
			s.startOnHold(p, in)
		}
	}
}

// submitPods queues a phase attempt's pods, each its own one-worker
// "gang". Pods are ordered by creation time; worker w of every job
// created at the same instant comes before worker w+1 of any, as when
// many job controllers create their pods concurrently.
func (s *simulator) submitPods(p *pipeRun, in phases.Instance, req engine.Request) {
	p.pods[in] = &podGroup{nodes: make([]string, req.Desired), placedAt: make([]time.Duration, req.Desired)}
	for w := range int(req.Desired) {
		s.st.Submit(s.pod(req, p, in, w))
	}
}

// podRequest is worker w of a per-pod phase attempt as its own gang,
// created at created (+w ns, so the workers keep their order).
func podRequest(req engine.Request, p *pipeRun, in phases.Instance, w int, created time.Duration) engine.Request {
	pod := req
	pod.Gang = podKey(p, in, w)
	pod.Min, pod.Desired = 1, 1
	pod.Created = Epoch.Add(created + time.Duration(w))
	return pod
}

// pod is worker w of a phase attempt as the policy queues a pod: under
// kueue, kube-scheduler places it after Kueue admits its Job, on the node
// with the most room (its default LeastAllocated scoring; the harness's
// pods request cpu, which it scores). per-pod keeps best fit, the
// assumption its figures in the suite were made with.
func (s *simulator) pod(req engine.Request, p *pipeRun, in phases.Instance, w int) engine.Request {
	pod := podRequest(req, p, in, w, s.now)
	pod.Spread = s.opts.Policy == PolicyKueue
	return pod
}

// holdsOutsideRuns says the policy's grants are not the phase runs': a
// whole-job pipeline's held gang, a per-pod pod.
func (s *simulator) holdsOutsideRuns() bool {
	return s.opts.Policy == PolicyWholeJob || s.podsOnTheirOwn()
}

// podsOnTheirOwn says the policy places a phase's pods one at a time
// (per-pod, and kueue once a Job is admitted).
func (s *simulator) podsOnTheirOwn() bool {
	return s.opts.Policy == PolicyPerPod || s.opts.Policy == PolicyKueue
}

// evict carries out the release (a preemption, a lost node) of a
// baseline's grant that is not a phase run. A whole-job pipeline's held
// gang: its running phase stops and queues again, and the pipeline queues
// for a new hold with its age, as Kueue requeues an evicted Job. A
// per-pod pod of a started phase takes the phase down with it, as a
// distributed job restarts when it loses a worker; a pod still waiting
// for its siblings is queued again alone.
func (s *simulator) evict(p *pipeRun, rel engine.Release) {
	switch s.opts.Policy {
	case PolicyWholeJob:
		h := p.hold
		if h == nil || rel.Gang != h.key || !h.granted {
			return
		}
		for _, r := range s.runsOf(p) {
			s.requeueRun(r, rel)
		}
		s.res.IdleReservedGPUSeconds += h.gpus*float64(len(h.nodes))*(s.now-h.since).Seconds() - h.busy
		s.submitHold(p)
	case PolicyPerPod, PolicyKueue:
		in, w := podInstance(rel.Gang)
		g := p.pods[in]
		if g == nil || g.nodes[w] == "" {
			return
		}
		if r := s.runs[s.gangKey(p, in)]; r != nil {
			s.requeueRun(r, rel)
			s.withdraw(p, in)
			ps := p.pt.Status.Phase(in.Name, in.Iteration)
			s.enqueue(p, in, driver.Request(p.pt, p.c.specs[in.Name], ps, s.sc.PriorityClasses))
			return
		}
		s.res.IdleReservedGPUSeconds += p.c.gpus[in.Name] * (s.now - g.placedAt[w]).Seconds()
		s.recordIdle(p, in, w, g.nodes[w], g.placedAt[w])
		g.nodes[w] = ""
		g.placed--
		ps := p.pt.Status.Phase(in.Name, in.Iteration)
		req := driver.Request(p.pt, p.c.specs[in.Name], ps, s.sc.PriorityClasses)
		req.Queued = Epoch.Add(s.now)
		s.st.Submit(s.pod(req, p, in, w))
	}
}

// runsOf lists a pipeline's running phase attempts.
func (s *simulator) runsOf(p *pipeRun) []*phaseRun {
	var out []*phaseRun
	for _, r := range s.runs {
		if r.p == p {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *phaseRun) int { return strings.Compare(a.key.String(), b.key.String()) })
	return out
}

// requeueRun stops a running attempt whose grant was released and queues
// it again in its status, as ApplyPlan does for a phasegang gang.
func (s *simulator) requeueRun(r *phaseRun, rel engine.Release) {
	if rel.Reason == engine.ReleasePreempted {
		s.bookPreempted(r)
	}
	s.stop(r)
	s.applyStatuses(engine.Plan{Releases: []engine.Release{{Gang: r.key, Reason: rel.Reason, Message: rel.Message}}}, Epoch.Add(s.now))
	r.p.queuedAt[r.inst] = s.now
}

// bookPreempted charges the work a preempted attempt loses (it reruns
// from the start) to its queue.
func (s *simulator) bookPreempted(r *phaseRun) {
	if s.queues == nil {
		return
	}
	lost := 0.0
	for _, since := range r.since {
		lost += (s.now - since).Seconds() * r.gpus
	}
	s.queues.preempted(r.p, lost)
}

func (s *simulator) withdraw(p *pipeRun, in phases.Instance) {
	switch s.opts.Policy {
	case PolicyPerPod, PolicyKueue:
		if g := p.pods[in]; g != nil {
			for w := range g.nodes {
				s.st.Withdraw(podKey(p, in, w))
				s.st.Release(podKey(p, in, w))
			}
			delete(p.pods, in)
		}
		if s.kueue != nil && s.kueue.forget(p, in) {
			s.kueueQuotaBack()
		}
	default:
		s.st.Withdraw(s.gangKey(p, in))
	}
}

// release gives back what a phase attempt held, the policy's way; a
// whole-job hold stays until the pipeline ends.
func (s *simulator) release(p *pipeRun, key engine.GangKey) {
	switch s.opts.Policy {
	case PolicyPerPod, PolicyKueue:
		s.withdraw(p, instanceOf(key))
	case PolicyWholeJob:
	default:
		s.st.Release(key)
	}
}

func (s *simulator) gangKey(p *pipeRun, in phases.Instance) engine.GangKey {
	return engine.GangKey{Pipeline: p.name, Phase: in.Name, Iteration: in.Iteration, Attempt: in.Attempt}
}

// submitHold queues a whole-job pipeline's single gang, held until the
// pipeline ends: as many workers as its largest phase, each big enough
// for a worker of any of its phases (the per-resource maximum of their
// footprints), so every phase runs inside the hold on nodes that fit it.
func (s *simulator) submitHold(p *pipeRun) {
	var count int32
	envelope := engine.ResourceList{}
	var cons engine.Constraints
	var bigGPUs float64 = -1
	for _, ph := range p.c.pl.Phases() {
		count = max(count, ph.Desired())
		shape := p.c.specs[ph.Name].Shape
		for name, amt := range shape.Footprint {
			envelope[name] = max(envelope[name], amt)
		}
		if g := float64(ph.Desired()) * p.c.gpus[ph.Name]; g > bigGPUs {
			bigGPUs, cons = g, shape.Constraints
		}
	}
	key := engine.GangKey{Pipeline: p.name, Phase: "whole-job"}
	p.hold = &holdState{key: key, gpus: float64(envelope["nvidia.com/gpu"]) / 1000}
	s.st.Submit(engine.Request{
		Gang: key, Priority: driver.Priority(&p.pt.Spec, s.sc.PriorityClasses), Created: p.pt.CreationTimestamp.Time, Queued: Epoch.Add(s.now),
		Min: count, Desired: count, Footprint: envelope, Constraints: cons,
		// The whole job is admitted against its queue for its whole
		// life, as Kueue admits a Job: the baseline phasegang's
		// per-phase admission is measured against.
		Queue: p.pt.Spec.QueueName,
	})
}

// startOnHold runs a phase inside a whole-job pipeline's held gang.
func (s *simulator) startOnHold(p *pipeRun, in phases.Instance) {
	ph := p.c.pl.Phase(in.Name)
	n := min(int(ph.Desired()), len(p.hold.nodes))
	s.start(p, in, p.hold.nodes[:n])
}

// cycle runs one engine cycle, applies its plan to the statuses with the
// controller's own code (driver.ApplyPlan), and plays the grants on the
// virtual cluster. It reports whether anything was placed or resized.
func (s *simulator) cycle() bool {
	if s.st.Queued() == 0 && !s.anyElastic() && !s.lostNodes {
		return false
	}
	s.lostNodes = false
	var t0 time.Time
	if s.opts.Clock != nil {
		t0 = s.opts.Clock()
	}
	now := Epoch.Add(s.now)
	plan := s.st.Cycle(now)
	if s.opts.Clock != nil {
		s.engWall += s.opts.Clock().Sub(t0)
	}
	s.res.Cycles++
	s.wakeAt(plan.Recheck)
	s.applyStatuses(plan, now)
	return s.play(plan)
}

// maxWake ignores a Recheck further ahead than this: the per-pod policy
// runs with a starvation bound of forever, which never fires.
const maxWake = 100 * 365 * 24 * time.Hour

// wakeAt makes the loop run a cycle at the plan's Recheck, as the
// controller's periodic cycle would (within its interval).
func (s *simulator) wakeAt(at time.Time) {
	if at.IsZero() {
		return
	}
	d := at.Sub(Epoch)
	if d <= s.now || d-s.now > maxWake || s.wakes[d] {
		return
	}
	s.wakes[d] = true
	s.push(d, event{kind: evWake})
}

// applyStatuses writes the plan into the statuses of the pipelines it
// concerns, as the controller's scheduler does.
func (s *simulator) applyStatuses(plan engine.Plan, now time.Time) {
	d := &driver.Demand{Gangs: driver.Gangs{}, Pipelines: map[string]*v1alpha1.PhasedTraining{}, Levels: s.sc.Cluster.levels(), NodeDomains: s.nodeDomains}
	for _, p := range s.planPipelines(plan) {
		d.Add(p.pt, s.sc.PriorityClasses)
	}
	changes := driver.Changes{}
	driver.ApplyPlan(plan, d, now, changes)
	for _, key := range changes.Keys() {
		p := s.byName[key]
		p.pt.Status = *changes[key].Status
		// The engine's State already holds the plan: only the next
		// status change's delta needs this demand.
		p.demand = driver.DemandOf(p.pt, &p.pt.Status, s.sc.PriorityClasses)
	}
}

// planPipelines lists the live pipelines a plan names.
func (s *simulator) planPipelines(plan engine.Plan) []*pipeRun {
	seen := map[*pipeRun]bool{}
	var out []*pipeRun
	add := func(k engine.GangKey) {
		if p := s.byName[k.Pipeline]; p != nil && !p.done && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, r := range plan.Releases {
		add(r.Gang)
	}
	for _, r := range plan.Shrinks {
		add(r.Gang)
	}
	for _, r := range plan.Moves {
		add(r.Gang)
	}
	for _, r := range plan.Reserves {
		add(r.Gang)
	}
	for _, r := range plan.Grows {
		add(r.Gang)
	}
	for _, r := range plan.Infeasible {
		add(r.Gang)
	}
	return out
}

// play carries out a plan on the virtual cluster: lost gangs stop, shrunk
// and grown gangs change size, reserved gangs start.
func (s *simulator) play(plan engine.Plan) bool {
	changed := false
	for _, rel := range plan.Releases {
		if !driver.Requeues(rel.Reason) {
			continue
		}
		if p := s.byName[rel.Gang.Pipeline]; p != nil && s.holdsOutsideRuns() && s.runs[rel.Gang] == nil {
			s.evict(p, rel)
			changed = true
			continue
		}
		if r := s.runs[rel.Gang]; r != nil {
			if rel.Reason == engine.ReleasePreempted {
				s.bookPreempted(r)
			}
			s.stop(r)
			p := r.p
			// The status now has the attempt queued again (ApplyPlan):
			// queue it in the engine and the virtual cluster too.
			in := instanceOf(rel.Gang)
			p.queuedAt[in] = s.now
			ps := p.pt.Status.Phase(in.Name, in.Iteration)
			s.enqueue(p, in, driver.Request(p.pt, p.c.specs[in.Name], ps, s.sc.PriorityClasses))
			changed = true
		}
	}
	for _, sh := range plan.Shrinks {
		if r := s.runs[sh.Gang]; r != nil {
			s.resize(r, -len(sh.Workers), nil)
			r.shrinks++
			r.resizes = append(r.resizes, Resize{At: s.now, Workers: int32(len(r.nodes))})
			changed = true
		}
	}
	for _, rv := range plan.Reserves {
		s.res.Placements += len(rv.Workers)
		s.reserved(rv)
		changed = true
	}
	for _, g := range plan.Grows {
		s.res.Placements += len(g.Workers)
		if r := s.runs[g.Gang]; r != nil {
			nodes := make([]string, len(g.Workers))
			for i, w := range g.Workers {
				nodes[i] = w.Node
			}
			s.resize(r, len(g.Workers), nodes)
			r.grows++
			r.resizes = append(r.resizes, Resize{At: s.now, Workers: int32(len(r.nodes)), Grow: true})
			changed = true
		}
	}
	return changed
}

// anyElastic reports whether some granted gang could still grow; only
// then is a cycle with an empty queue worth running.
func (s *simulator) anyElastic() bool {
	if s.opts.Policy != PolicyPhasegang {
		return false
	}
	for _, r := range s.runs {
		if int32(len(r.nodes)) < r.p.c.pl.Phase(r.inst.Name).Desired() {
			return true
		}
	}
	return false
}

func (s *simulator) reserved(rv engine.Reservation) {
	p := s.byName[rv.Gang.Pipeline]
	nodes := make([]string, len(rv.Workers))
	for i, w := range rv.Workers {
		nodes[i] = w.Node
	}
	switch s.opts.Policy {
	case PolicyWholeJob:
		p.hold.nodes, p.hold.granted, p.hold.since = nodes, true, s.now
		for in := range p.queuedAt {
			if st := p.pt.Status.Phase(in.Name, in.Iteration); st != nil && st.State == v1alpha1.PhaseQueued {
				s.startOnHold(p, in)
			}
		}
	case PolicyPerPod, PolicyKueue:
		in, w := podInstance(rv.Gang)
		g := p.pods[in]
		if g == nil {
			return
		}
		g.nodes[w], g.placedAt[w] = nodes[0], s.now
		g.placed++
		if g.placed == len(g.nodes) {
			for w, at := range g.placedAt {
				s.res.IdleReservedGPUSeconds += p.c.gpus[in.Name] * (s.now - at).Seconds()
				s.recordIdle(p, in, w, g.nodes[w], at)
			}
			s.start(p, in, g.nodes)
		}
	default:
		s.start(p, instanceOf(rv.Gang), nodes)
	}
}

func podInstance(k engine.GangKey) (phases.Instance, int) {
	var name string
	var w int
	for i := len(k.Phase) - 1; i >= 0; i-- {
		if k.Phase[i] == '/' {
			name = k.Phase[:i]
			fmt.Sscanf(k.Phase[i+1:], "%d", &w)
			break
		}
	}
	return phases.Instance{Name: name, Iteration: k.Iteration, Attempt: k.Attempt}, w
}

// start runs a phase attempt on the given nodes from now on: its workers
// start at once (the virtual kubelets never fail to start a pod). The
// baseline policies, which grant outside the engine's gangs, record their
// grant in the status with the driver's Reserve, as ApplyPlan does.
func (s *simulator) start(p *pipeRun, in phases.Instance, nodes []string) {
	ph := p.c.pl.Phase(in.Name)
	runtime := p.w.Runtimes[in.Name].Duration
	r := &phaseRun{
		p: p, inst: in, key: s.gangKey(p, in), nodes: slices.Clone(nodes),
		gpus: p.c.gpus[in.Name], work: runtime.Seconds() * float64(ph.Desired()), desired: int(ph.Desired()),
		last: s.now, started: s.now, queued: p.queuedAt[in],
	}
	r.since = make([]time.Duration, len(nodes))
	for i := range r.since {
		r.since[i] = s.now
	}
	delete(p.queuedAt, in)
	s.res.Waits = append(s.res.Waits, s.now-r.queued)
	if s.queues != nil {
		s.queues.wait(p, s.now-r.queued)
	}
	s.runs[r.key] = r
	if s.holdsOutsideRuns() {
		if i := statusIndex(&p.pt.Status, in); i >= 0 {
			driver.Reserve(&p.pt.Status, i, nodes, Epoch.Add(s.now))
		}
	}
	n := int32(len(nodes))
	p.obs[in] = driver.Workers{Observation: phases.Observation{Granted: n, Running: n}, Started: Epoch.Add(s.now)}
	for _, f := range p.w.Failures {
		if f.Phase == in.Name && f.Iteration == in.Iteration && f.Attempt == in.Attempt {
			s.push(s.now+f.After.Duration, event{kind: evFail, run: r})
		}
	}
	s.schedEnd(r)
	s.dirty[p] = true
}

func statusIndex(st *v1alpha1.PhasedTrainingStatus, in phases.Instance) int {
	for i := range st.Phases {
		ps := &st.Phases[i]
		if ps.Name == in.Name && ps.Iteration == in.Iteration && ps.Attempt == in.Attempt {
			return i
		}
	}
	return -1
}

// schedEnd (re)schedules a run's end from its remaining work and workers.
func (s *simulator) schedEnd(r *phaseRun) {
	r.ver++
	left := time.Duration(r.work / s.speed(r) * float64(time.Second))
	s.push(s.now+max(left, 0), event{kind: evEnd, run: r, ver: r.ver})
}

// speed is the run's worker-seconds (at desired size) done per second.
func (s *simulator) speed(r *phaseRun) float64 {
	return s.scaling.speed(len(r.nodes), r.desired) * s.crossDomain.factor(r.nodes)
}

// account books the work done since the last change.
func (s *simulator) account(r *phaseRun) {
	dt := (s.now - r.last).Seconds()
	r.work -= dt * s.speed(r)
	s.res.BusyGPUSeconds += dt * float64(len(r.nodes)) * r.gpus
	if r.p.hold != nil {
		r.p.hold.busy += dt * float64(len(r.nodes)) * r.gpus
	}
	r.last = s.now
}

// resize grows (delta > 0, on nodes) or shrinks (highest indices) a run.
func (s *simulator) resize(r *phaseRun, delta int, nodes []string) {
	s.account(r)
	if delta > 0 {
		r.nodes = append(r.nodes, nodes...)
		for range nodes {
			r.since = append(r.since, s.now)
		}
	} else {
		keep := len(r.nodes) + delta
		for w := keep; w < len(r.nodes); w++ {
			s.record(r, w)
		}
		r.nodes, r.since = r.nodes[:keep], r.since[:keep]
	}
	// The stall of a resize (Scaling.ResizeCost): the work it would have
	// done at its new size in that time is added back.
	r.work += s.scaling.resizeCost().Seconds() * s.speed(r)
	n := int32(len(r.nodes))
	if o, ok := r.p.obs[r.inst]; ok {
		o.Granted, o.Running = n, n
		r.p.obs[r.inst] = o
	}
	s.schedEnd(r)
}

// recordIdle records a placed pod that holds its GPU while it waits for
// the rest of its gang (per-pod only).
func (s *simulator) recordIdle(p *pipeRun, in phases.Instance, w int, node string, from time.Duration) {
	if !s.opts.Record || s.now == from {
		return
	}
	s.res.Intervals = append(s.res.Intervals, Interval{
		Node: node, Pipeline: p.name, Phase: in.Name, Iteration: in.Iteration, Attempt: in.Attempt,
		Worker: int32(w), GPUs: p.c.gpus[in.Name], Start: from, End: s.now, Idle: true,
	})
}

func (s *simulator) record(r *phaseRun, w int) {
	if !s.opts.Record {
		return
	}
	s.res.Intervals = append(s.res.Intervals, Interval{
		Node: r.nodes[w], Pipeline: r.p.name, Phase: r.inst.Name, Iteration: r.inst.Iteration, Attempt: r.inst.Attempt,
		Worker: int32(w), GPUs: r.gpus, Start: r.since[w], End: s.now,
	})
}

// stop ends a run's workers now without an outcome: the status no longer
// holds its grant (the pipeline failed and stopped it, or its node was
// lost and the gang is queued again).
func (s *simulator) stop(r *phaseRun) {
	s.account(r)
	for w := range r.nodes {
		s.record(r, w)
	}
	r.ver++ // its end event no longer applies
	delete(s.runs, r.key)
	delete(r.p.obs, r.inst)
	s.observe(r, r.inst, true)
}

// end finishes a run: its workers succeeded (or one failed). The virtual
// kubelets report it; the pipeline's next Advance ends the phase, and the
// status change releases the gang (setStatus), as on a cluster.
func (s *simulator) end(r *phaseRun, failed bool) {
	s.account(r)
	for w := range r.nodes {
		s.record(r, w)
	}
	delete(s.runs, r.key)
	p := r.p
	n := int32(len(r.nodes))
	o := phases.Observation{Granted: n}
	if failed {
		o.Failed, o.Succeeded, o.ChiefFailed = 1, n-1, true
	} else {
		o.Succeeded, o.ChiefSucceeded = n, true
		o.Outputs = outputsFor(p.w, r.inst)
	}
	p.obs[r.inst] = driver.Workers{Observation: o, Started: Epoch.Add(r.started)}
	p.result.Queueing += r.started - r.queued
	p.result.Phases++
	s.observe(r, r.inst, failed)
	s.dirty[p] = true
}

// observe reports an ended phase attempt to the Observer (tracing).
func (s *simulator) observe(r *phaseRun, in phases.Instance, failed bool) {
	if s.opts.Observer == nil {
		return
	}
	p := r.p
	s.opts.Observer(PhaseRecord{
		Pipeline: p.name, Instance: in, Queued: r.queued, Started: r.started, Ended: s.now,
		Workers: int32(len(r.nodes)), Min: p.c.pl.Phase(in.Name).Min(), Desired: p.c.pl.Phase(in.Name).Desired(),
		Nodes: r.nodes, Failed: failed, Grows: r.grows, Shrinks: r.shrinks,
		GPUs: r.gpus, Resizes: r.resizes,
	})
}

func outputsFor(w *Workload, in phases.Instance) map[string]string {
	list := w.Outputs[in.Name]
	if len(list) == 0 {
		return nil
	}
	return list[min(int(in.Iteration), len(list)-1)]
}

// detectStuck runs when no event is left: every pipeline not done is
// stuck. One whose status says Infeasible can never run (its message
// names the phase and the numbers). Under per-pod, those holding placed
// pods are deadlocked: they hold workers and wait forever for the rest of
// their gang, and their held pods are drawn idle to the end of the run.
func (s *simulator) detectStuck() {
	for _, p := range s.pipes {
		if p.done {
			continue
		}
		if c := meta.FindStatusCondition(p.pt.Status.Conditions, string(v1alpha1.ConditionInfeasible)); c != nil && c.Status == metav1.ConditionTrue {
			p.result.State, p.result.Message = StateInfeasible, c.Message
			continue
		}
		holding := 0
		for _, g := range p.pods {
			holding += g.placed
		}
		if p.hold != nil && p.hold.granted {
			holding += len(p.hold.nodes)
		}
		if holding == 0 {
			p.result.Message = "never started: capacity is held by deadlocked pipelines"
			if p.result.Phases > 0 {
				p.result.Message = fmt.Sprintf("stuck after %d phases: capacity is held by deadlocked pipelines", p.result.Phases)
			}
			continue
		}
		p.result.State = StateDeadlocked
		p.result.Message = fmt.Sprintf("holds %d workers and waits forever for the rest of its gang", holding)
		s.res.Deadlocked = append(s.res.Deadlocked, p.name)
		for in, g := range p.pods {
			for w := range g.nodes {
				if g.nodes[w] == "" {
					continue
				}
				s.res.IdleReservedGPUSeconds += p.c.gpus[in.Name] * (s.now - g.placedAt[w]).Seconds()
				s.recordIdle(p, in, w, g.nodes[w], g.placedAt[w])
			}
		}
	}
}

func (s *simulator) finish() {
	if s.queues != nil {
		s.res.Fairness = s.queues.fairness(s.now)
	}
	for _, p := range s.pipes {
		s.res.Pipelines = append(s.res.Pipelines, p.result)
		if s.opts.Record {
			if s.res.Statuses == nil {
				s.res.Statuses = map[string]*v1alpha1.PhasedTrainingStatus{}
			}
			s.res.Statuses[p.name] = p.pt.Status.DeepCopy()
		}
	}
	s.res.computeMetrics(s.sc)
}
