package eventqueue

import (
	"container/heap"
	"time"
)

// Queue holds events of type E at virtual times (offsets from the run's
// start). The zero value is empty and ready to use.
type Queue[E any] struct {
	h   entries[E]
	seq int
}

type entry[E any] struct {
	at  time.Duration
	seq int
	e   E
}

// Push schedules e at at.
func (q *Queue[E]) Push(at time.Duration, e E) {
	q.seq++
	heap.Push(&q.h, entry[E]{at: at, seq: q.seq, e: e})
}

// Len is how many events are scheduled.
func (q *Queue[E]) Len() int { return len(q.h) }

// At is the earliest event's time; call only when Len() > 0.
func (q *Queue[E]) At() time.Duration { return q.h[0].at }

// Pop removes and returns the earliest event (the first pushed among
// those at the same time); call only when Len() > 0.
func (q *Queue[E]) Pop() E { return heap.Pop(&q.h).(entry[E]).e }

// PopInstant removes every event at the earliest time and returns them in
// push order, with their time. It reports false when the queue is empty.
func (q *Queue[E]) PopInstant() (time.Duration, []E, bool) {
	if q.Len() == 0 {
		return 0, nil, false
	}
	now := q.At()
	var out []E
	for q.Len() > 0 && q.At() == now {
		out = append(out, q.Pop())
	}
	return now, out, true
}

type entries[E any] []entry[E]

func (h entries[E]) Len() int { return len(h) }
func (h entries[E]) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h entries[E]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *entries[E]) Push(x any)   { *h = append(*h, x.(entry[E])) }
func (h *entries[E]) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
