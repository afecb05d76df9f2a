package sim

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/phasegang/phasegang/engine"
)

func gpuTQ(name, cohort string, nominal float64, weight int64, lend, borrow *float64) engine.Queue {
	qq := engine.QueueQuota{Nominal: int64(nominal * 1000)}
	if lend != nil {
		v := int64(*lend * 1000)
		qq.LendingLimit = &v
	}
	if borrow != nil {
		v := int64(*borrow * 1000)
		qq.BorrowingLimit = &v
	}
	return engine.Queue{Name: name, Cohort: cohort, Weight: weight,
		Resources: map[engine.ResourceName]engine.QueueQuota{engine.ResourceName(gpuResource): qq}}
}

func gpusOf(v float64) *float64 { return &v }

func TestEntitlement(t *testing.T) {
	for name, tc := range map[string]struct {
		queues []engine.Queue
		demand []float64
		want   []float64
	}{
		"every queue under its nominal quota gets its demand": {
			queues: []engine.Queue{gpuTQ("a", "c", 8, 0, nil, nil), gpuTQ("b", "c", 8, 0, nil, nil)},
			demand: []float64{3, 8}, want: []float64{3, 8},
		},
		"one idle: the other is entitled to all it lends": {
			queues: []engine.Queue{gpuTQ("a", "c", 8, 0, nil, nil), gpuTQ("b", "c", 8, 0, nil, nil)},
			demand: []float64{20, 0}, want: []float64{16, 0},
		},
		"what one lends is shared by weight, and the rest flows on": {
			queues: []engine.Queue{gpuTQ("a", "c", 4, 1000, nil, nil), gpuTQ("b", "c", 4, 3000, nil, nil), gpuTQ("idle", "c", 8, 0, nil, nil)},
			// 8 lent: a gets 2 of it by weight, b 6; then b wants only 5,
			// so its unused 1 goes to a.
			demand: []float64{100, 9, 0}, want: []float64{7, 9, 0},
		},
		"lending and borrowing limits": {
			queues: []engine.Queue{gpuTQ("a", "c", 8, 0, nil, gpusOf(2)), gpuTQ("b", "c", 8, 0, gpusOf(4), nil)},
			demand: []float64{20, 0}, want: []float64{10, 0},
		},
		"no cohort: its nominal quota at most": {
			queues: []engine.Queue{gpuTQ("a", "", 8, 0, nil, nil), gpuTQ("b", "", 8, 0, nil, nil)},
			demand: []float64{20, 0}, want: []float64{8, 0},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := newQueueTracker(tc.queues).entitlement(tc.demand)
			if !slices.EqualFunc(got, tc.want, func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }) {
				t.Errorf("entitlement %v for demand %v, want %v", got, tc.demand, tc.want)
			}
		})
	}
}

func TestJain(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{1, 1, 1}, 1},
		{[]float64{0.5, 0.5}, 1}, // equal fractions are fair, whatever they are
		{[]float64{1, 0}, 0.5},   // one of two gets nothing: 1/n
		{[]float64{1, 0.5}, 0.9}, // 2.25 / (2 × 1.25)
	} {
		if got := jain(tc.xs); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("jain(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}

// Hours with work waiting: an hour counts when at some instant of it the
// queue wanted more than it held, its ratio over the time it had demand.
func TestWaitingHours(t *testing.T) {
	tr := newQueueTracker([]engine.Queue{gpuTQ("a", "", 8, 0, nil, nil)})
	h := time.Hour
	tr.samples = []QueueSample{
		{At: 0, Demand: []float64{8}, Held: []float64{8}},     // hour 0: nothing waits
		{At: h, Demand: []float64{12}, Held: []float64{6}},    // hour 1: waits, 6 of 8
		{At: 2 * h, Demand: []float64{4}, Held: []float64{4}}, // hour 2: half an hour, nothing waits
		{At: 2*h + 30*time.Minute, Demand: []float64{0}, Held: []float64{0}},
		{At: 3 * h, Demand: []float64{10}, Held: []float64{8}}, // hour 3: waits half an hour, 8 of 8
		{At: 3*h + 30*time.Minute, Demand: []float64{0}, Held: []float64{0}},
	}
	m := tr.fairness(4 * h).Queues[0]
	if m.WaitingHours != 2 || m.WaitingShort != 1 || math.Abs(m.WaitingWorst-0.75) > 1e-9 {
		t.Errorf("waiting hours %d, short %d, worst %v; want 2, 1, 0.75", m.WaitingHours, m.WaitingShort, m.WaitingWorst)
	}
	if m.Hours != 2 || m.Short != 1 {
		t.Errorf("hours with demand throughout %d, short %d; want 2, 1", m.Hours, m.Short)
	}
}
