package sim

import (
	"math"

	"github.com/phasegang/phasegang/engine"
)

// The lower bound's trade-off under sub-linear scaling (windowWork).
//
// LowerBound counts each elastic phase's work at its min size, the least
// of a resource any schedule spends on it, and lets it run as fast as at
// its desired size: both at once, which no phase can do. Where enough
// pipelines are there to fill the cluster at their min sizes, that costs
// nothing. Where too few are (the first pipelines of a run, a lull), the
// cluster either idles or runs them wider, where each unit of the
// resource does less of their work. windowWork counts this in the arrived
// work: between two candidate instants, the pipelines there do less than
// one unit of work per unit of the resource once they run above min size.
//
// The model (Scaling): a phase of min..desired workers holding y of a
// resource per second, y_min ≤ y ≤ y_desired, does y_min·(y/y_min)^κ of
// its min-size work per second, κ = 1 + log2(efficiency per doubling) ≤ 1
// (throughput(n) = n^κ). Pausing (y = 0) for part of the time does y
// per second on average up to y_min. κ ≤ 0 (efficiency ≤ 0.5 per
// doubling) is left out: there a phase is fastest at min size.

// slowBudget caps pairs of candidate instants × pipelines that windowWork
// looks at, per resource. Fewer pairs give a smaller, still valid, bound.
const slowBudget = 4_000_000

// slowChain is one pipeline whose work costs more of the resource when
// done faster: a chain (one phase at a time) under sub-linear scaling
// with a phase that may run above its min size.
//
// Of the resource it holds at most hi per second (its largest phase at
// desired size). Holding y per second it does at most g(y) of its work
// per second, g(y) = y up to lo (its largest phase at min size) and
// lo·(y/lo)^κ above: a phase whose min-size hold y_min is at most lo does
// y_min·(y/y_min)^κ ≤ lo·(y/lo)^κ since κ ≤ 1, and none does more than it
// holds. g is concave and 0 at 0, so over a window of length L in which
// it holds A in all, it does at most L·g(A/L) (Jensen), whatever its
// sizes over time.
type slowChain struct {
	arrival float64
	lo, hi  float64
	pre     []float64 // what it can do on its own by each candidate instant (profile.prefix)
	// At hi it does lo·(hi/lo)^κ per second (fastest), each unit more held
	// there doing κ·(hi/lo)^(κ−1) (its least marginal work).
	fastest, marginal float64
}

// slowChains are a resource's slow chains, and what every other pipeline
// can do on its own by each candidate instant (linear): those do no more
// than one unit of work per unit of the resource at any size.
type slowChains struct {
	kappa  float64
	ts     []float64
	chains []slowChain
	linear []float64
	n      int        // windowWork looks at pairs of candidates at most this far apart
	parts  []slowPart // windowWork's scratch
}

// holds is the most of resource r a job's phases hold per second at min
// size, and at desired size: each the largest over its phases.
func (j *boundJob) holds(r engine.ResourceName) (lo, hi float64) {
	for _, ph := range j.phases {
		lo, hi = max(lo, ph.lo*ph.rate[r]), max(hi, ph.hi*ph.rate[r])
	}
	return lo, hi
}

// slowChains sorts the jobs into slow chains and the others, in resource
// r; nil when no job is a slow chain (linear scaling, rigid phases only).
func (w *boundWindows) slowChains(jobs []boundJob, profs []profile, r engine.ResourceName) *slowChains {
	kappa := jobs[0].kappa
	slow := make([]bool, len(jobs))
	found := false
	for i := range jobs {
		lo, hi := jobs[i].holds(r)
		slow[i] = jobs[i].chain && kappa > 0 && kappa < 1 && lo > 0 && hi > lo
		found = found || slow[i]
	}
	if !found {
		return nil
	}
	sc := &slowChains{kappa: kappa, ts: w.ts, linear: make([]float64, len(w.ts))}
	for i := range jobs {
		var c slowChain
		if slow[i] {
			lo, hi := jobs[i].holds(r)
			c = slowChain{arrival: jobs[i].arrival, lo: lo, hi: hi, pre: make([]float64, len(w.ts)),
				fastest: lo * math.Pow(hi/lo, kappa), marginal: kappa * math.Pow(hi/lo, kappa-1)}
		}
		for k, t := range w.ts {
			if jobs[i].arrival >= t {
				continue
			}
			if v := profs[i].prefix(t - jobs[i].arrival); slow[i] {
				c.pre[k] = v
			} else {
				sc.linear[k] += v
			}
		}
		if slow[i] {
			sc.chains = append(sc.chains, c)
		}
	}
	sc.n = max(1, slowBudget/(len(w.ts)*len(sc.chains)))
	return sc
}

