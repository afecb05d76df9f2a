package eventqueue

import (
	"errors"
	"fmt"
	"time"
)

// ErrNoFixpoint says that an instant did not settle within Loop.MaxRounds
// rounds; the run went on to the next instant.
var ErrNoFixpoint = errors.New("no fixpoint")

// ErrStepCap says that the run stopped at Loop.MaxSteps rounds, with
// events still queued.
var ErrStepCap = errors.New("step cap reached")

// Loop is the discrete-event loop that the simulator and the engine's
// harness share. At each instant it hands every event at that time to
// Handle, one at a time in queue order (an event Handle pushes at the same
// instant is handled with them), then calls Settle until it reports that
// nothing changed (a fixpoint), then AfterInstant.
type Loop[E any] struct {
	// Handle applies one event at virtual time now.
	Handle func(now time.Duration, e E)
	// Settle runs one round at now (round counts from 0 at each instant)
	// and reports whether it changed anything, so that another round is
	// due.
	Settle func(now time.Duration, round int) bool
	// MaxRounds bounds the rounds of one instant (default 1); an instant
	// still changing after it is ErrNoFixpoint.
	MaxRounds int
	// MaxSteps bounds the rounds of the whole run (0: no bound); it is
	// checked before each instant and ends the run with ErrStepCap.
	MaxSteps int
	// AfterInstant, if set, runs once each instant has settled.
	AfterInstant func(now time.Duration)
}

// Run drives q until it is empty (or the step cap). It returns the last
// instant it reached and, joined, every ErrNoFixpoint and ErrStepCap met.
func (l *Loop[E]) Run(q *Queue[E]) (time.Duration, error) {
	var (
		now   time.Duration
		steps int
		errs  []error
	)
	for q.Len() > 0 {
		if l.MaxSteps > 0 && steps >= l.MaxSteps {
			errs = append(errs, fmt.Errorf("%w: %d rounds, at %v", ErrStepCap, l.MaxSteps, now))
			break
		}
		now = q.At()
		for q.Len() > 0 && q.At() == now {
			l.Handle(now, q.Pop())
		}
		rounds, settled := l.settle(now)
		steps += rounds
		if !settled {
			errs = append(errs, fmt.Errorf("%w after %d rounds at %v", ErrNoFixpoint, rounds, now))
		}
		if l.AfterInstant != nil {
			l.AfterInstant(now)
		}
	}
	return now, errors.Join(errs...)
}

// settle runs Settle at now until it changes nothing, at most MaxRounds
// times; it returns the rounds run and whether the last changed nothing.
func (l *Loop[E]) settle(now time.Duration) (int, bool) {
	limit := max(l.MaxRounds, 1)
	for k := range limit {
		if !l.Settle(now, k) {
			return k + 1, true
		}
	}
	return limit, false
}
