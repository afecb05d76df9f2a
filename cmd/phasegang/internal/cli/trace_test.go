package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/phasegang/phasegang/sim"
)

const fixtureTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"

// wantTree is testdata/jaeger-trace.json (a hand-written answer of Jaeger's
// GET /api/traces/<id>) printed for service phasegang.
var wantTree = []string{
	"PhasedTraining ml/resnet  2m13s  state=Succeeded",
	"  phase train#0.0  1m40s  granted=8 gpus=8 outcome=Succeeded nodes=gpu-a,gpu-b",
	"    waited for: waiting for 8 GPUs: 3 free on 1 fitting node",
	"    @47s Grow workers=8: grew by 4 workers",
	"    queued  12s",
	"    reserved  3s",
	"    running  1m25s",
	"  phase validate#0.0  4s  granted=1 gpus=1 outcome=Failed",
	"    queued  1s",
	"    reserved  500ms",
	"    running  3s",
	"  phase validate#0.1  16s  granted=1 gpus=1 outcome=Succeeded",
	"    @0s Retry: attempt 0 failed: worker 0 failed",
	"    queued  1s",
	"    reserved  0s",
	"    running  15s",
}

func TestPrintTraceFixture(t *testing.T) {
	body, err := os.ReadFile("testdata/jaeger-trace.json")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := parseJaegerTrace(body, fixtureTraceID)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := printTrace(&out, tr, "phasegang"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantTree, lines(out.String())); diff != "" {
		t.Errorf("printed tree (-want +got):\n%s", diff)
	}

	// Every service: the Argo workflow's span is the root.
	out.Reset()
	if err := printTrace(&out, tr, ""); err != nil {
		t.Fatal(err)
	}
	got := lines(out.String())
	if got[0] != "resnet-7xk2p  2m20s" || got[1] != "  "+wantTree[0] {
		t.Errorf("all services:\n%s", out.String())
	}
	if err := printTrace(&out, tr, "nope"); err == nil {
		t.Error("no error for a service without spans")
	}
}

func TestTraceCommandAgainstJaegerAPI(t *testing.T) {
	body, err := os.ReadFile("testdata/jaeger-trace.json")
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Path)
		if r.URL.Path != "/api/traces/"+fixtureTraceID {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"data":null,"errors":[{"code":404,"msg":"trace not found"}]}`)
			return
		}
		w.Write(body)
	}))
	defer srv.Close()
	code, stdout, stderr := run(t, "", "trace", "--trace-id", fixtureTraceID, "--jaeger", srv.URL+"/")
	if code != 0 {
		t.Fatalf("exit %d: %v", code, stderr)
	}
	if diff := cmp.Diff(wantTree, stdout); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	code, _, stderr = run(t, "", "trace", "--trace-id", "00000000000000000000000000000001", "--jaeger", srv.URL)
	if code != 1 || len(stderr) != 1 || !strings.Contains(stderr[0], "no trace") {
		t.Errorf("missing trace: exit %d, %v", code, stderr)
	}
	if len(asked) != 2 {
		t.Errorf("asked %v", asked)
	}
}

func TestSimulateExportsTheSpanModel(t *testing.T) {
	sc, err := loadWorkload(io.Discard, &simulateFlags{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mem := tracetest.NewInMemoryExporter()
	exp, err := newSimExporterWith(mem)
	if err != nil {
		t.Fatal(err)
	}
	pt := exp.policy(sim.PolicyPhasegang)
	res, err := sim.Run(sc, sim.Options{Policy: sim.PolicyPhasegang, Observer: pt.observe})
	if err != nil {
		t.Fatal(err)
	}
	pt.finish(res)
	// (Shutdown would empty the in-memory exporter.)
	if err := exp.tr.Provider.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := mem.GetSpans()
	roots := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "PhasedTraining sim/") {
			roots[s.SpanContext.TraceID().String()] = s
		}
	}
	if len(roots) != len(res.Pipelines) {
		t.Fatalf("%d root spans for %d pipelines", len(roots), len(res.Pipelines))
	}
	phasesSeen, children := 0, 0
	for _, s := range spans {
		if s.StartTime.Before(sim.Epoch) || s.EndTime.Before(s.StartTime) || s.EndTime.After(sim.Epoch.Add(1000*time.Hour)) {
			t.Errorf("%s: %s → %s is not virtual time", s.Name, s.StartTime, s.EndTime)
		}
		root, ok := roots[s.SpanContext.TraceID().String()]
		if !ok {
			t.Fatalf("span %s in a trace without root", s.Name)
		}
		switch {
		case strings.HasPrefix(s.Name, "phase "):
			phasesSeen++
			if s.Parent.SpanID() != root.SpanContext.SpanID() {
				t.Errorf("%s: parent %s, root %s", s.Name, s.Parent.SpanID(), root.SpanContext.SpanID())
			}
			if s.StartTime.Before(root.StartTime) || s.EndTime.After(root.EndTime) {
				t.Errorf("%s outside its pipeline's span", s.Name)
			}
		case s.Name == "queued" || s.Name == "reserved" || s.Name == "running":
			children++
		}
	}
	if phasesSeen == 0 || children != 3*phasesSeen {
		t.Errorf("%d phase spans, %d children", phasesSeen, children)
	}
}
