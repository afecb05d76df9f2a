package main

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// The seed's phases (examples/simulate/seed-deadlock.yaml).
const (
	clusterGPUs = 16
	trainMin    = 4
	trainMax    = 8
	trainAtMax  = 30 * time.Minute // a train's run time at 8 workers
	rigidRun    = 10 * time.Minute // a validate's and a test's
	eps         = 1e-9
)

// kind is a pipeline's phase.
type kind int

const (
	train kind = iota
	validate
	test
)

// gpus is what a rigid phase holds.
func (k kind) gpus() int {
	if k == validate {
		return 2
	}
	return 1
}

// pipeline is one of the seed's pipelines, as the engine saw it.
type pipeline struct {
	name    string
	arrival float64 // seconds
}

// widths is one schedule's free choices, per pipeline (in age order).
type widths struct {
	start []int // the train's width when it starts (at most what is free)
	// capBefore applies before capAt (seconds), capAfter from then on.
	capBefore, capAfter []int
	capAt               []float64
	youngestFirst       bool // growth order: oldest first unless set
	// online, if set, is each train's cap decided from the model's state
	// as it runs (an online rule), instead of the caps above.
	online func(m *model, p int) int
	// table is a table rule's caps (tableRules), for its name.
	table [4]int
	// take, if its floor is set, lets a queued train start on older
	// trains' GPUs (takeFromOlder).
	take take
}

// take is a rule that leaves the age order: a queued train whose min
// does not fit takes older running trains' GPUs above floor, once at
// least queued trains (it and younger ones) wait.
type take struct{ floor, queued int }

// uniform is every train started at w and capped at w, growing oldest
// first: phasegang's schedule when w is 8.
func uniform(n, w int) widths {
	x := widths{start: make([]int, n), capBefore: make([]int, n), capAfter: make([]int, n), capAt: make([]float64, n)}
	for i := range n {
		x.start[i], x.capBefore[i], x.capAfter[i] = w, w, w
	}
	return x
}

func (x widths) cap(m *model, p int) int {
	if x.online != nil {
		return x.online(m, p)
	}
	if m.t < x.capAt[p] {
		return x.capBefore[p]
	}
	return x.capAfter[p]
}

// outcome is one schedule's figures.
type outcome struct {
	makespan, jctAvg float64 // seconds
	// maxRigidWait is the longest a validate or test waited once ready.
	maxRigidWait float64
}

// beats reports whether o is the better schedule: the shorter makespan,
// then the lower average JCT.
func (o outcome) beats(than outcome) bool {
	return o.makespan < than.makespan || o.makespan == than.makespan && o.jctAvg < than.jctAvg
}

type ready struct {
	p     int // index in age order
	k     kind
	since float64
}

type running struct {
	w    int
	left float64 // share of the train's work still to do
}

type rigid struct {
	p   int
	k   kind
	end float64
}

// model runs the seed's pipelines (sorted by age) in age order with the
// given widths, under efficiency e per doubling.
type model struct {
	pipes []pipeline
	x     widths
	kappa float64 // speed at w workers ∝ w^kappa

	t       float64
	free    int
	next    int // next pipeline to arrive
	queue   []ready
	trains  map[int]*running
	rigids  []rigid
	finish  []float64
	outcome outcome
	// work is each pipeline's train work as this run takes it, in trains
	// of the true work (nil: every train's is 1, the truth). A planner's
	// rollout runs on its estimates.
	work []float64
}

// simulate runs one schedule.
func simulate(pipes []pipeline, x widths, e float64) outcome {
	m := newModel(pipes, x, e)
	m.run(nil)
	return m.result()
}

func newModel(pipes []pipeline, x widths, e float64) *model {
	return &model{pipes: pipes, x: x, kappa: 1 + math.Log2(e), free: clusterGPUs,
		trains: map[int]*running{}, finish: make([]float64, len(pipes))}
}

// run plays the schedule to its end. choose, if set, may change the
// model's rule at each event, once the event's arrivals are queued.
func (m *model) run(choose func(*model)) {
	for {
		m.arrive()
		if choose != nil {
			choose(m)
		}
		m.walk()
		m.grow()
		next, ok := m.nextEvent()
		if !ok {
			return
		}
		m.advance(next)
	}
}

// result is the finished run's figures.
func (m *model) result() outcome {
	o := m.outcome
	var sum float64
	for i, p := range m.pipes {
		sum += m.finish[i] - p.arrival
		o.makespan = max(o.makespan, m.finish[i])
	}
	o.jctAvg = sum / float64(len(m.pipes))
	return o
}

// speed is the share of a train's work w workers do per second.
func (m *model) speed(w int) float64 {
	return math.Pow(float64(w)/trainMax, m.kappa) / trainAtMax.Seconds()
}

func (m *model) arrive() {
	for m.next < len(m.pipes) && m.pipes[m.next].arrival <= m.t+eps {
		m.queue = append(m.queue, ready{p: m.next, k: train, since: m.t})
		m.next++
	}
}

