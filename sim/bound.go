package sim

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
)

// The tighter lower bound. See LowerBound for the statement; the argument
// behind each term is in docs/simulator.md ("The lower bound").

// boundPhase is one phase as the bound sees it: how long it takes at its
// desired size, and how much of each resource it holds then (its desired
// workers' footprints, in milli-units). A phase can never run faster than
// at its desired size, so per second it does at most rate[R] of its work
// in resource R. Its work is counted in min-size resource-seconds (what
// it holds at min workers × how long it takes there; under linear
// scaling the same at every size), the least of R any schedule spends on
// it. Per second it holds lo·rate[R] of R at min workers and hi·rate[R]
// at desired workers.
type boundPhase struct {
	dur    float64 // seconds at desired size
	rate   map[engine.ResourceName]float64
	lo, hi float64
}

// boundJob is one pipeline: its arrival (seconds from the start of the
// run) and its phases. When chain is set the phases run one after the
// other in this order; otherwise they form some other DAG and the bound
// uses only per-phase limits. kappa is the scaling's exponent (see
// Scaling.exponent), the same for every job of a scenario.
type boundJob struct {
	kappa   float64
	arrival float64
	chain   bool
	phases  []boundPhase
	cp      float64 // critical path at desired size, seconds
}

// profile is a job's work in one resource when it runs every phase at its
// desired size back to back from its arrival: no schedule does more of
// that job's work by any time after its arrival (prefix), or in the last
// stretch of a given length before it ends (suffix).
type profile struct {
	chain bool
	dur   []float64
	rate  []float64
	cum   []float64 // cumulative time at each phase's end
	work  float64
}

func newProfile(j *boundJob, r engine.ResourceName) profile {
	p := profile{chain: j.chain}
	var t float64
	for _, ph := range j.phases {
		p.dur = append(p.dur, ph.dur)
		p.rate = append(p.rate, ph.rate[r])
		t += ph.dur
		p.cum = append(p.cum, t)
		p.work += ph.dur * ph.rate[r]
	}
	return p
}

// prefix is the most work the job can have done τ after its arrival. For
// a chain, running each phase at full rate as early as it may start does
// the most by any τ (a phase cannot start before its predecessor ends,
// and none runs faster than its desired size). For another DAG, each
// phase on its own does at most min(work, rate·τ).
func (p *profile) prefix(tau float64) float64 {
	if tau <= 0 {
		return 0
	}
	var s float64
	if !p.chain {
		for i := range p.dur {
			s += min(p.dur[i]*p.rate[i], p.rate[i]*tau)
		}
		return s
	}
	var start float64
	for i := range p.dur {
		if tau >= p.cum[i] {
			s += p.dur[i] * p.rate[i]
		} else {
			s += (tau - start) * p.rate[i]
			break
		}
		start = p.cum[i]
	}
	return s
}

// suffix is the most work the job can do in the last δ before it ends.
// For a chain, the phases that run then are the last ones: the last takes
// at least its run time, so it starts at least that long before the end,
// the one before it ends before that, and none runs faster than at full
// rate; so the most is the last δ of the full-rate profile. A job that
// ends before the makespan C does no more in [C − δ, C] than in its own
// last δ, so this bounds every job's work in the makespan's last δ. (Any
// window of length δ would be a valid but weaker bound: a window may sit
// on the job's long wide phase, which cannot run in its last minutes.)
// For another DAG, each phase does at most min(work, rate·δ).
func (p *profile) suffix(delta float64) float64 {
	if delta <= 0 {
		return 0
	}
	if !p.chain {
		return p.prefix(delta)
	}
	total := p.cum[len(p.cum)-1]
	if delta >= total {
		return p.work
	}
	return p.work - p.prefix(total-delta)
}

// boundJobs lists a scenario's pipelines for the bound, sorted by arrival.
func boundJobs(sc *Scenario) []boundJob {
	var jobs []boundJob
	for i := range sc.Workload {
		w := &sc.Workload[i]
		v1alpha1.SetDefaults(&w.Training)
		spec := w.Training.Spec
		j := boundJob{chain: isChain(spec.Phases), kappa: sc.Scaling.exponent()}
		for _, ph := range spec.Phases {
			fp := driver.WorkerFootprint(&ph.Template.Spec)
			// Under sub-linear scaling a phase's least resource-time is
			// at min workers; boundWidth says what to charge (desired
			// under linear scaling).
			lo, hi := int(ph.Gang.Min), int(ph.Gang.DesiredOrMin())
			n := sc.Scaling.boundWidth(lo, hi)
			bp := boundPhase{
				dur:  w.Runtimes[ph.Name].Duration.Seconds(),
				rate: map[engine.ResourceName]float64{},
				lo:   float64(lo) / n,
				hi:   float64(hi) / n,
			}
			for name, v := range fp {
				bp.rate[name] = n * float64(v)
			}
			j.phases = append(j.phases, bp)
		}
		cp, _ := criticalPath(w, sc.Scaling)
		j.cp = cp.Seconds()
		for r := range max(w.Count, 1) {
			j.arrival = (w.Arrival.Duration + time.Duration(r)*w.Interval.Duration).Seconds()
			jobs = append(jobs, j)
		}
	}
	slices.SortStableFunc(jobs, func(a, b boundJob) int {
		switch {
		case a.arrival < b.arrival:
			return -1
		case a.arrival > b.arrival:
			return 1
		}
		return 0
	})
	return jobs
}

