package sim

import (
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/phasegang/phasegang/engine"
)

// Per-queue fairness (issue 15): what each tenant queue received against
// what it was entitled to, over the run.
//
// A queue's demand at an instant is the GPUs its pipelines want then: the
// desired workers of every phase attempt queued or running, the same
// measure under every policy. Its entitlement is its share of its
// cohort's GPUs under that demand, as a cohort with fair sharing would
// divide them (entitlement): its nominal quota, or less if it wants less;
// plus, if it wants more, a weighted share of what the other members
// lend and do not want themselves. What it received is the GPUs its
// gangs held (for whole-job, the whole held gang, used or not).

// QueueSample is every queue's demand, entitlement and held GPUs from At
// until the next sample, in QueueMetrics order.
type QueueSample struct {
	At       time.Duration
	Demand   []float64
	Entitled []float64
	Held     []float64
}

// QueueMetrics are one queue's figures over a run. GPU-hours count only
// the time the queue had demand.
type QueueMetrics struct {
	Queue   string  `json:"queue"`
	Nominal float64 `json:"nominalGPUs"`
	// EntitledGPUh and HeldGPUh integrate the entitlement and the GPUs
	// held; Share is their ratio (1: it got exactly its entitlement).
	EntitledGPUh float64 `json:"entitledGPUHours"`
	HeldGPUh     float64 `json:"heldGPUHours"`
	Share        float64 `json:"share"`
	// Hours counts the whole hours (from the run's start) through which
	// the queue had demand throughout; Short those in which it held less
	// than 90% of its entitlement, and WorstHour is its lowest hourly
	// ratio (NaN without such hours).
	Hours     int     `json:"hours"`
	Short     int     `json:"hoursBelow90Percent"`
	WorstHour float64 `json:"worstHour"`
	// WaitingHours counts the whole hours in which the queue had work
	// waiting at some instant (it wanted more GPUs than it held);
	// WaitingShort those in which, over the time it had demand, it held
	// less than 90% of its entitlement, and WaitingWorst is the lowest
	// such hourly ratio (NaN without such hours). The suite's queue
	// target (issue 31) is WaitingShort = 0.
	WaitingHours int     `json:"hoursWithWorkWaiting"`
	WaitingShort int     `json:"waitingHoursBelow90Percent"`
	WaitingWorst float64 `json:"worstWaitingHour"`
	// WaitAvg and WaitMax are over its gangs' waits for capacity.
	WaitAvg float64 `json:"waitAvgSeconds"`
	WaitMax float64 `json:"waitMaxSeconds"`
	// Preempted counts its gangs preempted; PreemptedGPUh is the work they
	// lost (GPU-hours run since the attempt started).
	Preempted     int     `json:"preempted"`
	PreemptedGPUh float64 `json:"preemptedGPUHours"`
}

// Fairness sums up the queues of a run.
type Fairness struct {
	Queues []QueueMetrics `json:"queues"`
	// Jain is Jain's fairness index of the queues' Shares: 1 when every
	// queue got the same fraction of its entitlement, 1/n at worst.
	Jain float64 `json:"jain"`
	// PreemptedGPUh sums the queues'.
	PreemptedGPUh float64 `json:"preemptedGPUHours"`
	// Samples are the usage over time (for the chart).
	Samples []QueueSample `json:"-"`
}

// queueTracker records the queues' demand and use as the run goes.
type queueTracker struct {
	queues  []engine.Queue
	idx     map[string]int
	samples []QueueSample
	waits   [][]time.Duration
	preempt []int
	lost    []float64
}

func newQueueTracker(qs []engine.Queue) *queueTracker {
	t := &queueTracker{queues: qs, idx: map[string]int{},
		waits: make([][]time.Duration, len(qs)), preempt: make([]int, len(qs)), lost: make([]float64, len(qs))}
	for i, q := range qs {
		t.idx[q.Name] = i
	}
	return t
}

// of is the index of the queue a pipeline's gangs go to (-1: none).
func (t *queueTracker) of(p *pipeRun) int {
	name := p.pt.Spec.QueueName
	if name == "" {
		name = engine.DefaultQueue
	}
	if i, ok := t.idx[name]; ok {
		return i
	}
	return -1
}

