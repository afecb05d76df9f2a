package tracing

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/phases"
)

// Span names and the stable names span ids are derived from.
const (
	// RootSpanKey is the stable name of a pipeline's root span.
	RootSpanKey = "pipeline"
	// SpanQueued, SpanReserved and SpanRunning are a phase attempt's
	// children (and the suffixes of their stable names).
	SpanQueued   = "queued"
	SpanReserved = "reserved"
	SpanRunning  = "running"
)

// TracerName is the instrumentation scope of phasegang's spans.
const TracerName = "github.com/phasegang/phasegang"

// SpanIDFor derives a span id from the trace id and a stable name (the
// first 8 bytes of sha256("<trace id hex>/<name>")): the same pipeline
// status always yields the same span ids, in any controller process.
func SpanIDFor(traceID trace.TraceID, name string) trace.SpanID {
	h := sha256.Sum256([]byte(traceID.String() + "/" + name))
	var id trace.SpanID
	copy(id[:], h[:8])
	if !id.IsValid() {
		id[7] = 1
	}
	return id
}

// PhaseSpanKey is the stable name of a phase attempt's span:
// "<phase>#<iteration>.<attempt>".
func PhaseSpanKey(in phases.Instance) string { return in.String() }

type wantedIDsKey struct{}

type wantedIDs struct {
	traceID trace.TraceID
	spanID  trace.SpanID
}

func withWantedIDs(ctx context.Context, tid trace.TraceID, sid trace.SpanID) context.Context {
	return context.WithValue(ctx, wantedIDsKey{}, wantedIDs{tid, sid})
}

// DeterministicIDs is an sdktrace.IDGenerator that gives a span the ids
// its caller put in the context (phasegang's tracer derives them from the
// status); without them it generates random ids, like the SDK's default.
type DeterministicIDs struct{}

var _ sdktrace.IDGenerator = DeterministicIDs{}

// NewIDs returns the wanted trace and span id, or random ones.
func (DeterministicIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if w, ok := ctx.Value(wantedIDsKey{}).(wantedIDs); ok && w.traceID.IsValid() && w.spanID.IsValid() {
		return w.traceID, w.spanID
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		_, _ = crand.Read(tid[:])
	}
	return tid, randomSpanID()
}

// NewSpanID returns the wanted span id if it was wanted in this trace, or
// a random one.
func (DeterministicIDs) NewSpanID(ctx context.Context, tid trace.TraceID) trace.SpanID {
	if w, ok := ctx.Value(wantedIDsKey{}).(wantedIDs); ok && w.traceID == tid && w.spanID.IsValid() {
		return w.spanID
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		_, _ = crand.Read(sid[:])
	}
	return sid
}

// NewTracerProvider returns an SDK tracer provider that samples every span
// and takes the span ids phasegang's tracer asks for. opts add the span
// processors (a batch processor around an exporter) and the resource.
func NewTracerProvider(opts ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	all := append([]sdktrace.TracerProviderOption{sdktrace.WithSampler(sdktrace.AlwaysSample())}, opts...)
	all = append(all, sdktrace.WithIDGenerator(DeterministicIDs{}))
	return sdktrace.NewTracerProvider(all...)
}

// OTelTracer is the PhaseTracer that exports OpenTelemetry spans. Each span
// is emitted once what it describes has ended, with the start and end
// times of the status, and with ids derived from status.traceID and a
// stable name, so spans emitted by different controller processes (a
// restart, a new leader) form one trace with the right parents.
type OTelTracer struct {
	tracer trace.Tracer
}

// NewOTelTracer traces through tp, which must generate ids with
// DeterministicIDs (NewTracerProvider does).
func NewOTelTracer(tp trace.TracerProvider) *OTelTracer {
	return &OTelTracer{tracer: tp.Tracer(TracerName)}
}

// PipelineSpan is what a pipeline's root span shows.
type PipelineSpan struct {
	TraceID trace.TraceID
	// ParentSpanID is the caller's span (from the traceparent annotation);
	// invalid when the pipeline started the trace.
	ParentSpanID trace.SpanID
	// Namespace and Name name the PhasedTraining.
	Namespace, Name string
	Start, End      time.Time
	// State is the pipeline's final state (Succeeded, Failed...).
	State string
	// Phases counts the phase attempts (status.phases entries).
	Phases int
	// Attributes are added as they are (the simulator adds its policy).
	Attributes []attribute.KeyValue
}