// reach is how far apart (in candidate instants) the windows windowWork
// looks at may be: 0 without slow chains.
func (sc *slowChains) reach() int {
	if sc == nil {
		return 0
	}
	return sc.n
}

// slowPart is a slow chain's share of a window above its min-size hold:
// holding a (base ≤ a ≤ top) in the window it does base·(a/base)^κ, and
// work at top.
type slowPart struct{ base, top, work float64 }

// windowWork is the most work the jobs can do between s = ts[q] and
// u = ts[k] with window (= cap(R)·(u − s)) of resource R, on top of what
// each can have done on its own by s; or window when that is clear to be
// no less than limit (the caller's use for it).
//
// By u a job has done at most min(prefix(u), done(s) + in-window work),
// with done(s) ≤ prefix(s): at most prefix(s) + min(gain, in-window work)
// where gain = prefix(u) − prefix(s). A job that is not a slow chain does
// no more in the window than it holds; a slow chain that holds A over its
// L = u − max(s, arrival) does at most A up to lo·L, and lo·L·(A/(lo·L))^κ
// above, never more than hi·L held. Each job's share is concave in A, so
// the most all do with window is: every unit that does one unit of work
// first (every other job's gain, each slow chain's up to lo·L), and the
// rest split among the slow chains above their min-size hold (waterFill).
func (sc *slowChains) windowWork(q, k int, window, limit float64) float64 {
	s, u := sc.ts[q], sc.ts[k]
	// Work done one for one with what is held: every other job's gain,
	// each slow chain's up to its min-size hold (full). Above that the
	// slow chains do at most room more, each unit held at least marginal:
	// where even that reaches limit, the window cannot lower the caller's
	// bound. Most windows end here.
	full, room, marginal := sc.linear[k]-sc.linear[q], 0.0, 1.0
	for _, c := range sc.chains {
		if c.arrival >= u {
			break // sorted by arrival
		}
		l := u - max(s, c.arrival)
		gain, base := c.pre[k]-c.pre[q], c.lo*l
		full += min(gain, base)
		if gain > base {
			room += min(gain, c.fastest*l) - base
			marginal = min(marginal, c.marginal)
		}
	}
	if full+min(room, marginal*(window-full)) >= min(window, limit) {
		return window
	}
	// The slow chains' gains above their min-size holds.
	parts := sc.parts[:0]
	for _, c := range sc.chains {
		if c.arrival >= u {
			break
		}
		l := u - max(s, c.arrival)
		gain, base := c.pre[k]-c.pre[q], c.lo*l
		if gain <= base {
			continue
		}
		p := slowPart{base: base, top: c.hi * l, work: c.fastest * l}
		if gain < p.work { // it reaches its gain at base·(gain/base)^(1/κ) held
			p.top, p.work = base*math.Pow(gain/base, 1/sc.kappa), gain
		}
		parts = append(parts, p)
	}
	sc.parts = parts
	return min(window, full+waterFill(parts, window-full, sc.kappa))
}

// waterFill is the most work the parts do beyond their bases with extra
// more of the resource among them. A part's work at a held,
// base·(a/base)^κ, is concave in a, so for any price λ ≥ 0 the most is at
// most Σ max over a of (work(a) − base − λ·(a − base)) + λ·extra (weak
// duality). The part's best a at price λ is where its marginal work
// κ·(a/base)^(κ−1) is λ, a = base·(λ/κ)^(1/(κ−1)), clipped to
// [base, top]; bisection finds the λ at which they hold extra, where the
// bound is tight. Any λ gives a valid upper bound, so stopping the
// bisection early only loosens it.
func waterFill(parts []slowPart, extra, kappa float64) float64 {
	at := func(lambda float64) (held, work float64) {
		r := math.Inf(1) // a/base where the marginal work is λ
		if lambda > 0 {
			r = math.Pow(lambda/kappa, 1/(kappa-1))
		}
		w := math.Pow(r, kappa)
		for _, p := range parts {
			if a := p.base * r; a < p.top {
				held, work = held+a-p.base, work+p.base*w-p.base
			} else {
				held, work = held+p.top-p.base, work+p.work-p.base
			}
		}
		return held, work
	}
	if held, work := at(0); held <= extra {
		return work // every part reaches its top
	}
	lo, hi := 0.0, kappa // at λ = κ every part holds its base, at 0 its top
	for range 40 {
		mid := (lo + hi) / 2
		if held, _ := at(mid); held > extra {
			lo = mid
		} else {
			hi = mid
		}
	}
	held, work := at(hi)
	return work + hi*(extra-held)
}