// sample records the instant's demand and held GPUs, if they changed.
func (t *queueTracker) sample(s *simulator) {
	n := len(t.queues)
	cur := QueueSample{At: s.now, Demand: make([]float64, n), Held: make([]float64, n)}
	for _, p := range s.pipes {
		q := t.of(p)
		if q < 0 || p.done || p.arrival > s.now {
			continue
		}
		for in := range p.queuedAt {
			cur.Demand[q] += float64(p.c.pl.Phase(in.Name).Desired()) * p.c.gpus[in.Name]
		}
		switch s.opts.Policy {
		case PolicyWholeJob:
			if p.hold != nil && p.hold.granted {
				cur.Held[q] += float64(len(p.hold.nodes)) * p.hold.gpus
			}
		case PolicyPerPod, PolicyKueue:
			for in, g := range p.pods {
				cur.Held[q] += float64(g.placed) * p.c.gpus[in.Name]
			}
		}
	}
	for _, r := range s.runs {
		if q := t.of(r.p); q >= 0 {
			cur.Demand[q] += float64(r.desired) * r.gpus
			if !s.holdsOutsideRuns() {
				cur.Held[q] += float64(len(r.nodes)) * r.gpus
			}
		}
	}
	if k := len(t.samples); k > 0 {
		last := &t.samples[k-1]
		switch {
		case slices.Equal(last.Demand, cur.Demand) && slices.Equal(last.Held, cur.Held):
			return
		case last.At == cur.At:
			*last = cur
			return
		}
	}
	t.samples = append(t.samples, cur)
}

func (t *queueTracker) wait(p *pipeRun, d time.Duration) {
	if q := t.of(p); q >= 0 {
		t.waits[q] = append(t.waits[q], d)
	}
}

// preempted books a preempted gang's lost work.
func (t *queueTracker) preempted(p *pipeRun, gpuSeconds float64) {
	if q := t.of(p); q >= 0 {
		t.preempt[q]++
		t.lost[q] += gpuSeconds / 3600
	}
}

// entitlement divides each cohort's GPUs among its queues for the
// demand: every queue its nominal quota or its demand if smaller; then
// what the members lend (unused nominal, up to lendingLimit) and do not
// use, water-filled by weight among those that want more, each up to its
// demand and borrowingLimit. A queue without a cohort gets min(demand,
// nominal).
func (t *queueTracker) entitlement(demand []float64) []float64 {
	out := make([]float64, len(t.queues))
	cohorts := map[string][]int{}
	for i, q := range t.queues {
		nominal, _, _ := gpuQuota(q)
		out[i] = min(demand[i], nominal)
		if q.Cohort != "" {
			cohorts[q.Cohort] = append(cohorts[q.Cohort], i)
		}
	}
	for _, members := range cohorts {
		pool := 0.0
		for _, i := range members {
			nominal, lend, _ := gpuQuota(t.queues[i])
			pool += min(nominal-out[i], lend)
		}
		t.waterFill(members, demand, out, pool)
	}
	return out
}

// waterFill shares pool among members that want more than they have,
// in proportion to weight, none past its demand or borrowing limit.
func (t *queueTracker) waterFill(members []int, demand, out []float64, pool float64) {
	room := map[int]float64{}
	for _, i := range members {
		nominal, _, borrow := gpuQuota(t.queues[i])
		if r := min(demand[i], nominal+borrow) - out[i]; r > 1e-9 {
			room[i] = r
		}
	}
	for pool > 1e-9 && len(room) > 0 {
		weights := 0.0
		for i := range room {
			weights += weight(t.queues[i])
		}
		given := 0.0
		for i, r := range room {
			g := min(r, pool*weight(t.queues[i])/weights)
			out[i] += g
			given += g
			if room[i] = r - g; room[i] <= 1e-9 {
				delete(room, i)
			}
		}
		pool -= given
		if given <= 1e-9 {
			break
		}
	}
}

// gpuQuota is a queue's GPU nominal quota, what of it it may lend (all
// without a lending limit) and what it may borrow (unlimited without a
// borrowing limit), in GPUs.
func gpuQuota(q engine.Queue) (nominal, lend, borrow float64) {
	qq := q.Resources[engine.ResourceName(gpuResource)]
	nominal = float64(qq.Nominal) / 1000
	lend, borrow = nominal, math.Inf(1)
	if qq.LendingLimit != nil {
		lend = float64(*qq.LendingLimit) / 1000
	}
	if qq.BorrowingLimit != nil {
		borrow = float64(*qq.BorrowingLimit) / 1000
	}
	return nominal, lend, borrow
}

func weight(q engine.Queue) float64 {
	if q.Weight > 0 {
		return float64(q.Weight) / 1000
	}
	return 1
}

