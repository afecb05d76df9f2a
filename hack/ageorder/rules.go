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
	return rs
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
