package eventqueue

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The loop handles every event of an instant (also one pushed at that
// instant while handling), then settles until a round changes nothing, then
// calls AfterInstant; it ends at the last instant.
func TestLoopHandlesThenSettles(t *testing.T) {
	var q Queue[string]
	q.Push(time.Second, "a")
	q.Push(2*time.Second, "c")
	var log []string
	pending := 0
	l := Loop[string]{
		Handle: func(now time.Duration, e string) {
			log = append(log, fmt.Sprintf("%v handle %s", now, e))
			if e == "a" {
				q.Push(now, "b") // same instant: handled before settling
			}
			pending++
		},
		Settle: func(now time.Duration, round int) bool {
			log = append(log, fmt.Sprintf("%v settle %d", now, round))
			if pending == 0 {
				return false
			}
			pending--
			return true
		},
		MaxRounds:    8,
		AfterInstant: func(now time.Duration) { log = append(log, fmt.Sprintf("%v after", now)) },
	}
	end, err := l.Run(&q)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"1s handle a", "1s handle b", "1s settle 0", "1s settle 1", "1s settle 2", "1s after",
		"2s handle c", "2s settle 0", "2s settle 1", "2s after",
	}
	if d := cmp.Diff(want, log); d != "" {
		t.Errorf("log (-want +got):\n%s", d)
	}
	if end != 2*time.Second {
		t.Errorf("end %v, want 2s", end)
	}
}

// An instant that never settles is ErrNoFixpoint after MaxRounds rounds and
// the run goes on; MaxSteps stops the run with ErrStepCap.
func TestLoopCaps(t *testing.T) {
	var q Queue[int]
	for i := range 5 {
		q.Push(time.Duration(i)*time.Second, i)
	}
	var handled []int
	l := Loop[int]{
		Handle:    func(_ time.Duration, e int) { handled = append(handled, e) },
		Settle:    func(time.Duration, int) bool { return true },
		MaxRounds: 3,
		MaxSteps:  6,
	}
	end, err := l.Run(&q)
	if !errors.Is(err, ErrNoFixpoint) || !errors.Is(err, ErrStepCap) {
		t.Fatalf("error %v, want ErrNoFixpoint and ErrStepCap", err)
	}
	if d := cmp.Diff([]int{0, 1}, handled); d != "" {
		t.Errorf("handled (-want +got):\n%s", d)
	}
	if end != time.Second || q.Len() != 3 {
		t.Errorf("end %v with %d queued, want 1s with 3", end, q.Len())
	}
	want := "no fixpoint after 3 rounds at 0s\nno fixpoint after 3 rounds at 1s\nstep cap reached: 6 rounds, at 1s"
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
