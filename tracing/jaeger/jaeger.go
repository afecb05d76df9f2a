// Package jaeger is the JSON model of Jaeger's query HTTP API
// (GET /api/traces/<id>, GET /api/traces?service=...): the model its UI
// reads. `phasegang trace` and the e2e tests decode Jaeger's answers into
// it. It imports nothing but the standard library.
package jaeger

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Response is an answer of the query API: the traces found, or errors.
type Response struct {
	Data   []Trace `json:"data"`
	Errors []Error `json:"errors"`
}

// Error is one entry of Response.Errors.
type Error struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
}

// Trace is one trace: its spans and the processes (services) that emitted
// them.
type Trace struct {
	TraceID   string             `json:"traceID"`
	Spans     []Span             `json:"spans"`
	Processes map[string]Process `json:"processes"`
	Warnings  []string           `json:"warnings"`
}

// Process is the emitter of a span (Span.ProcessID).
type Process struct {
	ServiceName string `json:"serviceName"`
}

// Span is one span. Times are in microseconds.
type Span struct {
	TraceID       string      `json:"traceID"`
	SpanID        string      `json:"spanID"`
	OperationName string      `json:"operationName"`
	References    []Reference `json:"references"`
	StartTime     int64       `json:"startTime"` // µs since the epoch
	Duration      int64       `json:"duration"`  // µs
	Tags          []KeyValue  `json:"tags"`
	Logs          []Log       `json:"logs"`
	ProcessID     string      `json:"processID"`
}

// Reference links a span to another (RefType CHILD_OF: its parent).
type Reference struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

// KeyValue is a tag (a span attribute) or a log field.
type KeyValue struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// Log is a span event: its time (µs since the epoch) and fields (the
// event's name is field "event").
type Log struct {
	Timestamp int64      `json:"timestamp"`
	Fields    []KeyValue `json:"fields"`
}

// ChildOf returns the span's CHILD_OF reference (its parent), if any.
func (s *Span) ChildOf() (Reference, bool) {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r, true
		}
	}
	return Reference{}, false
}

// Tag returns the value of the span's tag key as text (see Lookup).
func (s *Span) Tag(key string) (string, bool) { return Lookup(s.Tags, key) }

// Lookup returns the value of key in kvs as text: a string as it is, a
// number in decimal without an exponent (Jaeger's JSON has int64
// attributes as numbers), anything else as JSON. A string slice attribute
// comes from Jaeger as a JSON array in a string.
func Lookup(kvs []KeyValue, key string) (string, bool) {
	for _, kv := range kvs {
		if kv.Key != key {
			continue
		}
		switch v := kv.Value.(type) {
		case string:
			return v, true
		case float64:
			return strconv.FormatFloat(v, 'f', -1, 64), true
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Sprint(v), true
			}
			return string(b), true
		}
	}
	return "", false
}
