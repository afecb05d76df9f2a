// Package argo embeds PhasedTrainings in Argo Workflows.
//
// WorkflowTemplate turns a PhasedTraining into an Argo WorkflowTemplate whose
// `resource` template creates the PhasedTraining (owned by the Workflow),
// waits on its status.state, and exposes its state and its phases' declared
// outputs as output parameters. EvaluateConditions evaluates a resource
// template's successCondition/failureCondition against an object the way
// Argo's executor does at run time.
//
// Only Argo's API types (pkg/apis/workflow/v1alpha1) are imported here; the
// tests also use workflow/validate. Argo's controller, executor and apiclient
// packages do not build against this module's Kubernetes libraries.
package argo

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

const (
	// TraceparentAnnotation is the annotation the generated manifest sets on
	// the PhasedTraining from the traceparent parameter; the controller
	// parents the pipeline's trace from it (W3C trace-context format,
	// "00-<trace-id>-<span-id>-<flags>"). Empty means "start a new trace".
	TraceparentAnnotation = "phasegang.dev/traceparent"
	// WorkflowLabel is set on the created PhasedTraining to the Workflow's
	// name, so `kubectl get pt -l phasegang.dev/argo-workflow=NAME` finds it.
	WorkflowLabel = "phasegang.dev/argo-workflow"

	// EntrypointTemplate is the steps template the WorkflowTemplate starts
	// at; it calls ResourceTemplate and re-exports its outputs.
	EntrypointTemplate = "main"
	// ResourceTemplate is the template that creates the PhasedTraining and
	// waits for it. Other workflows call it with templateRef.
	ResourceTemplate = "phasedtraining"
	// TraceparentParameter is the name of the workflow argument and of the
	// resource template's input that fill TraceparentAnnotation.
	TraceparentParameter = "traceparent"

	// SuccessCondition and FailureCondition are the resource template's
	// conditions. Argo parses them with k8s.io/apimachinery labels.Parse and
	// reads each key as a path into the object's JSON (see EvaluateConditions).
	SuccessCondition = "status.state == Succeeded"
	FailureCondition = "status.state in (Failed,Infeasible,Invalid)"

	// StopTemplate is the exit handler (spec.onExit) that deletes the
	// workflow's PhasedTrainings that could still run (StopFlags), so a
	// pipeline whose step failed (Infeasible: it would start once nodes are
	// added) or was stopped does not run later, orphaned from its workflow.
	StopTemplate = "stop-unfinished"

	// OutputName and OutputState are the resource template's fixed output
	// parameters: the created object's name and its final status.state.
	OutputName  = "name"
	OutputState = "state"
)

// Options tune the generated WorkflowTemplate. The zero value is usable.
type Options struct {
	// Name of the WorkflowTemplate; defaults to the PhasedTraining's name
	// (or its generateName without the trailing "-").
	Name string
	// Namespace of the WorkflowTemplate; defaults to the PhasedTraining's
	// namespace. The PhasedTraining itself is always created in the
	// Workflow's namespace ({{workflow.namespace}}), because an owner
	// reference cannot cross namespaces.
	Namespace string
	// ServiceAccountName runs the Workflow's pods as this service account;
	// it needs the Role of examples/argo/rbac.yaml (docs/argo.md).
	ServiceAccountName string
}

// OutputParameterName is the name of the output parameter carrying the
// declared output key of phase: "<phase>-<key>". It is unambiguous because
// keys are identifiers (no "-") and never collides with OutputName or
// OutputState (which have no "-").
func OutputParameterName(phase, key string) string { return phase + "-" + key }

