package argo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/validate"
	"github.com/google/go-cmp/cmp"
	"github.com/itchyny/gojq"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
	"github.com/phasegang/phasegang/phases"
)

var root = filepath.Join("..", "..", "..")

// wftGetter and cwftGetter are the template getters Argo's validation asks
// for templateRefs: a map serves.
type wftGetter map[string]*wfv1.WorkflowTemplate

func (g wftGetter) Get(name string) (*wfv1.WorkflowTemplate, error) {
	if t, ok := g[name]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("workflowtemplate %q not found", name)
}

type cwftGetter struct{}

func (cwftGetter) Get(name string) (*wfv1.ClusterWorkflowTemplate, error) {
	return nil, fmt.Errorf("clusterworkflowtemplate %q not found", name)
}

var lint = validate.ValidateOpts{Lint: true}

func validateWFT(t *testing.T, g wftGetter, wft *wfv1.WorkflowTemplate) {
	t.Helper()
	opts := lint
	opts.WorkflowTemplateValidation = true
	if err := validate.ValidateWorkflowTemplate(g, cwftGetter{}, wft.DeepCopy(), nil, opts); err != nil {
		t.Errorf("ValidateWorkflowTemplate %s: %v", wft.Name, err)
	}
	// And as submitted: `argo submit --from workflowtemplate/NAME`.
	wf := &wfv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{GenerateName: wft.Name + "-", Namespace: wft.Namespace},
		Spec:       wfv1.WorkflowSpec{WorkflowTemplateRef: &wfv1.WorkflowTemplateRef{Name: wft.Name}},
	}
	g2 := wftGetter{wft.Name: wft.DeepCopy()}
	for k, v := range g {
		g2[k] = v
	}
	if err := validate.ValidateWorkflow(g2, cwftGetter{}, wf, nil, lint); err != nil {
		t.Errorf("ValidateWorkflow from workflowtemplate/%s: %v", wft.Name, err)
	}
}

// examplePTs decodes every examples/*.yaml.
func examplePTs(t *testing.T) map[string][]v1alpha1.PhasedTraining {
	return wrappers.Examples(t, filepath.Join(root, "examples"))
}

// TestGeneratedTemplatesPassArgoValidation generates a WorkflowTemplate for
// every example PhasedTraining and runs Argo's own validation on it.
func TestGeneratedTemplatesPassArgoValidation(t *testing.T) {
	n := 0
	for file, pts := range examplePTs(t) {
		for i := range pts {
			wft, err := WorkflowTemplate(&pts[i], Options{ServiceAccountName: "phasegang-argo"})
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			validateWFT(t, wftGetter{}, wft)
			// The YAML the CLI prints reads back as the same template.
			y, err := Marshal(wft, "yaml")
			if err != nil {
				t.Fatal(err)
			}
			var back wfv1.WorkflowTemplate
			if err := yaml.UnmarshalStrict(y, &back); err != nil {
				t.Fatalf("%s: read back: %v", file, err)
			}
			validateWFT(t, wftGetter{}, &back)
			n++
		}
	}
	if n < 3 {
		t.Errorf("validated %d templates, want every example", n)
	}
}