// isChain reports whether the phases, in spec order, form one chain: the
// first depends on nothing and each other one on exactly its predecessor.
func isChain(ps []v1alpha1.Phase) bool {
	for i, p := range ps {
		if i == 0 && len(p.DependsOn) != 0 || i > 0 && (len(p.DependsOn) != 1 || p.DependsOn[0] != ps[i-1].Name) {
			return false
		}
	}
	return true
}

// capacities is the cluster's total allocatable per resource.
func capacities(c Cluster) map[engine.ResourceName]float64 {
	out := map[engine.ResourceName]float64{}
	for _, n := range c.Nodes() {
		for name, v := range n.Allocatable {
			out[name] += float64(v)
		}
	}
	return out
}

// boundBudget caps arrivals × window lengths × jobs evaluated per
// resource, so a whole trace (tens of thousands of pipelines) still gets
// its bound in about a second. Fewer candidates give a smaller, still
// valid, bound.
const boundBudget = 20_000_000

// tightBound is the bound on jobs (sorted by arrival) and per-resource
// capacities, in seconds from the first arrival. See LowerBound.
func tightBound(jobs []boundJob, caps map[engine.ResourceName]float64) float64 {
	if len(jobs) == 0 {
		return 0
	}
	w := newBoundWindows(jobs)
	var lb float64
	// Latency: no pipeline ends before its arrival plus its critical path.
	for _, j := range jobs {
		lb = max(lb, j.arrival-w.first+j.cp)
	}
	names := make([]engine.ResourceName, 0, len(caps))
	for r := range caps {
		names = append(names, r)
	}
	slices.Sort(names)
	for _, r := range names {
		if caps[r] > 0 {
			lb = w.resourceBound(lb, jobs, r, caps[r])
		}
	}
	return lb
}

// boundWindows are the windows tightBound checks each resource's work
// against: from the candidate instants ts, of the lengths deltas.
type boundWindows struct {
	first      float64 // the first arrival
	ts, deltas []float64
}

// newBoundWindows picks the candidate instants, every distinct arrival,
// and window lengths, every run time and every tail of a chain (sum of
// its last phases), both thinned to boundBudget.
func newBoundWindows(jobs []boundJob) *boundWindows {
	var ts []float64
	deltaSet := map[float64]bool{}
	for i, j := range jobs {
		if i == 0 || j.arrival != jobs[i-1].arrival {
			ts = append(ts, j.arrival)
		}
		var tail float64
		for k := len(j.phases) - 1; k >= 0; k-- {
			tail += j.phases[k].dur
			deltaSet[j.phases[k].dur] = true
			deltaSet[tail] = true
		}
	}
	deltas := []float64{0}
	for d := range deltaSet {
		deltas = append(deltas, d)
	}
	sort.Float64s(deltas)
	per := max(16, boundBudget/len(jobs))
	nt := min(len(ts), max(8, int(math.Sqrt(float64(per))*2)))
	nd := min(len(deltas), max(2, per/nt))
	return &boundWindows{first: jobs[0].arrival, ts: spread(ts, nt), deltas: spread(deltas, nd)}
}

// resourceBound raises lb to what resource r, of capacity capR, allows:
// the arrived-work and the energy bounds at every candidate instant.
func (w *boundWindows) resourceBound(lb float64, jobs []boundJob, r engine.ResourceName, capR float64) float64 {
	profs := make([]profile, len(jobs))
	var total float64
	for i := range jobs {
		profs[i] = newProfile(&jobs[i], r)
		total += profs[i].work
	}
	if total == 0 {
		return lb
	}
	prefixSum := w.prefixSums(jobs, profs)
	chains := w.slowChains(jobs, profs, r)
	suf, sufSum := w.suffixes(profs)
	left := make([]float64, len(jobs))
	for k, t := range w.ts {
		rest := total - w.mostDoneBy(k, prefixSum, chains, capR)
		lb = arrivedWorkBound(lb, t-w.first, rest, capR)
		for i := range jobs {
			left[i] = profs[i].work - profs[i].prefix(t-jobs[i].arrival)
		}
		lb = w.energyBound(lb, t, left, rest, suf, sufSum, capR)
	}
	return lb
}

// prefixSums are, per candidate instant ts[k], what the jobs can have
// done by then on their own.
func (w *boundWindows) prefixSums(jobs []boundJob, profs []profile) []float64 {
	prefixSum := make([]float64, len(w.ts))
	for k, t := range w.ts {
		for i := range jobs {
			if jobs[i].arrival >= t {
				break
			}
			prefixSum[k] += profs[i].prefix(t - jobs[i].arrival)
		}
	}
	return prefixSum
}

