package jaeger

import (
	"encoding/json"
	"testing"
)

const answer = `{"data":[{"traceID":"4bf9","spans":[
 {"traceID":"4bf9","spanID":"a1","operationName":"phase train","processID":"p1",
  "references":[{"refType":"FOLLOWS_FROM","traceID":"4bf9","spanID":"zz"},{"refType":"CHILD_OF","traceID":"4bf9","spanID":"r0"}],
  "startTime":1000,"duration":2500000,
  "tags":[{"key":"phasegang.gpus","type":"int64","value":16},{"key":"big","type":"int64","value":1234567},
          {"key":"phasegang.nodes","type":"string","value":"[\"n1\",\"n2\"]"},{"key":"ok","type":"bool","value":true},
          {"key":"ratio","type":"float64","value":0.25}],
  "logs":[{"timestamp":2000,"fields":[{"key":"event","type":"string","value":"Grow"}]}]},
 {"traceID":"4bf9","spanID":"r0","operationName":"PhasedTraining ml/resnet","processID":"p1","references":[]}],
 "processes":{"p1":{"serviceName":"phasegang"}},"warnings":null}],"errors":null}`

func TestDecodeAndRead(t *testing.T) {
	var r Response
	if err := json.Unmarshal([]byte(answer), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Data) != 1 || len(r.Data[0].Spans) != 2 || r.Data[0].Processes["p1"].ServiceName != "phasegang" {
		t.Fatalf("decoded %+v", r)
	}
	s, root := &r.Data[0].Spans[0], &r.Data[0].Spans[1]
	if p, ok := s.ChildOf(); !ok || p.SpanID != "r0" || p.TraceID != "4bf9" {
		t.Errorf("ChildOf = %+v, %v; want r0", p, ok)
	}
	if _, ok := root.ChildOf(); ok {
		t.Error("a root span has a parent")
	}
	for key, want := range map[string]string{
		"phasegang.gpus": "16", "big": "1234567", "phasegang.nodes": `["n1","n2"]`, "ok": "true", "ratio": "0.25",
	} {
		if got, ok := s.Tag(key); !ok || got != want {
			t.Errorf("Tag(%s) = %q, %v; want %q", key, got, ok, want)
		}
	}
	if _, ok := s.Tag("missing"); ok {
		t.Error("a missing tag was found")
	}
	if got, ok := Lookup(s.Logs[0].Fields, "event"); !ok || got != "Grow" {
		t.Errorf("log event = %q, %v", got, ok)
	}
}
