package tracing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/phases"
)

// TraceparentAnnotation holds a W3C traceparent: the PhasedTraining's trace
// continues the caller's (an Argo workflow, a CI job), its root span a child
// of the caller's span. Must match cmd/phasegang/argo.TraceparentAnnotation.
const TraceparentAnnotation = "phasegang.dev/traceparent"

// PhaseTracer is told of every step of a pipeline's state machine that
// the reconciler stored. A nil PhaseTracer traces nothing.
//
// Everything a tracer needs is in the two statuses (the phases' times and
// history, status.traceID), never in the tracer's memory, so a restarted
// controller traces on where the last one stopped.
type PhaseTracer interface {
	// Step: the reconciler stored after.Status (phases queued, ended,
	// skipped or requeued; the pipeline ended) over before.Status.
	Step(ctx context.Context, before, after *v1alpha1.PhasedTraining, step phases.Step)
}

// ParseTraceparent reads a W3C traceparent header value
// ("00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>"). It returns the
// ids as lowercase hex; ok is false for anything invalid (a wrong length,
// uppercase or non-hex digits, all-zero ids, version ff).
func ParseTraceparent(s string) (traceID, spanID string, ok bool) {
	s = strings.TrimSpace(s)
	parts := strings.Split(s, "-")
	if len(parts) < 4 {
		return "", "", false
	}
	version, tid, sid, flags := parts[0], parts[1], parts[2], parts[3]
	if !isLowerHex(version, 2) || version == "ff" || !isLowerHex(tid, 32) || !isLowerHex(sid, 16) || !isLowerHex(flags, 2) {
		return "", "", false
	}
	// Version 00 has exactly four fields; a later version may append more.
	if version == "00" && len(parts) != 4 {
		return "", "", false
	}
	if tid == strings.Repeat("0", 32) || sid == strings.Repeat("0", 16) {
		return "", "", false
	}
	return tid, sid, true
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// NewTraceIdentity picks a pipeline's trace: the traceparent's trace and
// parent span if the annotation holds a valid one, else a random trace id
// (and no parent).
func NewTraceIdentity(traceparent string) (traceID, parentSpanID string) {
	if tid, sid, ok := ParseTraceparent(traceparent); ok {
		return tid, sid
	}
	var b [16]byte
	for {
		_, _ = rand.Read(b[:])
		if b != ([16]byte{}) {
			return hex.EncodeToString(b[:]), ""
		}
	}
}
