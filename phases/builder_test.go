package phases

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// Specs come from internal/wrappers (wrappers.MakePT); what is left here
// is the phases tests' own shorthand.

// compile compiles a spec as given (no defaults), failing the test on any
// error.
func compile(tb testing.TB, pt *v1alpha1.PhasedTraining) *Pipeline {
	tb.Helper()
	p, errs := Compile(pt)
	if len(errs) > 0 {
		tb.Fatalf("Compile: %v", errs.ToAggregate())
	}
	return p
}

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time {
	t := metav1.NewTime(t0.Add(d))
	return &t
}

// ps builds a status entry: ps("train", 0, 0, Running).
type psb struct{ v1alpha1.PhaseStatus }

func ps(name string, it, attempt int32, state v1alpha1.PhaseState) *psb {
	return &psb{v1alpha1.PhaseStatus{Name: name, Iteration: it, Attempt: attempt, State: state}}
}
func (p *psb) Out(kv ...string) *psb {
	p.Outputs = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		p.Outputs[kv[i]] = kv[i+1]
	}
	return p
}
func (p *psb) Workers(granted, succeeded, failed int32) *psb {
	p.PhaseStatus.Workers = v1alpha1.WorkerCounts{Granted: granted, Succeeded: succeeded, Failed: failed}
	return p
}
func (p *psb) Reserved(d time.Duration) *psb { p.ReservedTime = at(d); return p }
func (p *psb) Started(d time.Duration) *psb  { p.StartTime = at(d); return p }
func (p *psb) Msg(m string) *psb             { p.Message = m; return p }
func (p *psb) Failures(n int32) *psb         { p.StartFailures = n; return p }
func (p *psb) Waiting(w string) *psb         { p.WaitingFor = w; return p }

func status(entries ...*psb) *v1alpha1.PhasedTrainingStatus {
	s := &v1alpha1.PhasedTrainingStatus{}
	for _, e := range entries {
		s.Phases = append(s.Phases, e.PhaseStatus)
	}
	return s
}

func inst(name string, it, attempt int32) Instance { return Instance{name, it, attempt} }