// suffixes are, per window length deltas[d] and job i, the most job i
// does in its last deltas[d], and their sum over the jobs.
func (w *boundWindows) suffixes(profs []profile) (suf [][]float64, sum []float64) {
	suf, sum = make([][]float64, len(w.deltas)), make([]float64, len(w.deltas))
	for d, delta := range w.deltas {
		suf[d] = make([]float64, len(profs))
		for i := range profs {
			suf[d][i] = profs[i].suffix(delta)
			sum[d] += suf[d][i]
		}
	}
	return suf, sum
}

// mostDoneBy is the most work done by ts[k]: at most what the jobs can do
// on their own by then, at most all of R since the first arrival, and at
// most, for every earlier candidate s, what they can do on their own by s
// plus what they can do between s and ts[k] with all of R (windowWork:
// under linear scaling cap(R)·(ts[k] − s), less under sub-linear scaling
// when too few pipelines are there to fill R at their min sizes).
func (w *boundWindows) mostDoneBy(k int, prefixSum []float64, chains *slowChains, capR float64) float64 {
	t := w.ts[k]
	done := min(prefixSum[k], capR*(t-w.first))
	for q := 0; q < k; q++ {
		done = min(done, prefixSum[q]+capR*(t-w.ts[q]))
	}
	for q := max(0, k-chains.reach()); q < k; q++ {
		if limit := done - prefixSum[q]; limit > 0 {
			done = min(done, prefixSum[q]+chains.windowWork(q, k, capR*(t-w.ts[q]), limit))
		}
	}
	return done
}

// arrivedWorkBound raises lb by the arrived work at t (since the first
// arrival): what is not done by then, rest, needs rest / cap(R) after t.
func arrivedWorkBound(lb, t, rest, capR float64) float64 {
	if rest > 0 {
		lb = max(lb, t+rest/capR)
	}
	return lb
}

// energyBound raises lb by the energy left at t: job i still has at least
// left[i] after t, of which it does at most suffix(δ) in the last δ before
// the makespan C; the rest needs cap(R) between t and C − δ.
//
// All jobs together still have at least rest after t (mostDoneBy), which
// may be more than Σ left[i]: a job's left[i] assumes it ran alone. The
// least energy is then e = Σ (left[i] − suffix_i(δ))⁺ plus whatever of
// rest does not fit under Σ max(left[i], suffix_i(δ)) = Σ suffix_i(δ) + e
// (sufSum[d]): raising a job's share of the rest up to its suffix is
// free, every unit beyond costs one.
func (w *boundWindows) energyBound(lb, t float64, left []float64, rest float64, suf [][]float64, sufSum []float64, capR float64) float64 {
	for d, delta := range w.deltas {
		var e float64
		for i, l := range left {
			if l > suf[d][i] {
				e += l - suf[d][i]
			}
		}
		e += max(0, rest-sufSum[d]-e)
		if e > 0 {
			lb = max(lb, t-w.first+delta+e/capR)
		}
	}
	return lb
}

// spread keeps n values of a sorted slice, evenly spaced, always the first
// and the last.
func spread(v []float64, n int) []float64 {
	if len(v) <= n || n < 2 {
		return v
	}
	out := make([]float64, 0, n)
	for i := range n {
		out = append(out, v[i*(len(v)-1)/(n-1)])
	}
	return out
}

// LowerBound is a lower bound on any schedule's makespan (from the first
// arrival to the last finish), the larger of the simple bound (see
// simpleLowerBound) and what any schedule must respect per resource R of
// capacity cap(R) (GPUs, CPU, memory, pods: every resource a worker
// requests and the nodes offer):
//
//   - latency: no pipeline ends before its arrival plus its critical path
//     at desired size;
//   - arrived work: by an arrival instant t, the work done is at most
//     min over s ≤ t of (Σ_j prefix_j(s − a_j) + cap(R)·(t − s)), where
//     prefix_j(τ) is the most of pipeline j's work that can be done τ after
//     it arrives (each phase at its desired size, as early as it may
//     start); the rest of all the work needs rest/cap(R) after t. Under
//     sub-linear scaling cap(R)·(t − s) becomes the most the pipelines
//     there can do with it, which is less when too few are there to fill
//     R at their min sizes (windowWork);
//   - energy: for any δ ≥ 0, pipeline j still has work_j − prefix_j(t − a_j)
//     to do after t, at most suffix_j(δ) of it (the last δ of its
//     full-rate profile) in the last δ before the makespan, and all
//     together still have the arrived work's rest; the sum of what is
//     left over, if positive, needs cap(R) between t and makespan − δ.
//
// Work is counted once per phase at desired size, as in the simple bound:
// iterations and retries only add work, while a phase that a `when`
// skips is counted though it never runs (see docs/simulator.md).
func LowerBound(sc *Scenario) time.Duration {
	lb := tightBound(boundJobs(sc), capacities(sc.Cluster))
	d := time.Duration(lb * float64(time.Second))
	return max(d, simpleLowerBound(sc))
}