// PhaseAttempt is what a phase attempt's span and its children show.
// Zero times are unknown: a child span is emitted only if its start is
// known.
type PhaseAttempt struct {
	TraceID  trace.TraceID
	Pipeline string // namespace/name
	phases.Instance
	Min, Desired, Granted int32
	// GPUs is granted × GPUs per worker.
	GPUs int64
	// Nodes are the distinct nodes of the gang, sorted.
	Nodes []string
	// Domains are the workers' topology domains, by worker index
	// (status.phases[].domains; none without --topology-levels).
	Domains []string
	// Outcome is the attempt's final state: Succeeded, Failed, Skipped.
	Outcome    string
	Message    string
	WaitingFor string
	// Queued, Reserved, Started and Ended bound the children: queued
	// (Queued→Reserved), reserved (Reserved→Started: pods starting),
	// running (Started→Ended).
	Queued, Reserved, Started, Ended time.Time
	// Events become span events (Reserved entries excepted).
	Events []v1alpha1.PhaseEvent
}

func pipelineEnded(s v1alpha1.PipelineState) bool {
	return s == v1alpha1.PipelineSucceeded || s == v1alpha1.PipelineFailed
}

// Step emits the spans of what this step ended: each phase attempt that is
// ended in after but was not in before, and the root span when the
// pipeline's state became Succeeded or Failed.
func (t *OTelTracer) Step(ctx context.Context, before, after *v1alpha1.PhasedTraining, _ phases.Step) {
	tid, err := trace.TraceIDFromHex(after.Status.TraceID)
	if err != nil {
		return
	}
	was := map[phases.Instance]v1alpha1.PhaseState{}
	if before != nil {
		for _, ps := range before.Status.Phases {
			was[phases.Instance{Name: ps.Name, Iteration: ps.Iteration, Attempt: ps.Attempt}] = ps.State
		}
	}
	for i := range after.Status.Phases {
		ps := &after.Status.Phases[i]
		in := phases.Instance{Name: ps.Name, Iteration: ps.Iteration, Attempt: ps.Attempt}
		if !ps.State.Ended() || was[in].Ended() {
			continue
		}
		t.EmitPhase(ctx, PhaseAttemptOf(tid, after, ps))
	}
	if pipelineEnded(after.Status.State) && (before == nil || !pipelineEnded(before.Status.State)) {
		t.EmitPipeline(ctx, PipelineSpanOf(tid, after))
	}
}

// PhaseAttemptOf reads a phase attempt's span from its status.
func PhaseAttemptOf(tid trace.TraceID, pt *v1alpha1.PhasedTraining, ps *v1alpha1.PhaseStatus) PhaseAttempt {
	a := PhaseAttempt{
		TraceID:  tid,
		Pipeline: pt.Namespace + "/" + pt.Name,
		Instance: phases.Instance{Name: ps.Name, Iteration: ps.Iteration, Attempt: ps.Attempt},
		Min:      ps.Workers.Min, Desired: ps.Workers.Desired, Granted: ps.Workers.Granted,
		Outcome: string(ps.State), Message: ps.Message,
		Events: ps.History,
	}
	if a.Granted == 0 {
		a.Granted = int32(len(ps.Assignments))
	}
	for _, n := range ps.Assignments {
		if !slices.Contains(a.Nodes, n) {
			a.Nodes = append(a.Nodes, n)
		}
	}
	slices.Sort(a.Nodes)
	a.Domains = slices.Clone(ps.Domains)
	if phase := driver.PhaseSpec(pt, ps.Name); phase != nil {
		if a.Min == 0 {
			a.Min, a.Desired = phase.Gang.Min, phase.Gang.DesiredOrMin()
		}
		gpu := driver.WorkerFootprint(&phase.Template.Spec)["nvidia.com/gpu"]
		a.GPUs = int64(a.Granted) * gpu / 1000
	}
	for _, e := range ps.History {
		if e.Type == v1alpha1.PhaseEventReserved {
			a.WaitingFor = e.Message
		}
	}
	if ps.QueuedTime != nil {
		a.Queued = ps.QueuedTime.Time
	}
	if ps.ReservedTime != nil {
		a.Reserved = ps.ReservedTime.Time
	}
	if ps.StartTime != nil {
		a.Started = ps.StartTime.Time
	}
	if ps.EndTime != nil {
		a.Ended = ps.EndTime.Time
	}
	return a
}

// PipelineSpanOf reads a pipeline's root span from its status: from its
// creation to the last phase's end.
func PipelineSpanOf(tid trace.TraceID, pt *v1alpha1.PhasedTraining) PipelineSpan {
	p := PipelineSpan{
		TraceID: tid, Namespace: pt.Namespace, Name: pt.Name,
		Start: pt.CreationTimestamp.Time, End: pt.CreationTimestamp.Time,
		State: string(pt.Status.State), Phases: len(pt.Status.Phases),
	}
	if sid, err := trace.SpanIDFromHex(pt.Status.TraceParentSpanID); err == nil {
		p.ParentSpanID = sid
	}
	for _, ps := range pt.Status.Phases {
		if ps.EndTime != nil && ps.EndTime.After(p.End) {
			p.End = ps.EndTime.Time
		}
	}
	for _, c := range pt.Status.Conditions {
		if c.Type == string(pt.Status.State) && c.LastTransitionTime.After(p.End) {
			p.End = c.LastTransitionTime.Time
		}
	}
	return p
}

