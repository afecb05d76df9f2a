package eventqueue

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestQueueOrdersByTimeThenPushOrder(t *testing.T) {
	var q Queue[string]
	q.Push(2*time.Second, "c")
	q.Push(time.Second, "a")
	q.Push(2*time.Second, "d")
	q.Push(time.Second, "b")
	var got []string
	var instants []time.Duration
	for {
		now, batch, ok := q.PopInstant()
		if !ok {
			break
		}
		instants = append(instants, now)
		got = append(got, batch...)
	}
	if d := cmp.Diff([]string{"a", "b", "c", "d"}, got); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]time.Duration{time.Second, 2 * time.Second}, instants); d != "" {
		t.Errorf("instants (-want +got):\n%s", d)
	}
}