// TestManifestRoundTrip: once Argo substitutes the variables, the manifest
// is the user's PhasedTraining (same spec, labels, annotations) plus the
// generated name, namespace, workflow label and traceparent annotation.
func TestManifestRoundTrip(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for file, pts := range examplePTs(t) {
		for i := range pts {
			pt := &pts[i]
			wft, err := WorkflowTemplate(pt, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := decodeManifest(t, file, resourceTemplate(t, wft.Spec.Templates), map[string]string{
				"workflow.namespace":                        "team-a",
				"workflow.name":                             "wf-x7k2p",
				"inputs.parameters." + TraceparentParameter: tp,
			})
			if got.GenerateName != pt.Name+"-" || got.Name != "" || got.Namespace != "team-a" {
				t.Errorf("%s: metadata = name %q generateName %q namespace %q", file, got.Name, got.GenerateName, got.Namespace)
			}
			if got.Annotations[TraceparentAnnotation] != tp || got.Labels[WorkflowLabel] != "wf-x7k2p" {
				t.Errorf("%s: annotations %v labels %v", file, got.Annotations, got.Labels)
			}
			if d := cmp.Diff(pt.Spec, got.Spec); d != "" {
				t.Errorf("%s: spec changed (-want +got):\n%s", file, d)
			}
			if wft.Name != pt.Name || wft.Namespace != pt.Namespace {
				t.Errorf("%s: WorkflowTemplate %s/%s", file, wft.Namespace, wft.Name)
			}
		}
	}
}

func TestRefusesTemplateVariablesInObject(t *testing.T) {
	pt := examplePTs(t)["train-validate-test.yaml"][0]
	pt.Spec.Phases[0].Template.Spec.Containers[0].Args = []string{"--out={{.Name}}"}
	_, err := WorkflowTemplate(&pt, Options{})
	if err == nil || err.Error() != `spec.phases[0].template.spec.containers[0].args[0]: Invalid value: "--out={{.Name}}": contains "{{", which Argo would substitute as a template variable` {
		t.Errorf("err = %v", err)
	}
	pt.Name = ""
	if _, err := WorkflowTemplate(&pt, Options{}); err == nil || !strings.HasPrefix(err.Error(), "metadata.name") {
		t.Errorf("no name: err = %v", err)
	}
}

func resourceTemplate(t *testing.T, tmpls []wfv1.Template) *wfv1.Template {
	t.Helper()
	for i := range tmpls {
		if tmpls[i].Name == ResourceTemplate {
			return &tmpls[i]
		}
	}
	t.Fatalf("no template %q", ResourceTemplate)
	return nil
}

var tagRE = regexp.MustCompile(`{{\s*([^}]*?)\s*}}`)

// decodeManifest substitutes vars into tmpl's manifest as Argo does (plain
// text replacement), decodes it strictly and checks it the way the
// controller will.
func decodeManifest(t *testing.T, where string, tmpl *wfv1.Template, vars map[string]string) *v1alpha1.PhasedTraining {
	t.Helper()
	text := tagRE.ReplaceAllStringFunc(tmpl.Resource.Manifest, func(m string) string {
		v, ok := vars[tagRE.FindStringSubmatch(m)[1]]
		if !ok {
			t.Errorf("%s: template %s: no test value for %s", where, tmpl.Name, m)
		}
		return v
	})
	pts, err := v1alpha1.Decode([]byte(text))
	if err != nil || len(pts) != 1 {
		t.Fatalf("%s: template %s: manifest: %d objects, %v\n%s", where, tmpl.Name, len(pts), err, text)
	}
	pt := pts[0].DeepCopy()
	checked := pt.DeepCopy()
	v1alpha1.SetDefaults(checked)
	if errs := phases.Validate(checked); len(errs) > 0 {
		t.Errorf("%s: template %s: manifest invalid: %v", where, tmpl.Name, errs.ToAggregate())
	}
	return pt
}

// ptObject is pt as the API server returns it: JSON, as a map.
func ptObject(t *testing.T, pt *v1alpha1.PhasedTraining) map[string]any {
	t.Helper()
	js, err := json.Marshal(pt)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(js, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func withState(s v1alpha1.PipelineState) *v1alpha1.PhasedTraining {
	pt := &v1alpha1.PhasedTraining{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "resnet50-abcde", Namespace: "ml"},
	}
	pt.Status.State = s
	return pt
}

// TestConditions evaluates the generated conditions as Argo's executor does
// against objects in every state.
func TestConditions(t *testing.T) {
	pt := examplePTs(t)["train-validate-test.yaml"][0]
	wft, err := WorkflowTemplate(&pt, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tmpl := resourceTemplate(t, wft.Spec.Templates)
	if tmpl.Resource.SuccessCondition != SuccessCondition || tmpl.Resource.FailureCondition != FailureCondition {
		t.Fatalf("conditions %q %q", tmpl.Resource.SuccessCondition, tmpl.Resource.FailureCondition)
	}
	// Parsed as Argo parses them; one requirement each, on status.state.
	for cond, want := range map[string]string{
		SuccessCondition: "status.state==Succeeded",
		FailureCondition: "status.state in (Failed,Infeasible,Invalid)",
	} {
		sel, err := labels.Parse(cond)
		if err != nil {
			t.Fatalf("labels.Parse(%q): %v", cond, err)
		}
		reqs, _ := sel.Requirements()
		if len(reqs) != 1 || reqs[0].Key() != "status.state" || sel.String() != want {
			t.Errorf("labels.Parse(%q) = %q, %d requirements", cond, sel.String(), len(reqs))
		}
	}
	cases := []struct {
		state             v1alpha1.PipelineState
		succeeded, failed bool
	}{
		{"", false, false}, // just created: no status yet
		{v1alpha1.PipelinePending, false, false},
		{v1alpha1.PipelineQueued, false, false},
		{v1alpha1.PipelineRunning, false, false},
		{v1alpha1.PipelineSucceeded, true, false},
		{v1alpha1.PipelineFailed, false, true},
		{v1alpha1.PipelineInfeasible, false, true},
		{v1alpha1.PipelineInvalid, false, true},
	}
	for _, c := range cases {
		obj := ptObject(t, withState(c.state))
		s, f, err := EvaluateConditions(tmpl, obj)
		if err != nil || s != c.succeeded || f != c.failed {
			t.Errorf("state %q: succeeded %v failed %v err %v; want %v %v", c.state, s, f, err, c.succeeded, c.failed)
		}
	}
	// Every PipelineState is decided one way or the other or keeps polling;
	// the terminal ones must be decided.
	if _, err := labels.Parse("status.state = = x"); err == nil {
		t.Error("labels.Parse accepted a bad selector")
	}
}

// TestEvaluateConditionsLikeArgo pins the parts of Argo's matchConditions
// semantics that differ from a naive reading.
func TestEvaluateConditionsLikeArgo(t *testing.T) {
	obj := map[string]any{
		"status": map[string]any{
			"state":  "Running",
			"phases": []any{map[string]any{"name": "train", "state": "Succeeded", "attempt": 2}},
		},
	}
	res := func(s, f string) *wfv1.Template {
		return &wfv1.Template{Resource: &wfv1.ResourceTemplate{SuccessCondition: s, FailureCondition: f}}
	}
	cases := []struct {
		name              string
		tmpl              *wfv1.Template
		succeeded, failed bool
		err               bool
	}{
		{"no conditions: done at once", res("", ""), true, false, false},
		{"only a failure condition, not met: succeeded", res("", "status.state == Failed"), true, false, false},
		{"gjson path indexes arrays", res("status.phases.0.state == Succeeded", ""), true, false, false},
		{"numbers read as their JSON text", res("status.phases.0.attempt == 2", ""), true, false, false},
		{"success needs every requirement", res("status.state == Running,status.phases.0.state == Failed", ""), false, false, false},
		{"failure needs any requirement", res("", "status.state == Nope,status.phases.0.state == Succeeded"), false, true, false},
		{"failure wins over success", res("status.state == Running", "status.state == Running"), false, true, false},
		{"missing key: != matches", res("status.message != x", ""), true, false, false},
		{"missing key: == does not", res("status.message == x", ""), false, false, false},
		{"unparsable", res("status.state == (", ""), false, false, true},
		{"not a resource template", &wfv1.Template{}, false, false, true},
	}
	for _, c := range cases {
		s, f, err := EvaluateConditions(c.tmpl, obj)
		if s != c.succeeded || f != c.failed || (err != nil) != c.err {
			t.Errorf("%s: succeeded %v failed %v err %v", c.name, s, f, err)
		}
	}
}

// kubectlJSONPath evaluates a valueFrom.jsonPath as Argo does at run time:
// `kubectl get -o jsonpath=TMPL` (workflow/executor/resource.go,
// SaveResourceParameters), whose printer (k8s.io/cli-runtime
// printers.JSONPathPrinter) runs client-go's jsonpath over the object's
// JSON map, allowing missing keys (--allow-missing-template-keys defaults
// to true).
func kubectlJSONPath(t *testing.T, obj map[string]any, tmpl string) string {
	t.Helper()
	j := jsonpath.New("out")
	j.AllowMissingKeys(true)
	if err := j.Parse(tmpl); err != nil {
		t.Fatalf("jsonpath %q: %v", tmpl, err)
	}
	var buf bytes.Buffer
	if err := j.Execute(&buf, obj); err != nil {
		t.Fatalf("jsonpath %q: %v", tmpl, err)
	}
	return buf.String()
}

// argoJQ is Argo's jqFilter (workflow/executor/resource.go), on the object
// `kubectl get -o json` prints.
func argoJQ(t *testing.T, obj map[string]any, filter string) string {
	t.Helper()
	js, _ := json.Marshal(obj)
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		t.Fatal(err)
	}
	q, err := gojq.Parse(filter)
	if err != nil {
		t.Fatalf("jq %q: %v", filter, err)
	}
	iter := q.RunWithContext(context.Background(), v)
	var buf strings.Builder
	for {
		v, ok := iter.Next()
		if !ok {
			break
		}
		if err, ok := v.(error); ok {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				break
			}
			t.Fatalf("jq %q: %v", filter, err)
		}
		if s, ok := v.(string); ok {
			buf.WriteString(s)
		} else {
			b, _ := json.Marshal(v)
			buf.Write(b)
		}
		buf.WriteString("\n")
	}
	return strings.TrimSpace(buf.String())
}

func outputValue(t *testing.T, p wfv1.Parameter, obj map[string]any) string {
	t.Helper()
	switch {
	case p.ValueFrom.JSONPath != "":
		return kubectlJSONPath(t, obj, p.ValueFrom.JSONPath)
	case p.ValueFrom.JQFilter != "":
		return argoJQ(t, obj, p.ValueFrom.JQFilter)
	}
	t.Fatalf("output %s: no jsonPath or jqFilter", p.Name)
	return ""
}

// TestOutputs reads the generated output parameters from finished objects
// as Argo would.
func TestOutputs(t *testing.T) {
	pts := examplePTs(t)
	t.Run("train-validate-test", func(t *testing.T) {
		pt := pts["train-validate-test.yaml"][0]
		pt.Name = "resnet50-k2x9q"
		pt.Status = v1alpha1.PhasedTrainingStatus{State: v1alpha1.PipelineSucceeded, Phases: []v1alpha1.PhaseStatus{
			{Name: "train", State: v1alpha1.PhaseSucceeded, Attempt: 1},
			{Name: "validate", State: v1alpha1.PhaseSucceeded, Outputs: map[string]string{"accuracy": "0.87"}},
			{Name: "test", State: v1alpha1.PhaseSucceeded},
		}}
		got := map[string]string{}
		for _, p := range OutputParameters(&pt) {
			got[p.Name] = outputValue(t, p, ptObject(t, &pt))
		}
		want := map[string]string{"name": "resnet50-k2x9q", "state": "Succeeded", "validate-accuracy": "0.87"}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
		// Skipped or never reported: empty, not an error.
		pt.Status.Phases[1].Outputs = nil
		if v := outputValue(t, OutputParameters(&pt)[2], ptObject(t, &pt)); v != "" {
			t.Errorf("unreported output = %q", v)
		}
	})
	t.Run("early-stopping", func(t *testing.T) {
		pt := pts["early-stopping.yaml"][0]
		pt.Status = v1alpha1.PhasedTrainingStatus{State: v1alpha1.PipelineSucceeded, Iteration: 2, Phases: []v1alpha1.PhaseStatus{
			{Name: "train", State: v1alpha1.PhaseSucceeded},
			{Name: "validate", State: v1alpha1.PhaseSucceeded, Outputs: map[string]string{"loss": "0.31"}},
			{Name: "train", Iteration: 1, State: v1alpha1.PhaseSucceeded},
			{Name: "validate", Iteration: 1, State: v1alpha1.PhaseSucceeded, Outputs: map[string]string{"loss": "0.17"}},
			{Name: "train", Iteration: 2, State: v1alpha1.PhaseSucceeded},
			{Name: "validate", Iteration: 2, State: v1alpha1.PhaseSucceeded, Outputs: map[string]string{"loss": "0.09"}},
			{Name: "test", State: v1alpha1.PhaseSucceeded, Outputs: map[string]string{"perplexity": "12.5"}},
		}}
		got := map[string]string{}
		for _, p := range OutputParameters(&pt) {
			got[p.Name] = outputValue(t, p, ptObject(t, &pt))
		}
		want := map[string]string{"name": "gpt-small-early-stop", "state": "Succeeded", "validate-loss": "0.09", "test-perplexity": "12.5"}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
		// A JSONPath filter would have printed every iteration.
		if v := kubectlJSONPath(t, ptObject(t, &pt), `{.status.phases[?(@.name=="validate")].outputs.loss}`); v != "0.31 0.17 0.09" {
			t.Errorf("jsonpath over iterations = %q", v)
		}
		pt.Status.Phases = pt.Status.Phases[:1]
		if v := argoJQ(t, ptObject(t, &pt), OutputJQ("validate", "loss")); v != "" {
			t.Errorf("no iteration reported: %q", v)
		}
	})
	// A retried phase: the failed attempts keep what they reported; the
	// output is the succeeded attempt's only (a JSONPath filter printed
	// "0.1 0.1" for two attempts).
	t.Run("retried", func(t *testing.T) {
		pt := pts["train-validate-test.yaml"][0]
		pt.Status = v1alpha1.PhasedTrainingStatus{State: v1alpha1.PipelineSucceeded, Phases: []v1alpha1.PhaseStatus{
			{Name: "train", State: v1alpha1.PhaseSucceeded},
			{Name: "validate", State: v1alpha1.PhaseFailed, Outputs: map[string]string{"accuracy": "0.1"}},
			{Name: "validate", Attempt: 1, State: v1alpha1.PhaseSucceeded, Outputs: map[string]string{"accuracy": "0.91"}},
			{Name: "validate", Attempt: 2, State: v1alpha1.PhaseFailed, Outputs: map[string]string{"accuracy": "0.1"}},
			{Name: "test", State: v1alpha1.PhaseSucceeded},
		}}
		if v := kubectlJSONPath(t, ptObject(t, &pt), `{.status.phases[?(@.name=="validate")].outputs.accuracy}`); v != "0.1 0.91 0.1" {
			t.Errorf("jsonpath over attempts = %q", v)
		}
		if v := outputValue(t, OutputParameters(&pt)[2], ptObject(t, &pt)); v != "0.91" {
			t.Errorf("validate-accuracy = %q, want the succeeded attempt's 0.91", v)
		}
		// Only failed attempts reported: nothing.
		pt.Status.Phases = slices.Delete(pt.Status.Phases, 2, 3)
		if v := outputValue(t, OutputParameters(&pt)[2], ptObject(t, &pt)); v != "" {
			t.Errorf("validate-accuracy with no succeeded attempt = %q, want \"\"", v)
		}
	})
}

// argoExamples reads examples/argo/*.yaml by kind.
func argoExamples(t *testing.T) (wfts map[string]*wfv1.WorkflowTemplate, wfs map[string]*wfv1.Workflow) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "examples", "argo", "*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("examples/argo: %v %v", files, err)
	}
	wfts, wfs = map[string]*wfv1.WorkflowTemplate{}, map[string]*wfv1.Workflow{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(data, &tm); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		switch tm.Kind {
		case "WorkflowTemplate":
			var w wfv1.WorkflowTemplate
			if err := yaml.UnmarshalStrict(data, &w); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			wfts[filepath.Base(f)] = &w
		case "Workflow":
			var w wfv1.Workflow
			if err := yaml.UnmarshalStrict(data, &w); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			wfs[filepath.Base(f)] = &w
		case "ServiceAccount":
			if filepath.Base(f) != "rbac.yaml" { // the workflow's RBAC (test/e2e checks it)
				t.Fatalf("%s: kind %q", f, tm.Kind)
			}
		default:
			t.Fatalf("%s: kind %q", f, tm.Kind)
		}
	}
	return wfts, wfs
}

