package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/controllers"
	"github.com/phasegang/phasegang/tracing"
	"github.com/phasegang/phasegang/tracing/jaeger"
)

type traceFlags struct {
	namespace  string
	jaeger     string
	service    string
	traceID    string
	kubeconfig string
	timeout    time.Duration
}

func newTrace() *cobra.Command {
	f := &traceFlags{}
	cmd := &cobra.Command{
		Use:   "trace NAME",
		Short: "Print a PhasedTraining's trace (from Jaeger) as a tree of spans",
		Long: `trace reads the PhasedTraining's status.traceID from the cluster (KUBECONFIG,
or --kubeconfig; --trace-id skips the cluster), fetches the trace from
Jaeger's HTTP query API (GET <jaeger>/api/traces/<traceID>) and prints the
span tree with durations and the key attributes. Only the spans of --service
are printed (an Argo or CI parent span of another service is left out).
See docs/tracing.md.`,
		Example: `  phasegang trace resnet -n ml
  phasegang trace --trace-id 4bf92f3577b34da6a3ce929d0e0e4736 --jaeger http://127.0.0.1:16686`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTrace(cmd.Context(), cmd.OutOrStdout(), f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.namespace, "namespace", "n", "default", "namespace of the PhasedTraining")
	fl.StringVar(&f.jaeger, "jaeger", "http://127.0.0.1:16686", "base URL of Jaeger's query service")
	fl.StringVar(&f.service, "service", tracing.DefaultServiceName, "print the spans of this service (empty: every span of the trace)")
	fl.StringVar(&f.traceID, "trace-id", "", "trace id to print (skips reading the PhasedTraining from the cluster)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "path to a kubeconfig (default: $KUBECONFIG, then in-cluster)")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "how long to wait for the cluster and Jaeger")
	return cmd
}

func runTrace(ctx context.Context, w io.Writer, f *traceFlags, args []string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	tid := strings.ToLower(strings.TrimSpace(f.traceID))
	if tid == "" {
		if len(args) != 1 {
			return fmt.Errorf("give the PhasedTraining's NAME, or --trace-id")
		}
		var err error
		if tid, err = traceIDFromCluster(ctx, f, args[0]); err != nil {
			return err
		}
	}
	tr, err := fetchJaegerTrace(ctx, f.jaeger, tid)
	if err != nil {
		return err
	}
	return printTrace(w, tr, f.service)
}

func traceIDFromCluster(ctx context.Context, f *traceFlags, name string) (string, error) {
	if f.kubeconfig != "" {
		os.Setenv("KUBECONFIG", f.kubeconfig)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return "", fmt.Errorf("no cluster to read %s/%s from (or give --trace-id): %w", f.namespace, name, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		return "", err
	}
	pt := &v1alpha1.PhasedTraining{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: f.namespace, Name: name}, pt); err != nil {
		return "", fmt.Errorf("reading PhasedTraining %s/%s: %w", f.namespace, name, err)
	}
	if pt.Status.TraceID == "" {
		return "", fmt.Errorf("PhasedTraining %s/%s has no status.traceID yet (is the controller running?)", f.namespace, name)
	}
	return pt.Status.TraceID, nil
}

func fetchJaegerTrace(ctx context.Context, base, traceID string) (*jaeger.Trace, error) {
	u := strings.TrimRight(base, "/") + "/api/traces/" + url.PathEscape(traceID)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking Jaeger: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("Jaeger has no trace %s (yet: spans are exported when phases end)", traceID)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", u, resp.Status, strings.TrimSpace(string(body)))
	}
	return parseJaegerTrace(body, traceID)
}

func parseJaegerTrace(body []byte, traceID string) (*jaeger.Trace, error) {
	var r jaeger.Response
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("reading Jaeger's answer: %w", err)
	}
	if len(r.Errors) > 0 {
		return nil, fmt.Errorf("Jaeger: %s", r.Errors[0].Msg)
	}
	if len(r.Data) == 0 {
		return nil, fmt.Errorf("Jaeger has no trace %s", traceID)
	}
	return &r.Data[0], nil
}

// spanParent is the span's CHILD_OF parent, else the first span it
// references.
func spanParent(s *jaeger.Span) string {
	if r, ok := s.ChildOf(); ok {
		return r.SpanID
	}
	if len(s.References) > 0 {
		return s.References[0].SpanID
	}
	return ""
}

