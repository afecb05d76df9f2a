package cli

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/sim"
	"github.com/phasegang/phasegang/tracing"
)

// simNamespace is the namespace simulated pipelines' spans name.
const simNamespace = "sim"

// simExporter exports the simulator's pipelines with the controller's span
// model, at virtual times (sim.Epoch + virtual time).
type simExporter struct {
	tr  *tracing.Tracing
	run string
}

func newSimExporter(endpoint string) (*simExporter, error) {
	exp, err := tracing.OTLPExporter(context.Background(), endpoint)
	if err != nil {
		return nil, err
	}
	return newSimExporterWith(exp)
}

func newSimExporterWith(exp sdktrace.SpanExporter) (*simExporter, error) {
	t, err := tracing.New(context.Background(), exp)
	if err != nil {
		return nil, err
	}
	return &simExporter{tr: t, run: time.Now().UTC().Format(time.RFC3339Nano)}, nil
}

func (e *simExporter) shutdown(stderr io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.tr.Shutdown(ctx); err != nil {
		fmt.Fprintf(stderr, "phasegang: exporting traces: %v\n", err)
	}
}

// simPolicyTracer traces one policy's run.
type simPolicyTracer struct {
	e      *simExporter
	policy sim.Policy
	// ends holds each pipeline's last phase end (virtual time).
	ends map[string]time.Duration
}

func (e *simExporter) policy(p sim.Policy) *simPolicyTracer {
	return &simPolicyTracer{e: e, policy: p, ends: map[string]time.Duration{}}
}

// traceID is one trace per pipeline, policy and run of the command.
func (t *simPolicyTracer) traceID(pipeline string) trace.TraceID {
	h := sha256.Sum256([]byte(t.e.run + "/" + string(t.policy) + "/" + pipeline))
	var id trace.TraceID
	copy(id[:], h[:16])
	return id
}

func (t *simPolicyTracer) observe(r sim.PhaseRecord) {
	at := func(d time.Duration) time.Time { return sim.Epoch.Add(d) }
	a := simPhaseAttempt(t.traceID(r.Pipeline), r)
	a.Queued, a.Reserved, a.Started, a.Ended = at(r.Queued), at(r.Started), at(r.Started), at(r.Ended)
	t.e.tr.Tracer.EmitPhase(context.Background(), a)
	t.ends[r.Pipeline] = max(t.ends[r.Pipeline], r.Ended)
}

// simPhaseAttempt is a simulated phase attempt's span (times aside).
func simPhaseAttempt(tid trace.TraceID, r sim.PhaseRecord) tracing.PhaseAttempt {
	a := tracing.PhaseAttempt{
		TraceID: tid, Pipeline: simNamespace + "/" + r.Pipeline, Instance: r.Instance,
		Min: r.Min, Desired: r.Desired, Granted: r.Workers,
		GPUs:    int64(float64(r.Workers)*r.GPUs + 0.5),
		Outcome: string(v1alpha1.PhaseSucceeded),
	}
	if r.Failed {
		a.Outcome = string(v1alpha1.PhaseFailed)
	}
	for _, n := range r.Nodes {
		if !slices.Contains(a.Nodes, n) {
			a.Nodes = append(a.Nodes, n)
		}
	}
	slices.Sort(a.Nodes)
	if r.Instance.Attempt > 0 {
		a.Events = append(a.Events, v1alpha1.PhaseEvent{Time: metav1.NewTime(sim.Epoch.Add(r.Queued)), Type: v1alpha1.PhaseEventRetry,
			Message: fmt.Sprintf("attempt %d failed", r.Instance.Attempt-1)})
	}
	for _, z := range r.Resizes {
		e := v1alpha1.PhaseEvent{Time: metav1.NewTime(sim.Epoch.Add(z.At)), Type: v1alpha1.PhaseEventShrink, Workers: z.Workers, Message: "gave back surplus workers"}
		if z.Grow {
			e.Type, e.Message = v1alpha1.PhaseEventGrow, "grew"
		}
		a.Events = append(a.Events, e)
	}
	return a
}

// finish emits every pipeline's root span once the run is over.
func (t *simPolicyTracer) finish(r *sim.Result) {
	for _, p := range r.Pipelines {
		end := max(p.Finish, p.Arrival, t.ends[p.Name])
		t.e.tr.Tracer.EmitPipeline(context.Background(), tracing.PipelineSpan{
			TraceID: t.traceID(p.Name), Namespace: simNamespace, Name: p.Name,
			Start: sim.Epoch.Add(p.Arrival), End: sim.Epoch.Add(end),
			State: p.State, Phases: p.Phases,
			Attributes: []attribute.KeyValue{attribute.String("phasegang.policy", string(t.policy))},
		})
	}
}