func (t *OTelTracer) parent(ctx context.Context, tid trace.TraceID, sid trace.SpanID) context.Context {
	return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true,
	}))
}

// EmitPipeline emits a pipeline's root span "PhasedTraining <ns>/<name>".
func (t *OTelTracer) EmitPipeline(ctx context.Context, p PipelineSpan) {
	if !p.TraceID.IsValid() {
		return
	}
	opts := []trace.SpanStartOption{trace.WithTimestamp(p.Start), trace.WithSpanKind(trace.SpanKindInternal)}
	if p.ParentSpanID.IsValid() {
		ctx = t.parent(ctx, p.TraceID, p.ParentSpanID)
	} else {
		opts = append(opts, trace.WithNewRoot())
	}
	ctx = withWantedIDs(ctx, p.TraceID, SpanIDFor(p.TraceID, RootSpanKey))
	attrs := []attribute.KeyValue{
		attribute.String("phasegang.pipeline", p.Namespace+"/"+p.Name),
		attribute.String("phasegang.state", p.State),
		attribute.Int("phasegang.phases", p.Phases),
	}
	opts = append(opts, trace.WithAttributes(append(attrs, p.Attributes...)...))
	_, span := t.tracer.Start(ctx, fmt.Sprintf("PhasedTraining %s/%s", p.Namespace, p.Name), opts...)
	if p.State == string(v1alpha1.PipelineFailed) {
		span.SetStatus(codes.Error, "pipeline failed")
	}
	span.End(trace.WithTimestamp(later(p.End, p.Start)))
}

func later(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

func firstSet(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// EmitPhase emits a phase attempt's span "phase <name>", a child of the
// pipeline's root span, with its children queued, reserved and running.
func (t *OTelTracer) EmitPhase(ctx context.Context, a PhaseAttempt) {
	if !a.TraceID.IsValid() {
		return
	}
	key := PhaseSpanKey(a.Instance)
	end := a.Ended
	start := firstSet(a.Queued, a.Reserved, a.Started, a.Ended)
	for _, e := range a.Events {
		if !e.Time.IsZero() && (start.IsZero() || e.Time.Time.Before(start)) {
			start = e.Time.Time
		}
	}
	if end.IsZero() {
		end = start
	}
	ctx = t.parent(ctx, a.TraceID, SpanIDFor(a.TraceID, RootSpanKey))
	nodes := a.Nodes
	if nodes == nil {
		nodes = []string{}
	}
	attrs := []attribute.KeyValue{
		attribute.String("phasegang.pipeline", a.Pipeline),
		attribute.String("phasegang.phase", a.Name),
		attribute.Int("phasegang.iteration", int(a.Iteration)),
		attribute.Int("phasegang.attempt", int(a.Attempt)),
		attribute.Int("phasegang.gang.min", int(a.Min)),
		attribute.Int("phasegang.gang.desired", int(a.Desired)),
		attribute.Int("phasegang.gang.granted", int(a.Granted)),
		attribute.Int64("phasegang.gpus", a.GPUs),
		attribute.StringSlice("phasegang.nodes", nodes),
		attribute.String("phasegang.outcome", a.Outcome),
		attribute.String("phasegang.waiting_for", a.WaitingFor),
	}
	if len(a.Domains) > 0 {
		attrs = append(attrs, attribute.StringSlice("phasegang.worker_domains", a.Domains))
	}
	if a.Message != "" {
		attrs = append(attrs, attribute.String("phasegang.message", a.Message))
	}
	pctx, span := t.tracer.Start(withWantedIDs(ctx, a.TraceID, SpanIDFor(a.TraceID, key)), "phase "+a.Name,
		trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	for _, e := range a.Events {
		if e.Type == v1alpha1.PhaseEventReserved {
			continue
		}
		span.AddEvent(string(e.Type), trace.WithTimestamp(e.Time.Time), trace.WithAttributes(
			attribute.Int("phasegang.workers", int(e.Workers)),
			attribute.String("phasegang.message", e.Message),
		))
	}
	child := func(name string, from, to time.Time) {
		if from.IsZero() {
			return
		}
		to = later(firstSet(to, end), from)
		_, c := t.tracer.Start(withWantedIDs(pctx, a.TraceID, SpanIDFor(a.TraceID, key+"/"+name)), name,
			trace.WithTimestamp(from), trace.WithSpanKind(trace.SpanKindInternal))
		c.End(trace.WithTimestamp(to))
	}
	child(SpanQueued, a.Queued, firstSet(a.Reserved, a.Started))
	child(SpanReserved, a.Reserved, a.Started)
	child(SpanRunning, a.Started, end)
	if a.Outcome == string(v1alpha1.PhaseFailed) {
		span.SetStatus(codes.Error, a.Message)
	}
	span.End(trace.WithTimestamp(later(end, start)))
}
