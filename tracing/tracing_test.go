package tracing

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/phases"
)

const (
	testTraceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
	testParentID = "00f067aa0ba902b7"
)

func TestParseTraceparent(t *testing.T) {
	for _, tc := range []struct {
		in     string
		ok     bool
		tid    string
		parent string
	}{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true, testTraceID, testParentID},
		{" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00 ", true, testTraceID, testParentID},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", true, testTraceID, testParentID},
		{"", false, "", ""},
		{"garbage", false, "", ""},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", false, "", ""},
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false, "", ""},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false, "", ""},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false, "", ""},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false, "", ""},
		{"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", false, "", ""},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1", false, "", ""},
		{"00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01", false, "", ""},
	} {
		tid, sid, ok := ParseTraceparent(tc.in)
		if ok != tc.ok || tid != tc.tid || sid != tc.parent {
			t.Errorf("ParseTraceparent(%q) = %q, %q, %v; want %q, %q, %v", tc.in, tid, sid, ok, tc.tid, tc.parent, tc.ok)
		}
	}
	tid, sid := NewTraceIdentity("00-" + testTraceID + "-" + testParentID + "-01")
	if tid != testTraceID || sid != testParentID {
		t.Errorf("NewTraceIdentity from a traceparent = %s, %s", tid, sid)
	}
	tid, sid = NewTraceIdentity("bogus")
	if _, err := trace.TraceIDFromHex(tid); err != nil || sid != "" {
		t.Errorf("NewTraceIdentity without a traceparent = %q, %q (%v)", tid, sid, err)
	}
	if other, _ := NewTraceIdentity(""); other == tid {
		t.Errorf("two random trace ids are equal: %s", tid)
	}
}

func TestSpanIDForIsStable(t *testing.T) {
	tid, _ := trace.TraceIDFromHex(testTraceID)
	a, b := SpanIDFor(tid, "train#0.0"), SpanIDFor(tid, "train#0.0")
	if a != b || !a.IsValid() {
		t.Fatalf("SpanIDFor not stable: %s %s", a, b)
	}
	if SpanIDFor(tid, "train#0.1") == a || SpanIDFor(tid, "train#0.0/queued") == a {
		t.Fatal("different names gave the same span id")
	}
}

func TestAddHistoryKeepsTheNewest(t *testing.T) {
	var ps v1alpha1.PhaseStatus
	for i := range 20 {
		ps.AddHistory(v1alpha1.PhaseEvent{Type: v1alpha1.PhaseEventGrow, Workers: int32(i), Message: strings.Repeat("x", 2000)})
	}
	if len(ps.History) != v1alpha1.MaxPhaseHistory || ps.History[0].Workers != 4 || ps.History[15].Workers != 19 {
		t.Fatalf("history = %d entries, first %d", len(ps.History), ps.History[0].Workers)
	}
	if n := len(ps.History[0].Message); n > 1024 {
		t.Fatalf("message of %d bytes kept", n)
	}
}

// tracingPT is a pipeline train → validate of 2-GPU workers.
func tracingPT(created time.Time) *v1alpha1.PhasedTraining {
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "w", Image: "x",
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")},
			Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")},
		},
	}}}}
	desired := int32(4)
	return &v1alpha1.PhasedTraining{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "resnet", CreationTimestamp: metav1.NewTime(created)},
		Spec: v1alpha1.PhasedTrainingSpec{Phases: []v1alpha1.Phase{
			{Name: "train", Gang: v1alpha1.Gang{Min: 2, Desired: &desired}, Template: tmpl},
			{Name: "validate", Gang: v1alpha1.Gang{Min: 1}, Template: tmpl, MaxRetries: 1},
		}},
		Status: v1alpha1.PhasedTrainingStatus{TraceID: testTraceID, TraceParentSpanID: testParentID, State: v1alpha1.PipelineRunning},
	}
}