// TestArgoExamples runs Argo's validation on examples/argo, checks the
// PhasedTrainings their resource templates create, and their conditions.
func TestArgoExamples(t *testing.T) {
	wfts, wfs := argoExamples(t)
	g := wftGetter{}
	for _, w := range wfts {
		g[w.Name] = w
	}
	vars := map[string]string{
		"workflow.namespace":                  "ml",
		"workflow.name":                       "baseline-then-finetune-x7k2p",
		"workflow.parameters.traceparent":     "",
		"inputs.parameters.traceparent":       "",
		"inputs.parameters.baseline-accuracy": "0.8123",
	}
	check := func(file string, spec *wfv1.WorkflowSpec) {
		tmpls := spec.Templates
		// The exit handler stops the workflow's unfinished pipelines.
		var stop *wfv1.Template
		for i := range tmpls {
			if tmpls[i].Name == spec.OnExit {
				stop = &tmpls[i]
			}
		}
		if spec.OnExit == "" || stop == nil || stop.Resource == nil ||
			stop.Resource.Action != "delete" || !slices.Equal(stop.Resource.Flags, StopFlags()) || stop.Resource.Manifest != "" {
			t.Errorf("%s: onExit %q is not the delete of StopFlags: %+v", file, spec.OnExit, stop)
		}
		n := 0
		for i := range tmpls {
			tmpl := &tmpls[i]
			if tmpl.Resource == nil || tmpl.Name == spec.OnExit {
				continue
			}
			n++
			decodeManifest(t, file, tmpl, vars)
			if tmpl.Resource.SuccessCondition != SuccessCondition || tmpl.Resource.FailureCondition != FailureCondition ||
				tmpl.Resource.Action != "create" || !tmpl.Resource.SetOwnerReference {
				t.Errorf("%s: template %s: resource %+v", file, tmpl.Name, tmpl.Resource)
			}
			for state, want := range map[v1alpha1.PipelineState][2]bool{
				v1alpha1.PipelineRunning: {false, false}, v1alpha1.PipelineSucceeded: {true, false},
				v1alpha1.PipelineFailed: {false, true}, v1alpha1.PipelineInfeasible: {false, true},
			} {
				s, f, err := EvaluateConditions(tmpl, ptObject(t, withState(state)))
				if err != nil || [2]bool{s, f} != want {
					t.Errorf("%s: template %s: state %s: %v %v %v", file, tmpl.Name, state, s, f, err)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no resource template", file)
		}
	}
	for file, w := range wfts {
		validateWFT(t, g, w)
		check(file, &w.Spec)
	}
	for file, w := range wfs {
		if err := validate.ValidateWorkflow(g, cwftGetter{}, w.DeepCopy(), nil, lint); err != nil {
			t.Errorf("%s: ValidateWorkflow: %v", file, err)
		}
		check(file, &w.Spec)
	}
}

// TestGeneratedExampleIsCurrent: examples/argo/train-validate-test.workflowtemplate.yaml
// is the generator's output for examples/train-validate-test.yaml.
func TestGeneratedExampleIsCurrent(t *testing.T) {
	wfts, _ := argoExamples(t)
	file := "train-validate-test.workflowtemplate.yaml"
	pt := examplePTs(t)["train-validate-test.yaml"][0]
	want, err := WorkflowTemplate(&pt, Options{})
	if err != nil {
		t.Fatal(err)
	}
	asMap := func(v any) map[string]any {
		b, err := Marshal(v, "json")
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if d := cmp.Diff(asMap(want), asMap(wfts[file])); d != "" {
		t.Errorf("examples/argo/%s is stale; regenerate it (see its header) (-want +got):\n%s", file, d)
	}
}

// TestValidationIsLive: Argo's validation, as used above, does reject a
// broken template, so the passing tests mean something.
func TestValidationIsLive(t *testing.T) {
	pt := examplePTs(t)["train-validate-test.yaml"][0]
	opts := lint
	opts.WorkflowTemplateValidation = true
	for name, breakIt := range map[string]func(*wfv1.Template){
		"unknown variable in manifest": func(r *wfv1.Template) {
			r.Resource.Manifest = strings.Replace(r.Resource.Manifest, "inputs.parameters.traceparent", "inputs.parameters.nope", 1)
		},
		"bad action":            func(r *wfv1.Template) { r.Resource.Action = "launch" },
		"manifest not YAML":     func(r *wfv1.Template) { r.Resource.Manifest = "a: [" },
		"output without source": func(r *wfv1.Template) { r.Outputs.Parameters[0].ValueFrom = &wfv1.ValueFrom{} },
	} {
		wft, err := WorkflowTemplate(&pt, Options{})
		if err != nil {
			t.Fatal(err)
		}
		breakIt(resourceTemplate(t, wft.Spec.Templates))
		if err := validate.ValidateWorkflowTemplate(wftGetter{}, cwftGetter{}, wft, nil, opts); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}
