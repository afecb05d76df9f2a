//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
	"github.com/phasegang/phasegang/tracing/jaeger"
)

// jaegerEnv names the Jaeger v2 all-in-one binary (test/jaeger/build.sh
// builds it; hack/e2e.sh exports it).
const jaegerEnv = "PHASEGANG_JAEGER"

// (h) Tracing: one trace per pipeline, continued across a controller
// SIGKILL, parented to the caller's traceparent, read back from a real
// Jaeger over its HTTP API.
func TestTracing(t *testing.T) {
	jaegerBin := os.Getenv(jaegerEnv)
	if jaegerBin == "" {
		t.Skipf("%s is not set: build Jaeger with test/jaeger/build.sh and export its path (hack/e2e.sh does both)", jaegerEnv)
	}
	j := startJaeger(t, jaegerBin)
	const service = "phasegang-e2e"

	// Restart the suite's controller exporting to this Jaeger; give the
	// plain one back afterwards.
	saved := extraControllerEnv
	controller.stop()
	extraControllerEnv = append(append([]string(nil), saved...),
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://"+j.otlpGRPC,
		"OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_EXPORTER_OTLP_INSECURE=true",
		"OTEL_SERVICE_NAME="+service,
		"OTEL_TRACES_EXPORTER=otlp",
		"OTEL_TRACES_SAMPLER=always_on",
		"OTEL_BSP_SCHEDULE_DELAY=200",
	)
	controller = startController()
	t.Cleanup(func() {
		controller.stop()
		extraControllerEnv = saved
		controller = startController()
	})

	// A synthetic caller span (an Argo step, say) to parent the pipeline.
	parentTrace, parentSpan := randomHex(t, 16), randomHex(t, 8)
	traceparent := "00-" + parentTrace + "-" + parentSpan + "-01"

	ns := namespace(t)
	nodes(t, "pool-h", 2, 4)
	pt := create(t, wrappers.NewPT(ns, "traced").Annotation("phasegang.dev/traceparent", traceparent).
		Phase("train", 2).Desired(4).PodTemplate(worker("pool-h", 1, 3, "")).
		Phase("validate", 2).PodTemplate(worker("pool-h", 1, 10, `{"accuracy": 0.95}`)).DependsOn("train").
		With(func(p *v1alpha1.Phase) { p.Outputs = []string{"accuracy"} }).
		Phase("test", 1).PodTemplate(worker("pool-h", 1, 1, "")).DependsOn("validate").
		With(func(p *v1alpha1.Phase) { p.When = "float(phases.validate.outputs.accuracy) >= 0.9" }).Obj())
	start := time.Now()

	// SIGKILL the controller while validate runs, and start it again.
	eventually(t, 60*time.Second, "validate running", func() (bool, error) {
		cur := get(t, pt)
		for _, p := range cur.Status.Phases {
			if p.Name == "validate" && p.State == v1alpha1.PhaseRunning && p.StartTime != nil {
				return true, nil
			}
		}
		return false, fmt.Errorf("%s", describe(cur))
	})
	if id := get(t, pt).Status.TraceID; id != parentTrace {
		t.Errorf("status.traceID = %q before the restart, want the traceparent's %q", id, parentTrace)
	}
	// Kill only once train's span is exported: a SIGKILL loses what the
	// batch processor still holds (up to OTEL_BSP_SCHEDULE_DELAY), and a
	// restarted controller does not emit again the steps the last one
	// stored. What this test proves is that the trace goes on, unbroken,
	// after the restart. Train ends within a second of validate starting,
	// so without this wait the kill sometimes caught its span in the batch.
	eventually(t, 30*time.Second, "train's span in Jaeger", func() (bool, error) {
		tr, err := j.trace(parentTrace)
		if err != nil {
			return false, err
		}
		for _, s := range tr.Spans {
			if s.OperationName == "phase train" {
				return true, nil
			}
		}
		return false, fmt.Errorf("no span \"phase train\" yet")
	})
	controller.kill()
	time.Sleep(time.Second)
	controller = startController()
	t.Logf("controller SIGKILLed and restarted during validate (%s into the pipeline)", time.Since(start).Round(time.Millisecond))

	done := waitState(t, pt, v1alpha1.PipelineSucceeded, 120*time.Second)
	traceID := done.Status.TraceID
	if traceID != parentTrace {
		t.Fatalf("status.traceID = %q, want the traceparent's trace id %q", traceID, parentTrace)
	}
	if done.Status.TraceParentSpanID != parentSpan {
		t.Errorf("status.traceParentSpanID = %q, want %q", done.Status.TraceParentSpanID, parentSpan)
	}
	rootName := "PhasedTraining " + ns + "/" + pt.Name
	wantPhases := []string{"train", "validate", "test"}
	spec := map[string]v1alpha1.Phase{}
	for _, p := range done.Spec.Phases {
		spec[p.Name] = p
	}
	status := map[string]v1alpha1.PhaseStatus{}
	for _, p := range done.Status.Phases {
		status[p.Name] = p
	}

	// Poll Jaeger until the whole trace is there: spans arrive batched.
	var tr jaeger.Trace
	var missing string
	deadline := time.Now().Add(90 * time.Second)
	for {
		var err error
		tr, err = j.trace(traceID)
		if err == nil {
			missing = incomplete(tr, rootName, wantPhases)
			if missing == "" {
				break
			}
		} else {
			missing = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s incomplete in Jaeger after 90s: %s\n%s", traceID, missing, dumpTrace(tr))
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Let stragglers (a duplicate re-emitted after the restart) land too.
	time.Sleep(2 * time.Second)
	if tr2, err := j.trace(traceID); err == nil {
		tr = tr2
	}
	t.Logf("trace %s: %d spans", traceID, len(tr.Spans))

	byID := map[string]*jaeger.Span{}
	for i := range tr.Spans {
		s := &tr.Spans[i]
		if s.TraceID != traceID {
			t.Errorf("span %q (%s) has trace id %s, want %s", s.OperationName, s.SpanID, s.TraceID, traceID)
		}
		if byID[s.SpanID] != nil {
			t.Errorf("span id %s appears twice (%q and %q): emitted again after the restart?", s.SpanID, byID[s.SpanID].OperationName, s.OperationName)
		}
		byID[s.SpanID] = s
		if p, ok := tr.Processes[s.ProcessID]; ok && p.ServiceName != service {
			t.Errorf("span %q from service %q, want %q", s.OperationName, p.ServiceName, service)
		}
	}
	// Every parent resolves inside the trace, except the root's, which is
	// the caller's span.
	var root *jaeger.Span
	children := map[string][]*jaeger.Span{}
	for i := range tr.Spans {
		s := &tr.Spans[i]
		parent, ptrace := spanParent(s)
		if s.OperationName == rootName {
			if root != nil {
				t.Errorf("two root spans %q", rootName)
			}
			root = s
			if parent != parentSpan || ptrace != traceID {
				t.Errorf("root span's parent is %s/%s, want the traceparent's span %s/%s", ptrace, parent, traceID, parentSpan)
			}
			continue
		}
		if parent == "" {
			t.Errorf("span %q (%s) has no parent: the trace is split", s.OperationName, s.SpanID)
			continue
		}
		if ptrace != traceID || byID[parent] == nil {
			t.Errorf("span %q (%s) has parent %s/%s, not in the trace", s.OperationName, s.SpanID, ptrace, parent)
			continue
		}
		children[parent] = append(children[parent], s)
	}
	if root == nil {
		t.Fatalf("no root span %q", rootName)
	}
	if v, ok := root.Tag("phasegang.pipeline"); !ok || v != ns+"/"+pt.Name {
		t.Errorf("root span phasegang.pipeline = %q, want %s/%s", v, ns, pt.Name)
	}
	for _, key := range []string{"phasegang.state", "phasegang.outcome"} {
		if v, ok := root.Tag(key); ok && v != "Succeeded" {
			t.Errorf("root span %s = %q, want Succeeded", key, v)
		}
	}

	// One "phase X" span per phase, children of the root, in time order,
	// each with queued, reserved and running children.
	var phaseSpans []*jaeger.Span
	for _, c := range children[root.SpanID] {
		if strings.HasPrefix(c.OperationName, "phase ") {
			phaseSpans = append(phaseSpans, c)
		}
	}
	sort.Slice(phaseSpans, func(a, b int) bool { return phaseSpans[a].StartTime < phaseSpans[b].StartTime })
	var gotOrder []string
	for _, s := range phaseSpans {
		gotOrder = append(gotOrder, strings.TrimPrefix(s.OperationName, "phase "))
	}
	if strings.Join(gotOrder, ",") != strings.Join(wantPhases, ",") {
		t.Errorf("phase spans under the root in time order: %v, want %v", gotOrder, wantPhases)
	}
	for i, s := range phaseSpans {
		name := strings.TrimPrefix(s.OperationName, "phase ")
		if i > 0 && s.StartTime < spanEnd(phaseSpans[i-1]) {
			t.Errorf("phase %s starts at %d µs, before %s ends at %d µs", name, s.StartTime, gotOrder[i-1], spanEnd(phaseSpans[i-1]))
		}
		if s.StartTime < root.StartTime || spanEnd(s) > spanEnd(root) {
			t.Errorf("phase %s [%d, %d] lies outside the root span [%d, %d]", name, s.StartTime, spanEnd(s), root.StartTime, spanEnd(root))
		}
		steps := map[string][]*jaeger.Span{}
		for _, c := range children[s.SpanID] {
			steps[c.OperationName] = append(steps[c.OperationName], c)
		}
		var prev *jaeger.Span
		for _, step := range []string{"queued", "reserved", "running"} {
			if len(steps[step]) != 1 {
				t.Errorf("phase %s has %d %q children, want 1", name, len(steps[step]), step)
				continue
			}
			c := steps[step][0]
			const slack = 1000 // µs
			if c.StartTime+slack < s.StartTime || spanEnd(c) > spanEnd(s)+slack {
				t.Errorf("phase %s: %q [%d, %d] lies outside its phase span [%d, %d]", name, step, c.StartTime, spanEnd(c), s.StartTime, spanEnd(s))
			}
			if prev != nil && c.StartTime+slack < spanEnd(prev) {
				t.Errorf("phase %s: %q starts at %d µs, before %q ends at %d µs", name, step, c.StartTime, prev.OperationName, spanEnd(prev))
			}
			prev = c
		}
		checkPhaseAttrs(t, s, children[s.SpanID], spec[name], status[name])
	}

	// ONE trace for this pipeline: no other trace in Jaeger holds a span
	// of it (a restart that started a fresh trace would show up here).
	others, err := j.search(service, start.Add(-time.Minute), time.Now().Add(time.Minute))
	if err != nil {
		t.Errorf("searching Jaeger: %v", err)
	}
	for _, o := range others {
		if o.TraceID == traceID {
			continue
		}
		for _, s := range o.Spans {
			if s.OperationName == rootName || mentions(&s, ns) {
				t.Errorf("trace %s also holds span %q of this pipeline: the trace was split", o.TraceID, s.OperationName)
				break
			}
		}
	}

	// The CLI's rendering, for the log and for docs.
	cmd := exec.Command(binary, "trace", "--jaeger", j.queryURL(), "--service", service, "--namespace", ns, pt.Name)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	t.Logf("phasegang trace --jaeger <url> --service %s --namespace %s %s:\n%s", service, ns, pt.Name, out)
	if !strings.Contains(string(out), traceID) && !strings.Contains(string(out), rootName) {
		t.Errorf("phasegang trace output names neither the trace id nor %q", rootName)
	}
	if err := os.WriteFile(filepath.Join(artifacts, "trace.txt"), out, 0o644); err != nil {
		t.Error(err)
	}
	if raw, err := json.MarshalIndent(tr, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(artifacts, "trace.json"), raw, 0o644)
	}
}

// checkPhaseAttrs checks a phase span's attributes (read from the phase
// span, or else from its queued/reserved/running children) against the
// spec and the final status.
func checkPhaseAttrs(t *testing.T, s *jaeger.Span, kids []*jaeger.Span, spec v1alpha1.Phase, st v1alpha1.PhaseStatus) {
	t.Helper()
	name := spec.Name
	get := func(key string) (string, bool) {
		if v, ok := s.Tag(key); ok {
			return v, true
		}
		for _, k := range kids {
			if v, ok := k.Tag(key); ok {
				return v, true
			}
		}
		t.Errorf("phase %s: attribute %s missing on the phase span and its children", name, key)
		return "", false
	}
	wantInt := func(key string, want int64) {
		if v, ok := get(key); ok && v != strconv.FormatInt(want, 10) {
			t.Errorf("phase %s: %s = %q, want %d", name, key, v, want)
		}
	}
	if v, ok := s.Tag("phasegang.phase"); !ok || v != name {
		t.Errorf("phase %s: phasegang.phase = %q on the phase span, want %q", name, v, name)
	}
	desired := spec.Gang.Min
	if spec.Gang.Desired != nil {
		desired = *spec.Gang.Desired
	}
	wantInt("phasegang.iteration", int64(st.Iteration))
	wantInt("phasegang.attempt", int64(st.Attempt))
	wantInt("phasegang.gang.min", int64(spec.Gang.Min))
	wantInt("phasegang.gang.desired", int64(desired))
	wantInt("phasegang.gang.granted", int64(st.Workers.Granted))
	if st.Workers.Granted < spec.Gang.Min || st.Workers.Granted > desired {
		t.Errorf("phase %s: granted %d outside [min %d, desired %d]", name, st.Workers.Granted, spec.Gang.Min, desired)
	}
	// GPUs: the gang's total (granted × per-worker request).
	perWorker := spec.Template.Spec.Containers[0].Resources.Requests.Name("nvidia.com/gpu", "").Value()
	wantInt("phasegang.gpus", int64(st.Workers.Granted)*perWorker)
	if v, ok := get("phasegang.nodes"); ok {
		if strings.Trim(v, `[]" `) == "" || !strings.Contains(v, "pool-h-") {
			t.Errorf("phase %s: phasegang.nodes = %q, want the reserved pool-h nodes", name, v)
		}
		for _, n := range st.Assignments {
			if !strings.Contains(v, n) {
				t.Errorf("phase %s: phasegang.nodes = %q lacks assigned node %s", name, v, n)
			}
		}
	}
	if v, ok := s.Tag("phasegang.outcome"); !ok || v != "Succeeded" {
		t.Errorf("phase %s: phasegang.outcome = %q on the phase span, want Succeeded", name, v)
	}
	_, _ = get("phasegang.waiting_for")
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// ---------------------------------------------------------------- Jaeger

// jaegerProcess is Jaeger v2 all-in-one (in-memory storage) with every
// listener on a random free loopback port.
type jaegerProcess struct {
	cmd                      *exec.Cmd
	query, otlpGRPC, otlpHTP string
}

func (j *jaegerProcess) queryURL() string { return "http://" + j.query }

// startJaeger starts Jaeger with test/jaeger/config.yaml, waits for its
// health check and query API, and stops it when the test ends.
func startJaeger(t *testing.T, bin string) *jaegerProcess {
	t.Helper()
	j := &jaegerProcess{
		query:    "127.0.0.1:" + freePort(),
		otlpGRPC: "127.0.0.1:" + freePort(),
		otlpHTP:  "127.0.0.1:" + freePort(),
	}
	queryGRPC, health := "127.0.0.1:"+freePort(), "127.0.0.1:"+freePort()
	args := []string{
		"--config=" + filepath.Join(repoRoot, "test/jaeger/config.yaml"),
		"--set=receivers.otlp.protocols.grpc.endpoint=" + j.otlpGRPC,
		"--set=receivers.otlp.protocols.http.endpoint=" + j.otlpHTP,
		"--set=extensions.jaeger_query.http.endpoint=" + j.query,
		"--set=extensions.jaeger_query.grpc.endpoint=" + queryGRPC,
		"--set=extensions.healthcheckv2.http.endpoint=" + health,
	}
	logPath := filepath.Join(artifacts, "jaeger.log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	j.cmd = exec.Command(bin, args...)
	j.cmd.Stdout, j.cmd.Stderr = f, f
	if err := j.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = j.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = j.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = j.cmd.Process.Kill()
			<-exited
		}
		f.Close()
	})
	t.Logf("jaeger: %s %s (log %s)", bin, strings.Join(args, " "), logPath)
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-exited:
			tail, _ := os.ReadFile(logPath)
			t.Fatalf("jaeger exited during start-up: %s", lastLines(string(tail), 20))
		default:
		}
		if httpOK("http://"+health+"/status") && httpOK(j.queryURL()+"/api/services") {
			return j
		}
		if time.Now().After(deadline) {
			tail, _ := os.ReadFile(logPath)
			t.Fatalf("jaeger not healthy after 60s: %s", lastLines(string(tail), 20))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func httpOK(u string) bool {
	resp, err := http.Get(u)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// spanEnd is when the span ended (µs since the epoch).
func spanEnd(s *jaeger.Span) int64 { return s.StartTime + s.Duration }

// spanParent returns the span's CHILD_OF parent (span id, trace id).
func spanParent(s *jaeger.Span) (string, string) {
	r, _ := s.ChildOf()
	return r.SpanID, r.TraceID
}

// mentions reports whether any tag value of s contains sub.
func mentions(s *jaeger.Span, sub string) bool {
	for _, kv := range s.Tags {
		if strings.Contains(fmt.Sprint(kv.Value), sub) {
			return true
		}
	}
	return false
}

func (j *jaegerProcess) get(path string, q url.Values) ([]jaeger.Trace, error) {
	u := j.queryURL() + path
	if q != nil {
		u += "?" + q.Encode()
	}
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("GET %s: not found (yet)", u)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", u, resp.Status, body)
	}
	var r jaeger.Response
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("GET %s: %v", u, err)
	}
	if len(r.Errors) > 0 {
		return nil, fmt.Errorf("GET %s: %v", u, r.Errors)
	}
	return r.Data, nil
}