func newRecorder() (*tracetest.SpanRecorder, *OTelTracer) {
	rec := tracetest.NewSpanRecorder()
	return rec, NewOTelTracer(NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
}

type tracingScript struct {
	t0                 time.Time
	at                 func(s int) time.Time
	steps              []*v1alpha1.PhasedTraining
	trainEnd, pipeline int // indices of the steps that end train and the pipeline
}

// script is the statuses a pipeline goes through: train queued, reserved
// (after waiting), running, grown, succeeded; validate fails, is retried
// and succeeds; the pipeline succeeds.
func script() tracingScript {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	mt := func(s int) *metav1.Time { x := metav1.NewTime(at(s)); return &x }
	pt := tracingPT(t0)
	var steps []*v1alpha1.PhasedTraining
	snap := func(f func(st *v1alpha1.PhasedTrainingStatus)) {
		f(&pt.Status)
		steps = append(steps, pt.DeepCopy())
	}
	snap(func(st *v1alpha1.PhasedTrainingStatus) {
		st.Phases = []v1alpha1.PhaseStatus{{Name: "train", State: v1alpha1.PhaseQueued, QueuedTime: mt(1),
			Workers: v1alpha1.WorkerCounts{Min: 2, Desired: 4}, WaitingFor: "waiting for 2 more GPUs"}}
	})
	snap(func(st *v1alpha1.PhasedTrainingStatus) {
		ps := &st.Phases[0]
		ps.State, ps.ReservedTime, ps.Assignments, ps.Workers.Granted = v1alpha1.PhaseRunning, mt(13), []string{"n1", "n2"}, 2
		ps.AddHistory(v1alpha1.PhaseEvent{Time: *mt(13), Type: v1alpha1.PhaseEventReserved, Workers: 2, Message: ps.WaitingFor})
		ps.WaitingFor = ""
	})
	snap(func(st *v1alpha1.PhasedTrainingStatus) { st.Phases[0].StartTime = mt(16) })
	snap(func(st *v1alpha1.PhasedTrainingStatus) {
		ps := &st.Phases[0]
		ps.Assignments, ps.Workers.Granted = []string{"n1", "n2", "n2", "n3"}, 4
		ps.AddHistory(v1alpha1.PhaseEvent{Time: *mt(30), Type: v1alpha1.PhaseEventGrow, Workers: 4, Message: "grew by 2 workers"})
	})
	snap(func(st *v1alpha1.PhasedTrainingStatus) {
		ps := &st.Phases[0]
		ps.State, ps.EndTime, ps.Workers.Succeeded = v1alpha1.PhaseSucceeded, mt(116), 4
		st.Phases = append(st.Phases, v1alpha1.PhaseStatus{Name: "validate", State: v1alpha1.PhaseQueued, QueuedTime: mt(116), Workers: v1alpha1.WorkerCounts{Min: 1, Desired: 1}})
	})
	trainEnd := len(steps) - 1
	snap(func(st *v1alpha1.PhasedTrainingStatus) {
		ps := &st.Phases[1]
		ps.State, ps.ReservedTime, ps.StartTime, ps.Assignments, ps.Workers.Granted = v1alpha1.PhaseRunning, mt(117), mt(118), []string{"n1"}, 1
	})
	snap(func(st *v1alpha1.PhasedTrainingStatus) {
		ps := &st.Phases[1]
		ps.State, ps.EndTime, ps.Message = v1alpha1.PhaseFailed, mt(120), "worker 0 failed"
		st.Phases = append(st.Phases, v1alpha1.PhaseStatus{Name: "validate", Attempt: 1, State: v1alpha1.PhaseQueued, QueuedTime: mt(120), Workers: v1alpha1.WorkerCounts{Min: 1, Desired: 1}})
		st.Phases[2].AddHistory(v1alpha1.PhaseEvent{Time: *mt(120), Type: v1alpha1.PhaseEventRetry, Message: "attempt 0 failed: worker 0 failed"})
	})
	snap(func(st *v1alpha1.PhasedTrainingStatus) {
		ps := &st.Phases[2]
		ps.State, ps.ReservedTime, ps.StartTime, ps.Assignments, ps.Workers.Granted = v1alpha1.PhaseRunning, mt(121), mt(122), []string{"n3"}, 1
	})
	snap(func(st *v1alpha1.PhasedTrainingStatus) {
		ps := &st.Phases[2]
		ps.State, ps.EndTime = v1alpha1.PhaseSucceeded, mt(133)
		st.State = v1alpha1.PipelineSucceeded
	})
	return tracingScript{t0: t0, at: at, steps: steps, trainEnd: trainEnd, pipeline: len(steps) - 1}
}

// play runs the steps from..to through tracer (each step over the one before).
func (s tracingScript) play(tr PhaseTracer, from, to int) {
	for i := from; i <= to; i++ {
		var before *v1alpha1.PhasedTraining
		if i > 0 {
			before = s.steps[i-1]
		} else {
			before = s.steps[0].DeepCopy()
			before.Status.Phases = nil
		}
		tr.Step(context.Background(), before, s.steps[i], phases.Step{})
	}
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func spanByName(t *testing.T, spans []sdktrace.ReadOnlySpan, name string, parent trace.SpanID) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range spans {
		if s.Name() == name && (!parent.IsValid() || s.Parent().SpanID() == parent) {
			return s
		}
	}
	t.Fatalf("no span %q under %s", name, parent)
	return nil
}

func TestTracerSpanModel(t *testing.T) {
	s := script()
	rec, tr := newRecorder()
	tid, _ := trace.TraceIDFromHex(testTraceID)
	rootID := SpanIDFor(tid, RootSpanKey)

	s.play(tr, 0, s.trainEnd-1)
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans before anything ended", n)
	}
	s.play(tr, s.trainEnd, s.trainEnd)
	spans := rec.Ended()
	if len(spans) != 4 {
		t.Fatalf("train ended: %d spans, want phase + 3 children", len(spans))
	}
	train := spanByName(t, spans, "phase train", rootID)
	if train.SpanContext().TraceID() != tid || train.SpanContext().SpanID() != SpanIDFor(tid, "train#0.0") {
		t.Errorf("train span ids %v", train.SpanContext())
	}
	if !train.StartTime().Equal(s.at(1)) || !train.EndTime().Equal(s.at(116)) {
		t.Errorf("train span %s → %s", train.StartTime(), train.EndTime())
	}
	a := attrs(train)
	wantInt := map[attribute.Key]int64{
		"phasegang.iteration": 0, "phasegang.attempt": 0, "phasegang.gang.min": 2, "phasegang.gang.desired": 4,
		"phasegang.gang.granted": 4, "phasegang.gpus": 8,
	}
	for k, v := range wantInt {
		if a[k].AsInt64() != v || a[k].Type() != attribute.INT64 {
			t.Errorf("%s = %v, want %d", k, a[k].Emit(), v)
		}
	}
	wantStr := map[attribute.Key]string{
		"phasegang.phase": "train", "phasegang.outcome": "Succeeded", "phasegang.waiting_for": "waiting for 2 more GPUs", "phasegang.pipeline": "ml/resnet",
	}
	for k, v := range wantStr {
		if a[k].AsString() != v {
			t.Errorf("%s = %q, want %q", k, a[k].AsString(), v)
		}
	}
	if got := fmt.Sprint(a["phasegang.nodes"].AsStringSlice()); got != "[n1 n2 n3]" {
		t.Errorf("nodes = %s", got)
	}
	if ev := train.Events(); len(ev) != 1 || ev[0].Name != "Grow" || !ev[0].Time.Equal(s.at(30)) {
		t.Errorf("train events = %+v", ev)
	}
	trainID := train.SpanContext().SpanID()
	for _, c := range []struct {
		name     string
		from, to int
	}{{"queued", 1, 13}, {"reserved", 13, 16}, {"running", 16, 116}} {
		sp := spanByName(t, spans, c.name, trainID)
		if !sp.StartTime().Equal(s.at(c.from)) || !sp.EndTime().Equal(s.at(c.to)) {
			t.Errorf("%s: %s → %s, want +%ds → +%ds", c.name, sp.StartTime(), sp.EndTime(), c.from, c.to)
		}
		if sp.SpanContext().SpanID() != SpanIDFor(tid, "train#0.0/"+c.name) {
			t.Errorf("%s: span id %s", c.name, sp.SpanContext().SpanID())
		}
	}

	s.play(tr, s.trainEnd+1, s.pipeline)
	spans = rec.Ended()
	// train 4 + validate#0.0 4 + validate#0.1 4 + root.
	if len(spans) != 13 {
		t.Fatalf("%d spans, want 13", len(spans))
	}
	failed := spanByName(t, spans, "phase validate", rootID)
	if attrs(failed)["phasegang.outcome"].AsString() != "Failed" || failed.Status().Code != codes.Error {
		t.Errorf("validate#0.0: outcome %s, status %v", attrs(failed)["phasegang.outcome"].AsString(), failed.Status())
	}
	var retry sdktrace.ReadOnlySpan
	for _, sp := range spans {
		if sp.SpanContext().SpanID() == SpanIDFor(tid, "validate#0.1") {
			retry = sp
		}
	}
	if retry == nil || retry.Parent().SpanID() != rootID || attrs(retry)["phasegang.attempt"].AsInt64() != 1 {
		t.Fatalf("no retry span under the root: %v", retry)
	}
	if ev := retry.Events(); len(ev) != 1 || ev[0].Name != "Retry" || !ev[0].Time.Equal(s.at(120)) {
		t.Errorf("retry events = %+v", ev)
	}
	root := spanByName(t, spans, "PhasedTraining ml/resnet", trace.SpanID{})
	if root.SpanContext().SpanID() != rootID || root.Parent().SpanID().String() != testParentID || !root.Parent().IsRemote() {
		t.Errorf("root %s parent %s", root.SpanContext().SpanID(), root.Parent().SpanID())
	}
	if !root.StartTime().Equal(s.t0) || !root.EndTime().Equal(s.at(133)) {
		t.Errorf("root %s → %s", root.StartTime(), root.EndTime())
	}
	if ra := attrs(root); ra["phasegang.state"].AsString() != "Succeeded" || ra["phasegang.phases"].AsInt64() != 3 {
		t.Errorf("root attributes %v", root.Attributes())
	}

	// The same transitions again (a second reconcile that writes nothing
	// new never reaches Step; one that does is deduplicated): no spans.
	n := len(rec.Ended())
	tr.Step(context.Background(), s.steps[s.pipeline], s.steps[s.pipeline], phases.Step{})
	if len(rec.Ended()) != n {
		t.Errorf("a step that ended nothing emitted spans")
	}
}