// WorkflowTemplate builds a WorkflowTemplate running pt. pt should be valid
// (phases.Validate); WorkflowTemplate itself only refuses what Argo could not
// run: no name to derive object names from, or "{{" in the object, which Argo
// would try to substitute.
func WorkflowTemplate(pt *v1alpha1.PhasedTraining, o Options) (*wfv1.WorkflowTemplate, error) {
	base := pt.Name
	if base == "" {
		base = strings.TrimSuffix(pt.GenerateName, "-")
	}
	if base == "" {
		return nil, fmt.Errorf("metadata.name: Required value: needed to name the WorkflowTemplate and the created PhasedTrainings")
	}
	name := o.Name
	if name == "" {
		name = base
	}
	namespace := o.Namespace
	if namespace == "" {
		namespace = pt.Namespace
	}

	manifest, err := Manifest(pt, "{{inputs.parameters."+TraceparentParameter+"}}")
	if err != nil {
		return nil, err
	}
	res := ResourceTemplateFor(pt, manifest)

	// The entrypoint re-exports every output of the resource step, so a
	// workflow submitted from this template shows them at its top level.
	var mainOutputs []wfv1.Parameter
	for _, p := range res.Outputs.Parameters {
		mainOutputs = append(mainOutputs, wfv1.Parameter{
			Name:        p.Name,
			Description: p.Description,
			ValueFrom:   &wfv1.ValueFrom{Parameter: "{{steps.run.outputs.parameters." + p.Name + "}}"},
		})
	}
	main := wfv1.Template{
		Name: EntrypointTemplate,
		Steps: []wfv1.ParallelSteps{{Steps: []wfv1.WorkflowStep{{
			Name:     "run",
			Template: ResourceTemplate,
			Arguments: wfv1.Arguments{Parameters: []wfv1.Parameter{{
				Name:  TraceparentParameter,
				Value: wfv1.AnyStringPtr("{{workflow.parameters." + TraceparentParameter + "}}"),
			}}},
		}}}},
		Outputs: wfv1.Outputs{Parameters: mainOutputs},
	}

	wft := &wfv1.WorkflowTemplate{
		TypeMeta: metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "WorkflowTemplate"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: namespace,
			Labels:    map[string]string{"app.kubernetes.io/managed-by": "phasegang"},
		},
		Spec: wfv1.WorkflowSpec{
			Entrypoint:         EntrypointTemplate,
			ServiceAccountName: o.ServiceAccountName,
			Arguments: wfv1.Arguments{Parameters: []wfv1.Parameter{{
				Name:        TraceparentParameter,
				Value:       wfv1.AnyStringPtr(""),
				Description: wfv1.AnyStringPtr("W3C traceparent of the caller (e.g. a CI job); copied to the PhasedTraining's " + TraceparentAnnotation + " annotation. Empty: the controller starts a new trace."),
			}}},
			Templates: []wfv1.Template{main, *res, *StopTemplateFor()},
			OnExit:    StopTemplate,
		},
	}
	return wft, nil
}

// StopFlags are the kubectl arguments of StopTemplate's delete: every
// PhasedTraining of this workflow (WorkflowLabel) in its namespace whose
// status.state is not final (Pending, Queued, Starting, Running, Infeasible). Argo's
// executor runs `kubectl delete --ignore-not-found FLAGS -o name`
// (workflow/executor/resource.go, getKubectlArguments). Succeeded, Failed
// and Invalid ones are kept for their status: they never run again. The
// field selector needs the CRD's selectable field status.state.
func StopFlags() []string {
	return []string{
		"phasedtrainings.phasegang.dev",
		"--namespace", "{{workflow.namespace}}",
		"--selector", WorkflowLabel + "={{workflow.name}}",
		"--field-selector", "status.state!=Succeeded,status.state!=Failed,status.state!=Invalid",
		"--wait=false",
	}
}

// StopTemplateFor returns the exit handler named StopTemplate.
func StopTemplateFor() *wfv1.Template {
	return &wfv1.Template{
		Name:     StopTemplate,
		Resource: &wfv1.ResourceTemplate{Action: "delete", Flags: StopFlags()},
	}
}

// ResourceTemplateFor returns the resource template named ResourceTemplate
// that creates manifest (pt rendered by Manifest) and waits for it. Its input
// parameter TraceparentParameter defaults to "".
func ResourceTemplateFor(pt *v1alpha1.PhasedTraining, manifest string) *wfv1.Template {
	return &wfv1.Template{
		Name: ResourceTemplate,
		Inputs: wfv1.Inputs{Parameters: []wfv1.Parameter{{
			Name:    TraceparentParameter,
			Default: wfv1.AnyStringPtr(""),
		}}},
		Resource: &wfv1.ResourceTemplate{
			Action: "create",
			// The Workflow owns the PhasedTraining: deleting the Workflow
			// deletes it (and its gangs' pods).
			SetOwnerReference: true,
			SuccessCondition:  SuccessCondition,
			FailureCondition:  FailureCondition,
			Manifest:          manifest,
		},
		Outputs: wfv1.Outputs{Parameters: OutputParameters(pt)},
	}
}

// OutputParameters are the resource template's outputs: OutputName,
// OutputState, and one parameter per declared output of each phase
// (OutputParameterName), in spec order.
//
// Each phase output is read with a jq filter (OutputJQ) that takes the
// latest Succeeded entry of the phase that reported the key: a phase has
// one status.phases entry per iteration and attempt, and failed attempts
// keep what they reported, so a JSONPath filter would print them all
// ("0.1 0.1" for a retried phase). Argo reads it after the success
// condition holds, with `kubectl get -o json` + gojq
// (workflow/executor/resource.go, SaveResourceParameters); a key no
// succeeded attempt reported (e.g. the phase was Skipped) reads as "".
func OutputParameters(pt *v1alpha1.PhasedTraining) []wfv1.Parameter {
	params := []wfv1.Parameter{
		{
			Name:        OutputName,
			Description: wfv1.AnyStringPtr("name of the created PhasedTraining"),
			ValueFrom:   &wfv1.ValueFrom{JSONPath: "{.metadata.name}"},
		},
		{
			Name:        OutputState,
			Description: wfv1.AnyStringPtr("status.state of the PhasedTraining when the step ended"),
			ValueFrom:   &wfv1.ValueFrom{JSONPath: "{.status.state}"},
		},
	}
	for _, ph := range pt.Spec.Phases {
		for _, key := range ph.Outputs {
			params = append(params, wfv1.Parameter{
				Name:        OutputParameterName(ph.Name, key),
				Description: wfv1.AnyStringPtr(fmt.Sprintf("output %q of phase %q, from its latest succeeded attempt", key, ph.Name)),
				ValueFrom:   &wfv1.ValueFrom{JQFilter: OutputJQ(ph.Name, key)},
			})
		}
	}
	return params
}