// printTrace prints the span tree: one line per span, indented by depth,
// with its duration and key attributes; a phase span's events follow it.
func printTrace(w io.Writer, tr *jaeger.Trace, service string) error {
	var spans []*jaeger.Span
	byID := map[string]*jaeger.Span{}
	for i := range tr.Spans {
		s := &tr.Spans[i]
		if service != "" && tr.Processes[s.ProcessID].ServiceName != service {
			continue
		}
		spans = append(spans, s)
		byID[s.SpanID] = s
	}
	if len(spans) == 0 {
		return fmt.Errorf("trace %s has no span of service %q", tr.TraceID, service)
	}
	children := map[string][]*jaeger.Span{}
	var roots []*jaeger.Span
	for _, s := range spans {
		if p := spanParent(s); p != "" && byID[p] != nil {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	order := func(list []*jaeger.Span) {
		rank := map[string]int{tracing.SpanQueued: 0, tracing.SpanReserved: 1, tracing.SpanRunning: 2}
		slices.SortStableFunc(list, func(a, b *jaeger.Span) int {
			if a.StartTime != b.StartTime {
				return cmp.Compare(a.StartTime, b.StartTime)
			}
			ra, oka := rank[a.OperationName]
			rb, okb := rank[b.OperationName]
			if oka && okb {
				return ra - rb
			}
			return strings.Compare(a.OperationName, b.OperationName)
		})
	}
	order(roots)
	var walk func(s *jaeger.Span, depth int)
	walk = func(s *jaeger.Span, depth int) {
		fmt.Fprintf(w, "%s%s\n", strings.Repeat("  ", depth), spanLine(s))
		if strings.HasPrefix(s.OperationName, "phase ") {
			if v, ok := s.Tag("phasegang.waiting_for"); ok && v != "" {
				fmt.Fprintf(w, "%swaited for: %s\n", strings.Repeat("  ", depth+1), v)
			}
			for _, l := range s.Logs {
				fmt.Fprintf(w, "%s%s\n", strings.Repeat("  ", depth+1), logLine(s, l.Timestamp, l.Fields))
			}
		}
		kids := children[s.SpanID]
		order(kids)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return nil
}

func micros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

func fmtDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Second).String()
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	}
	return d.String()
}

func spanLine(s *jaeger.Span) string {
	label := s.OperationName
	var attrs []string
	add := func(name, key string) {
		if v, ok := s.Tag(key); ok && v != "" {
			attrs = append(attrs, name+"="+v)
		}
	}
	switch {
	case strings.HasPrefix(s.OperationName, "PhasedTraining "):
		add("state", "phasegang.state")
	case strings.HasPrefix(s.OperationName, "phase "):
		phase, ok1 := s.Tag("phasegang.phase")
		it, ok2 := s.Tag("phasegang.iteration")
		at, ok3 := s.Tag("phasegang.attempt")
		if ok1 && ok2 && ok3 {
			label = fmt.Sprintf("phase %s#%s.%s", phase, it, at)
		}
		add("granted", "phasegang.gang.granted")
		add("gpus", "phasegang.gpus")
		add("outcome", "phasegang.outcome")
		if nodes := spanNodes(s); len(nodes) > 0 {
			attrs = append(attrs, "nodes="+strings.Join(nodes, ","))
		}
	}
	line := label + "  " + fmtDuration(micros(s.Duration))
	if len(attrs) > 0 {
		line += "  " + strings.Join(attrs, " ")
	}
	return line
}

// spanNodes reads phasegang.nodes, a string slice attribute, which
// Jaeger's API returns as a JSON array in a string.
func spanNodes(s *jaeger.Span) []string {
	v, ok := s.Tag("phasegang.nodes")
	if !ok || v == "" {
		return nil
	}
	var nodes []string
	if err := json.Unmarshal([]byte(v), &nodes); err != nil {
		return []string{v}
	}
	return nodes
}

func logLine(s *jaeger.Span, ts int64, fields []jaeger.KeyValue) string {
	name, _ := jaeger.Lookup(fields, "event")
	line := fmt.Sprintf("@%s %s", fmtDuration(micros(ts-s.StartTime)), name)
	if v, ok := jaeger.Lookup(fields, "phasegang.workers"); ok && v != "0" {
		line += " workers=" + v
	}
	if v, ok := jaeger.Lookup(fields, "phasegang.message"); ok && v != "" {
		line += ": " + v
	}
	return line
}