func spanIDs(spans []sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, s := range spans {
		key := s.Name() + "@" + s.StartTime().String()
		m[key] = s.SpanContext().TraceID().String() + "/" + s.SpanContext().SpanID().String() + "<" + s.Parent().SpanID().String()
	}
	return m
}

func TestTracerIsDeterministicAcrossRestarts(t *testing.T) {
	s := script()
	rec1, tr1 := newRecorder()
	s.play(tr1, 0, s.pipeline)
	rec2, tr2 := newRecorder()
	s.play(tr2, 0, s.pipeline)
	a, b := spanIDs(rec1.Ended()), spanIDs(rec2.Ended())
	if len(a) != 13 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("same statuses, different spans:\n%v\n%v", a, b)
	}

	// A controller that restarts after train ended: a fresh tracer emits
	// the rest, and its spans slot into the first one's trace.
	rec3, first := newRecorder()
	s.play(first, 0, s.trainEnd)
	rec4, restarted := newRecorder()
	s.play(restarted, s.trainEnd+1, s.pipeline)
	merged := spanIDs(append(rec3.Ended(), rec4.Ended()...))
	if fmt.Sprint(merged) != fmt.Sprint(a) {
		t.Fatalf("restart changed the trace:\n%v\n%v", merged, a)
	}
	tid, _ := trace.TraceIDFromHex(testTraceID)
	train := spanByName(t, rec3.Ended(), "phase train", trace.SpanID{})
	root := spanByName(t, rec4.Ended(), "PhasedTraining ml/resnet", trace.SpanID{})
	if train.Parent().SpanID() != root.SpanContext().SpanID() || root.SpanContext().TraceID() != tid {
		t.Errorf("train's parent %s is not the restarted controller's root %s", train.Parent().SpanID(), root.SpanContext().SpanID())
	}
}