// OutputJQ is the jq filter reading a phase's output from its latest
// (iteration, then attempt; both omitted when 0) Succeeded entry that
// reported it; "" when none did. Phase names and keys are restricted by the
// API (DNS label, identifier), so they need no quoting.
func OutputJQ(phase, key string) string {
	return fmt.Sprintf(`[.status.phases[]? | select(.name == "%s" and .state == "Succeeded" and .outputs.%s != null)] | max_by([.iteration // 0, .attempt // 0]) | .outputs.%s // ""`, phase, key, key)
}

// Manifest renders pt as the YAML Argo creates: apiVersion, kind, the
// metadata a user sets (labels, annotations) and spec, with
//
//   - metadata.generateName "<name>-" instead of name, so every run (and
//     every retry) creates a fresh object;
//   - metadata.namespace "{{workflow.namespace}}", the owner's namespace;
//   - label WorkflowLabel "{{workflow.name}}";
//   - annotation TraceparentAnnotation set to traceparent (an Argo
//     expression such as "{{inputs.parameters.traceparent}}").
//
// It refuses an object containing "{{": Argo would substitute it.
func Manifest(pt *v1alpha1.PhasedTraining, traceparent string) (string, error) {
	gen := pt.GenerateName
	if pt.Name != "" {
		gen = pt.Name + "-"
	}
	out := v1alpha1.PhasedTraining{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: gen,
			Labels:       copyMap(pt.Labels),
			Annotations:  copyMap(pt.Annotations),
		},
		Spec: *pt.Spec.DeepCopy(),
	}
	js, err := json.Marshal(&out)
	if err != nil {
		return "", err
	}
	var obj map[string]any
	if err := json.Unmarshal(js, &obj); err != nil {
		return "", err
	}
	if path, v, ok := findTemplateVar(obj, ""); ok {
		return "", fmt.Errorf("%s: Invalid value: %q: contains \"{{\", which Argo would substitute as a template variable", path, v)
	}
	delete(obj, "status")
	// Only these keys, whose empty value means absent: an empty map
	// elsewhere (emptyDir: {}) means something.
	prune(obj, "metadata", "creationTimestamp", "resources")
	md := obj["metadata"].(map[string]any)
	delete(md, "creationTimestamp")
	md["namespace"] = "{{workflow.namespace}}"
	labels, _ := md["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
	}
	labels[WorkflowLabel] = "{{workflow.name}}"
	md["labels"] = labels
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
	}
	ann[TraceparentAnnotation] = traceparent
	md["annotations"] = ann
	y, err := yaml.Marshal(obj)
	if err != nil {
		return "", err
	}
	return string(y), nil
}

// Marshal encodes a WorkflowTemplate (or Workflow) as "yaml" or "json",
// without the empty fields Go's encoders emit for struct-typed fields
// (creationTimestamp: null, metadata: {}, inputs: {}, outputs: {},
// arguments: {}), which mean the same as absent.
func Marshal(v any, format string) ([]byte, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(js, &obj); err != nil {
		return nil, err
	}
	prune(obj, "creationTimestamp", "metadata", "inputs", "outputs", "arguments")
	switch format {
	case "json":
		b, err := json.MarshalIndent(obj, "", "  ")
		return append(b, '\n'), err
	case "yaml":
		return yaml.Marshal(obj)
	}
	return nil, fmt.Errorf("format %q: want yaml or json", format)
}

// prune removes, at any depth, the given keys whose value is null or an
// empty object.
func prune(v any, keys ...string) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			prune(c, keys...)
			if !slices.Contains(keys, k) {
				continue
			}
			if m, ok := c.(map[string]any); c == nil || ok && len(m) == 0 {
				delete(v, k)
			}
		}
	case []any:
		for _, c := range v {
			prune(c, keys...)
		}
	}
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// findTemplateVar returns the field path and value of the first string
// (or key) in v, in sorted key order, containing "{{".
func findTemplateVar(v any, path string) (string, string, bool) {
	switch v := v.(type) {
	case string:
		return path, v, strings.Contains(v, "{{")
	case map[string]any:
		keys := slices.Sorted(maps.Keys(v))
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if strings.Contains(k, "{{") {
				return p, k, true
			}
			if p, s, ok := findTemplateVar(v[k], p); ok {
				return p, s, true
			}
		}
	case []any:
		for i, c := range v {
			if p, s, ok := findTemplateVar(c, fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, s, true
			}
		}
	}
	return "", "", false
}