// fairness integrates the samples up to end.
func (t *queueTracker) fairness(end time.Duration) *Fairness {
	f := &Fairness{Samples: t.samples}
	n := len(t.queues)
	perHour := newFairHours(n, int(end/time.Hour))
	f.Queues = make([]QueueMetrics, n)
	for i, s := range t.samples {
		to := end
		if i+1 < len(t.samples) {
			to = t.samples[i+1].At
		}
		ent := t.entitlement(s.Demand)
		t.samples[i].Entitled = ent
		for q := range n {
			if s.Demand[q] > 0 {
				m := &f.Queues[q]
				dt := (to - s.At).Hours()
				m.EntitledGPUh += ent[q] * dt
				m.HeldGPUh += s.Held[q] * dt
			}
			perHour.add(q, s, ent[q], to)
		}
	}
	var shares []float64
	for q := range n {
		m := &f.Queues[q]
		t.summarize(m, q, perHour[q])
		if m.EntitledGPUh > 0 {
			shares = append(shares, m.Share)
		}
		f.PreemptedGPUh += m.PreemptedGPUh
	}
	f.Jain = jain(shares)
	return f
}

// fairHour is one queue's entitled and held GPU-hours in one whole hour
// of the run; full while the queue had demand throughout it, waiting if
// at some instant of it the queue wanted more than it held.
type fairHour struct {
	entitled, held float64
	full, waiting  bool
}

// fairHours are the hours of every queue: [queue][hour].
type fairHours [][]fairHour

func newFairHours(queues, hours int) fairHours {
	perHour := make(fairHours, queues)
	for q := range perHour {
		perHour[q] = make([]fairHour, hours)
		for h := range perHour[q] {
			perHour[q][h].full = true
		}
	}
	return perHour
}

// add spreads queue q's sample s, lasting until to, with entitlement ent,
// over the whole hours it covers.
func (perHour fairHours) add(q int, s QueueSample, ent float64, to time.Duration) {
	hours := len(perHour[q])
	for h := int(s.At / time.Hour); h < hours && time.Duration(h)*time.Hour < to; h++ {
		from, until := max(s.At, time.Duration(h)*time.Hour), min(to, time.Duration(h+1)*time.Hour)
		if until <= from {
			continue
		}
		ph := &perHour[q][h]
		if s.Demand[q] <= 0 {
			ph.full = false
			continue
		}
		ph.entitled += ent * (until - from).Hours()
		ph.held += s.Held[q] * (until - from).Hours()
		if s.Demand[q] > s.Held[q]+1e-9 {
			ph.waiting = true
		}
	}
}

// summarize fills queue q's metrics from its integrated GPU-hours, its
// hours, its waits and its preemptions.
func (t *queueTracker) summarize(m *QueueMetrics, q int, hours []fairHour) {
	m.Queue = t.queues[q].Name
	m.Nominal, _, _ = gpuQuota(t.queues[q])
	m.Share = math.NaN()
	if m.EntitledGPUh > 0 {
		m.Share = m.HeldGPUh / m.EntitledGPUh
	}
	m.WorstHour, m.WaitingWorst = math.NaN(), math.NaN()
	for _, ph := range hours {
		if ph.waiting && ph.entitled > 0 {
			m.WaitingHours++
			r := ph.held / ph.entitled
			if r < 0.9 {
				m.WaitingShort++
			}
			if math.IsNaN(m.WaitingWorst) || r < m.WaitingWorst {
				m.WaitingWorst = r
			}
		}
		if !ph.full || ph.entitled <= 0 {
			continue
		}
		m.Hours++
		r := ph.held / ph.entitled
		if r < 0.9 {
			m.Short++
		}
		if math.IsNaN(m.WorstHour) || r < m.WorstHour {
			m.WorstHour = r
		}
	}
	var waits []float64
	for _, w := range t.waits[q] {
		waits = append(waits, w.Seconds())
	}
	m.WaitAvg = mean(waits)
	if len(waits) > 0 {
		m.WaitMax = slices.Max(waits)
	}
	m.Preempted, m.PreemptedGPUh = t.preempt[q], t.lost[q]
}

// jain is Jain's fairness index (Σx)² / (n Σx²); NaN for no values.
func jain(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 1
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// MarshalJSON writes NaN figures (a queue that never had demand) as null.
func (m QueueMetrics) MarshalJSON() ([]byte, error) { return marshalFinite(reflect.ValueOf(m)) }

// MarshalJSON writes a NaN Jain's index (no queue had demand) as null.
func (f Fairness) MarshalJSON() ([]byte, error) { return marshalFinite(reflect.ValueOf(f)) }