func TestTracerWithoutTraceparentIsARoot(t *testing.T) {
	s := script()
	last := s.steps[s.pipeline].DeepCopy()
	last.Status.TraceParentSpanID = ""
	rec, tr := newRecorder()
	before := s.steps[s.pipeline-1].DeepCopy()
	tr.Step(context.Background(), before, last, phases.Step{})
	root := spanByName(t, rec.Ended(), "PhasedTraining ml/resnet", trace.SpanID{})
	if root.Parent().IsValid() {
		t.Errorf("root has parent %s", root.Parent().SpanID())
	}
	// A status without a trace id is not traced.
	last.Status.TraceID = ""
	rec2, tr2 := newRecorder()
	tr2.Step(context.Background(), before, last, phases.Step{})
	if len(rec2.Ended()) != 0 {
		t.Errorf("traced a pipeline without a trace id")
	}
}

func TestSkippedPhaseSpan(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	pt := tracingPT(now.Time)
	before := pt.DeepCopy()
	pt.Status.Phases = []v1alpha1.PhaseStatus{{Name: "validate", State: v1alpha1.PhaseSkipped, EndTime: &now, Message: "when was false"}}
	rec, tr := newRecorder()
	tr.Step(context.Background(), before, pt, phases.Step{})
	spans := rec.Ended()
	if len(spans) != 1 || spans[0].Name() != "phase validate" || attrs(spans[0])["phasegang.outcome"].AsString() != "Skipped" {
		t.Fatalf("skipped: %d spans", len(spans))
	}
	if !spans[0].StartTime().Equal(now.Time) || !spans[0].EndTime().Equal(now.Time) {
		t.Errorf("skipped span %s → %s", spans[0].StartTime(), spans[0].EndTime())
	}
}

