// Package tracing exports a pipeline's life as OpenTelemetry spans: one
// trace per PhasedTraining, a root span for the pipeline and a span per
// phase attempt with its queued, reserved and running children.
//
// Both adapters use it: the controller's reconciler calls a PhaseTracer
// after each status write (OTelTracer reads the spans from the stored
// status), and `phasegang simulate --otlp` emits the simulator's pipelines
// with the same span model at virtual times (EmitPhase, EmitPipeline). It
// imports no controller, client-go or controller-runtime package, so the
// simulator exports spans without the controller; the engine and the
// driver know nothing of it.
//
//   - tracing.go: the PhaseTracer hook, the traceparent annotation and a
//     pipeline's trace identity (ParseTraceparent, NewTraceIdentity).
//   - otel.go: the span model (PipelineSpan, PhaseAttempt read from the
//     status), span ids derived from the trace id and a stable name
//     (SpanIDFor, DeterministicIDs), so spans emitted by different
//     processes form one trace.
//   - export.go: OTLP export from the standard OTEL_* environment
//     (FromEnv) or an explicit endpoint (OTLPExporter), batched (New).
//
// Subpackage jaeger is the JSON model of Jaeger's query API, which
// `phasegang trace` and the e2e tests read traces back with. See
// docs/tracing.md.
package tracing