// walk starts the queued gangs in age order, each once its min fits with
// the younger trains' surplus given back. A gang leaves the queue as it
// starts, so an online rule asked during the walk sees the queue as it
// is then.
func (m *model) walk() {
	slices.SortFunc(m.queue, func(a, b ready) int { return cmp.Or(cmp.Compare(a.p, b.p), cmp.Compare(a.k, b.k)) })
	for _, r := range slices.Clone(m.queue) {
		need := trainMin
		if r.k != train {
			need = r.k.gpus()
		}
		m.reclaimFromYounger(r.p, need)
		if r.k == train {
			m.takeFromOlder(r.p, need)
		}
		if m.free < need {
			continue
		}
		m.queue = slices.DeleteFunc(m.queue, func(q ready) bool { return q == r })
		if r.k == train {
			w := max(trainMin, min(m.x.start[r.p], m.free, m.x.cap(m, r.p)))
			m.trains[r.p] = &running{w: w, left: m.trainWork(r.p)}
			m.free -= w
			continue
		}
		m.outcome.maxRigidWait = max(m.outcome.maxRigidWait, m.t-r.since)
		m.rigids = append(m.rigids, rigid{p: r.p, k: r.k, end: m.t + rigidRun.Seconds()})
		m.free -= r.k.gpus()
	}
}

// reclaimFromYounger shrinks trains younger than p, youngest first, toward
// their min until need GPUs are free, if their surplus is enough.
func (m *model) reclaimFromYounger(p, need int) {
	m.shrinkFor(need, trainMin, func(q int) bool { return q > p })
}

// shrinkFor frees need GPUs, if the trains from gives (those for which
// it holds) have enough above floor: it shrinks them toward floor, the
// youngest first, no more than need asks. It frees nothing otherwise.
func (m *model) shrinkFor(need, floor int, from func(q int) bool) {
	if m.free >= need {
		return
	}
	var donors []int
	surplus := 0
	for q, r := range m.trains {
		if from(q) && r.w > floor {
			donors = append(donors, q)
			surplus += r.w - floor
		}
	}
	if m.free+surplus < need {
		return
	}
	slices.Sort(donors)
	for _, q := range slices.Backward(donors) {
		give := min(m.trains[q].w-floor, need-m.free)
		m.trains[q].w -= give
		m.free += give
		if m.free >= need {
			return
		}
	}
}

// trainWork is pipeline p's train work as the run takes it.
func (m *model) trainWork(p int) float64 {
	if m.work == nil {
		return 1
	}
	return m.work[p]
}

// takeFromOlder, under a take rule, lets train p start on GPUs that
// older running trains hold above the rule's floor, the youngest of them
// first, once enough trains queue and only if that makes its min fit.
// It leaves the age order: an older gang's GPUs go to a younger one.
func (m *model) takeFromOlder(p, need int) {
	t := m.x.take
	if t.floor == 0 || m.queuedTrains(p-1) < t.queued {
		return
	}
	m.shrinkFor(need, t.floor, func(q int) bool { return q < p })
}

// grow gives the free GPUs to running trains up to their caps.
func (m *model) grow() {
	order := make([]int, 0, len(m.trains))
	for q := range m.trains {
		order = append(order, q)
	}
	slices.Sort(order)
	if m.x.youngestFirst {
		slices.Reverse(order)
	}
	for _, q := range order {
		g := min(m.free, m.x.cap(m, q)-m.trains[q].w)
		if g > 0 {
			m.trains[q].w += g
			m.free -= g
		}
	}
}

// nextEvent is the next arrival, cap change, train end or rigid end.
func (m *model) nextEvent() (float64, bool) {
	next := math.Inf(1)
	if m.next < len(m.pipes) {
		next = m.pipes[m.next].arrival
	}
	for q, r := range m.trains {
		if m.x.online == nil && m.x.capAt[q] > m.t+eps {
			next = min(next, m.x.capAt[q])
		}
		next = min(next, m.t+r.left/m.speed(r.w))
	}
	for _, r := range m.rigids {
		next = min(next, r.end)
	}
	return next, !math.IsInf(next, 1)
}

// advance moves the clock to t and ends what ends then.
func (m *model) advance(t float64) {
	for _, r := range m.trains {
		r.left -= m.speed(r.w) * (t - m.t)
	}
	m.t = t
	for q, r := range m.trains {
		if r.left <= eps {
			m.free += r.w
			delete(m.trains, q)
			m.queue = append(m.queue, ready{p: q, k: validate, since: t})
		}
	}
	m.rigids = slices.DeleteFunc(m.rigids, func(r rigid) bool {
		if r.end > t+eps {
			return false
		}
		m.free += r.k.gpus()
		if r.k == validate {
			m.queue = append(m.queue, ready{p: r.p, k: test, since: t})
		} else {
			m.finish[r.p] = t
		}
		return true
	})
}