func TestTracingFromEnv(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	tr, err := FromEnv(context.Background())
	if err != nil || tr != nil || tr.PhaseTracer() != nil {
		t.Fatalf("no endpoint: %v, %v", tr, err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_SDK_DISABLED", "true")
	if tr, err := FromEnv(context.Background()); err != nil || tr != nil {
		t.Fatalf("disabled: %v, %v", tr, err)
	}
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	if _, err := FromEnv(context.Background()); err == nil {
		t.Fatal("http/json accepted")
	}
	for _, proto := range []string{"", "grpc", "http/protobuf"} {
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
		tr, err := FromEnv(context.Background())
		if err != nil || tr == nil || tr.PhaseTracer() == nil {
			t.Fatalf("protocol %q: %v, %v", proto, tr, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = tr.Shutdown(ctx) // nothing to flush
		cancel()
	}
}

func TestResourceServiceName(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	r, err := Resource(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := r.Set().Value("service.name"); v.AsString() != "phasegang" {
		t.Errorf("service.name = %q", v.AsString())
	}
	t.Setenv("OTEL_SERVICE_NAME", "phasegang-e2e")
	r, err = Resource(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := r.Set().Value("service.name"); v.AsString() != "phasegang-e2e" {
		t.Errorf("service.name = %q", v.AsString())
	}
}

func TestOTLPExporterEndpoints(t *testing.T) {
	for _, ep := range []string{"127.0.0.1:4317", "http://127.0.0.1:4318", "https://collector.example:4318/custom/v1/traces"} {
		exp, err := OTLPExporter(context.Background(), ep)
		if err != nil {
			t.Errorf("%s: %v", ep, err)
			continue
		}
		_ = exp.Shutdown(context.Background())
	}
	for _, ep := range []string{"localhost", "grpc://x:1"} {
		if _, err := OTLPExporter(context.Background(), ep); err == nil {
			t.Errorf("%s accepted", ep)
		}
	}
}

// A phase attempt's span names each worker's topology domain, by worker
// index, from status.phases[].domains; without domains the attribute is
// left out.
func TestPhaseSpanWorkerDomains(t *testing.T) {
	tid, _ := trace.TraceIDFromHex(testTraceID)
	pt := &v1alpha1.PhasedTraining{}
	pt.Namespace, pt.Name = "ml", "resnet"
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ps := v1alpha1.PhaseStatus{Name: "train", State: v1alpha1.PhaseSucceeded,
		Assignments: []string{"n2", "n1"}, Domains: []string{"b1/r2/n2", "b1/r1/n1"},
		ReservedTime: &metav1.Time{Time: t0}, EndTime: &metav1.Time{Time: t0.Add(time.Minute)}}
	rec, tr := newRecorder()
	tr.EmitPhase(context.Background(), PhaseAttemptOf(tid, pt, &ps))
	ps.Domains = nil
	ps.Attempt = 1
	tr.EmitPhase(context.Background(), PhaseAttemptOf(tid, pt, &ps))
	var got []string
	for _, sp := range rec.Ended() {
		if sp.Name() != "phase train" {
			continue
		}
		v, ok := attrs(sp)["phasegang.worker_domains"]
		got = append(got, fmt.Sprintf("%v %v", ok, v.AsStringSlice()))
	}
	if want := []string{"true [b1/r2/n2 b1/r1/n1]", "false []"}; !slices.Equal(got, want) {
		t.Errorf("phasegang.worker_domains of the two spans: %q, want %q", got, want)
	}
}