func (j *jaegerProcess) trace(id string) (jaeger.Trace, error) {
	data, err := j.get("/api/traces/"+id, nil)
	if err != nil {
		return jaeger.Trace{}, err
	}
	if len(data) != 1 {
		return jaeger.Trace{}, fmt.Errorf("GET /api/traces/%s: %d traces", id, len(data))
	}
	return data[0], nil
}

func (j *jaegerProcess) search(service string, from, to time.Time) ([]jaeger.Trace, error) {
	return j.get("/api/traces", url.Values{
		"service": {service},
		"start":   {strconv.FormatInt(from.UnixMicro(), 10)},
		"end":     {strconv.FormatInt(to.UnixMicro(), 10)},
		"limit":   {"1000"},
	})
}

// incomplete says what the trace still lacks ("" when the root and every
// phase span with its three steps are there).
func incomplete(tr jaeger.Trace, rootName string, phases []string) string {
	have := map[string]bool{}
	kids := map[string]map[string]bool{}
	idName := map[string]string{}
	for _, s := range tr.Spans {
		have[s.OperationName] = true
		idName[s.SpanID] = s.OperationName
	}
	for _, s := range tr.Spans {
		if p, _ := spanParent(&s); p != "" {
			pn := idName[p]
			if kids[pn] == nil {
				kids[pn] = map[string]bool{}
			}
			kids[pn][s.OperationName] = true
		}
	}
	if !have[rootName] {
		return "no root span " + strconv.Quote(rootName)
	}
	for _, p := range phases {
		if !have["phase "+p] {
			return "no span \"phase " + p + "\""
		}
		for _, step := range []string{"queued", "reserved", "running"} {
			if !kids["phase "+p][step] {
				return fmt.Sprintf("phase %s has no %q child yet", p, step)
			}
		}
	}
	return ""
}

// dump renders a trace compactly for failure messages.
func dumpTrace(tr jaeger.Trace) string {
	var b strings.Builder
	spans := append([]jaeger.Span(nil), tr.Spans...)
	sort.Slice(spans, func(i, k int) bool { return spans[i].StartTime < spans[k].StartTime })
	for _, s := range spans {
		p, _ := spanParent(&s)
		fmt.Fprintf(&b, "  %s parent=%s %q start=%d dur=%dµs tags=%v\n", s.SpanID, p, s.OperationName, s.StartTime, s.Duration, s.Tags)
	}
	return b.String()
}
