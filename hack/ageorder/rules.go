package main

import "fmt"

// rule is an online width rule: each train's cap from what the model
// knows at the time (no arrival or run time ahead).
type rule struct {
	name string
	cap  func(m *model, p int) int
}

// rules are the simple online rules the tool tries: a fixed cap, and a
// cap that applies only while trains queue (any, or younger than the
// one capped, or at least k younger ones). Each train starts at most at
// its cap.
func rules() []rule {
	var rs []rule
	for c := trainMin; c < trainMax; c++ {
		rs = append(rs, rule{fmt.Sprintf("every train capped at %d", c), func(*model, int) int { return c }})
	}
	for c := trainMin; c < trainMax; c++ {
		rs = append(rs, rule{fmt.Sprintf("capped at %d while any train queues", c), func(m *model, p int) int {
			return capWhile(m.queuedTrains(-1) > 0, c)
		}})
	}
	for c := trainMin; c < trainMax; c++ {
		rs = append(rs, rule{fmt.Sprintf("capped at %d while a younger train queues", c), func(m *model, p int) int {
			return capWhile(m.queuedTrains(p) > 0, c)
		}})
	}
	for k := 2; k <= 3; k++ {
		rs = append(rs, rule{fmt.Sprintf("capped at %d while %d younger trains queue", trainMin, k), func(m *model, p int) int {
			return capWhile(m.queuedTrains(p) >= k, trainMin)
		}})
	}
	for _, times := range []int{1, 2} {
		name := "capped at the trains' equal share"
		if times > 1 {
			name = fmt.Sprintf("capped at %d × the trains' equal share", times)
		}
		rs = append(rs, rule{name, func(m *model, _ int) int {
			return max(trainMin, min(trainMax, times*m.equalShare()))
		}})
	}
	return rs
}

// equalShare is what each train present (running or queued) would hold
// if the GPUs the validates and tests do not hold were shared evenly:
// processor sharing, which under sub-linear scaling does the most work.
func (m *model) equalShare() int {
	trains := len(m.trains) + m.queuedTrains(-1)
	if trains == 0 {
		return trainMax
	}
	rigid := 0
	for _, r := range m.rigids {
		rigid += r.k.gpus()
	}
	return (clusterGPUs - rigid) / trains
}

func capWhile(cond bool, c int) int {
	if cond {
		return c
	}
	return trainMax
}

// queuedTrains counts the queued trains of pipelines younger than p.
func (m *model) queuedTrains(p int) int {
	n := 0
	for _, r := range m.queue {
		if r.k == train && r.p > p {
			n++
		}
	}
	return n
}

// withRule is x (every train starting at 8) with r's caps.
func withRule(n int, r rule) widths {
	x := uniform(n, trainMax)
	x.online = r.cap
	return x
}

// tableRules are the online rules whose cap depends only on how many
// younger trains queue (none, 1, 2, 3 or more): a cap of 4 to 8 for each,
// with growth to the oldest or the youngest train first (1,250 rules),
// each train starting with up to 8 (at most its cap).
func tableRules(n int) []widths {
	var xs []widths
	var caps [4]int
	var fill func(i int)
	fill = func(i int) {
		if i == len(caps) {
			for _, youngest := range []bool{false, true} {
				c := caps
				x := uniform(n, trainMax)
				x.online = func(m *model, p int) int { return c[min(len(c)-1, m.queuedTrains(p))] }
				x.youngestFirst = youngest
				x.table = c
				xs = append(xs, x)
			}
			return
		}
		for c := trainMin; c <= trainMax; c++ {
			caps[i] = c
			fill(i + 1)
		}
	}
	fill(0)
	return xs
}

// takeRules leave the age order: every train starts and grows up to 8,
// and a queued train whose min does not fit takes older trains' GPUs
// above a floor of 4 to 7 once 1 to 4 trains (it and younger ones)
// queue (16 rules).
func takeRules(n int) []widths {
	var xs []widths
	for floor := trainMin; floor < trainMax; floor++ {
		for queued := 1; queued <= 4; queued++ {
			x := uniform(n, trainMax)
			x.take = take{floor: floor, queued: queued}
			xs = append(xs, x)
		}
	}
	return xs
}

// takeTableRules are every take rule with every table rule: 20,000
// rules, each train starting with up to its cap.
func takeTableRules(n int) []widths {
	var xs []widths
	for _, tk := range takeRules(n) {
		for _, x := range tableRules(n) {
			x.take = tk.take
			xs = append(xs, x)
		}
	}
	return xs
}

// capsNothing reports whether x's table caps no train.
func capsNothing(x widths) bool { return x.table == [4]int{trainMax, trainMax, trainMax, trainMax} }

// outcomes are the figures of each rule of xs.
func outcomes(pipes []pipeline, e float64, xs []widths) []outcome {
	outs := make([]outcome, len(xs))
	for i, x := range xs {
		outs[i] = simulate(pipes, x, e)
	}
	return outs
}

// bestRule is the rule of xs with the shortest makespan (ties: the lower
// average JCT, then the first).
func bestRule(pipes []pipeline, e float64, xs []widths) (outcome, widths) {
	outs := outcomes(pipes, e, xs)
	i := best(outs, func(int) bool { return true })
	return outs[i], xs[i]
}

// best is the index of the best outcome among those keep admits (ties:
// the first), or -1.
func best(outs []outcome, keep func(i int) bool) int {
	b := -1
	for i, o := range outs {
		if keep(i) && (b < 0 || o.beats(outs[b])) {
			b = i
		}
	}
	return b
}

// takeName describes a take rule.
func takeName(x widths) string {
	trains := "trains queue"
	if x.take.queued == 1 {
		trains = "train queues"
	}
	return fmt.Sprintf("above %d once %d %s", x.take.floor, x.take.queued, trains)
}

// tableName describes a table rule.
func tableName(x widths) string {
	order := "oldest"
	if x.youngestFirst {
		order = "youngest"
	}
	return fmt.Sprintf("caps %d/%d/%d/%d, %s first", x.table[0], x.table[1], x.table[2], x.table[3], order)
}
