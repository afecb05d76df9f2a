package phases

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// ptBuilder builds specs tersely: MakePT("p").Phase("train", 8).DependsOn("prep").
type ptBuilder struct {
	pt *v1alpha1.PhasedTraining
}

func MakePT(name string) *ptBuilder {
	return &ptBuilder{pt: &v1alpha1.PhasedTraining{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}}
}

func (b *ptBuilder) last() *v1alpha1.Phase { return &b.pt.Spec.Phases[len(b.pt.Spec.Phases)-1] }

// Phase adds a phase with a gang of min workers and one container.
func (b *ptBuilder) Phase(name string, min int32) *ptBuilder {
	b.pt.Spec.Phases = append(b.pt.Spec.Phases, v1alpha1.Phase{
		Name: name,
		Gang: v1alpha1.Gang{Min: min},
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "worker", Image: "trainer:1"}},
		}},
	})
	return b
}

func (b *ptBuilder) DependsOn(names ...string) *ptBuilder {
	b.last().DependsOn = append(b.last().DependsOn, names...)
	return b
}
func (b *ptBuilder) When(e string) *ptBuilder   { b.last().When = e; return b }
func (b *ptBuilder) Policy(e string) *ptBuilder { b.last().SuccessPolicy = e; return b }
func (b *ptBuilder) Outputs(k ...string) *ptBuilder {
	b.last().Outputs = append(b.last().Outputs, k...)
	return b
}
func (b *ptBuilder) Retries(n int32) *ptBuilder { b.last().MaxRetries = n; return b }
func (b *ptBuilder) Desired(n int32) *ptBuilder { b.last().Gang.Desired = &n; return b }
func (b *ptBuilder) Timeout(d time.Duration) *ptBuilder {
	b.last().Timeout = &metav1.Duration{Duration: d}
	return b
}
func (b *ptBuilder) StartTimeout(d time.Duration) *ptBuilder {
	b.last().StartTimeout = &metav1.Duration{Duration: d}
	return b
}
func (b *ptBuilder) NoContainers() *ptBuilder {
	b.last().Template.Spec.Containers = nil
	return b
}
func (b *ptBuilder) Iterate(max int32, until string, chain ...string) *ptBuilder {
	b.pt.Spec.Iterate = &v1alpha1.Iterate{Phases: chain, Until: until, MaxIterations: max}
	return b
}
func (b *ptBuilder) Priority(p int32, class string) *ptBuilder {
	b.pt.Spec.Priority = &p
	b.pt.Spec.PriorityClassName = class
	return b
}
func (b *ptBuilder) Obj() *v1alpha1.PhasedTraining { return b.pt }

// Pipeline compiles the spec, failing the test on any error.
func (b *ptBuilder) Pipeline(t testing.TB) *Pipeline {
	t.Helper()
	p, errs := Compile(b.pt)
	if len(errs) > 0 {
		t.Fatalf("Compile: %v", errs.ToAggregate())
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

func status(entries ...*psb) *v1alpha1.PhasedTrainingStatus {
	s := &v1alpha1.PhasedTrainingStatus{}
	for _, e := range entries {
		s.Phases = append(s.Phases, e.PhaseStatus)
	}
	return s
}

func inst(name string, it, attempt int32) Instance { return Instance{name, it, attempt} }
