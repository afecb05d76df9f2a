package crd_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
	"github.com/phasegang/phasegang/phases"
)

// worker is a minimal, valid worker pod template with one GPU.
func worker() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{
			Name:  "worker",
			Image: "registry.example/train:1",
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
			},
		}},
	}}
}

// pipeline is a valid train → validate → test pipeline with an early-stopping
// loop; each test case breaks one thing in it.
func pipeline() *v1alpha1.PhasedTraining {
	return &v1alpha1.PhasedTraining{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "resnet", Namespace: "ml"},
		Spec: v1alpha1.PhasedTrainingSpec{
			Iterate: &v1alpha1.Iterate{
				Phases:        []string{"train", "validate"},
				Until:         "float(phases.validate.outputs.accuracy) >= 0.9",
				MaxIterations: 5,
			},
			Phases: []v1alpha1.Phase{
				{Name: "train", Gang: v1alpha1.Gang{Min: 2, Desired: ptr.To[int32](8)}, Template: worker()},
				{Name: "validate", DependsOn: []string{"train"}, Gang: v1alpha1.Gang{Min: 2}, Outputs: []string{"accuracy"}, SuccessPolicy: v1alpha1.SuccessPolicyChief, Template: worker()},
				{Name: "test", DependsOn: []string{"validate"}, When: "float(phases.validate.outputs.accuracy) >= 0.8", Gang: v1alpha1.Gang{Min: 1}, Template: worker(), Timeout: &metav1.Duration{Duration: time.Hour}},
			},
		},
	}
}

// describe renders errors as "path: type: detail", the parts a user reads.
func describe(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s: %s: %s", e.Field, e.Type, e.Detail))
	}
	return out
}

// paths renders errors as "path: type", the parts package phases and the
// API server must agree on; their wording differs.
func paths(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s: %s", e.Field, e.Type))
	}
	return out
}

func TestValidObjectsAreAdmitted(t *testing.T) {
	s := newAPIServer(t)
	objs := map[string]*v1alpha1.PhasedTraining{"pipeline": pipeline()}
	for _, dir := range []string{"examples", filepath.Join("examples", "topology")} {
		for file, pts := range wrappers.Examples(t, filepath.Join("..", "..", dir)) {
			for i := range pts {
				objs[fmt.Sprintf("%s/%s", file, pts[i].Name)] = &pts[i]
			}
		}
	}
	for name, pt := range objs {
		t.Run(name, func(t *testing.T) {
			obj := toUnstructured(t, pt)
			if errs := s.create(obj); len(errs) > 0 {
				t.Errorf("API server rejects it:\n%v", errs.ToAggregate())
			}
			if errs := phases.Validate(pt); len(errs) > 0 {
				t.Errorf("phases.Validate rejects it:\n%v", errs.ToAggregate())
			}

			// The object the API server stores (pruned and defaulted by
			// the CRD) must be the object SetDefaults makes from the
			// file: `phasegang validate` sees what the controller will.
			var stored v1alpha1.PhasedTraining
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &stored); err != nil {
				t.Fatal(err)
			}
			local := pt.DeepCopy()
			v1alpha1.SetDefaults(local)
			v1alpha1.SetDefaults(&stored)
			if diff := cmp.Diff(local.Spec, stored.Spec); diff != "" {
				t.Errorf("SetDefaults and the CRD's defaults differ (-SetDefaults +API server):\n%s", diff)
			}
		})
	}
}

// local is what `phasegang validate` says about obj: the errors of
// v1alpha1.Decode (one string each), or else those of phases.Validate as
// "path: type". The controller reads objects the API server admitted, so
// for it phases.Validate alone decides; a file may also hold what a typed
// object cannot (a duration "5min", a missing field), which Decode reports.
func local(t testing.TB, obj map[string]any) []string {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := v1alpha1.Decode(data)
	if err != nil {
		return strings.Split(strings.TrimPrefix(err.Error(), "document 1: "), "\n")
	}
	if len(pts) != 1 {
		t.Fatalf("decoded %d objects, want 1", len(pts))
	}
	return paths(phases.Validate(&pts[0]))
}

func TestInvalidObjects(t *testing.T) {
	s := newAPIServer(t)
	cases := map[string]struct {
		mutate func(pt *v1alpha1.PhasedTraining)
		// edit changes the object as JSON, for what a typed object cannot
		// hold (the YAML a user writes).
		edit func(obj map[string]any)
		// wantCRD is what the API server says; nil for a rule CEL and
		// OpenAPI cannot express (then only the controller rejects it).
		wantCRD []string
		// wantGo is what `phasegang validate` says (see local): the same
		// problem, located at the offending entry.
		wantGo []string
	}{
		"min greater than desired": {
			mutate: func(pt *v1alpha1.PhasedTraining) {
				pt.Spec.Phases[0].Gang = v1alpha1.Gang{Min: 8, Desired: ptr.To[int32](4)}
			},
			wantCRD: []string{"spec.phases[0].gang.desired: Invalid value: gang.desired must be greater than or equal to gang.min"},
			wantGo:  []string{"spec.phases[0].gang.desired: Invalid value"},
		},
		"min zero": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases[2].Gang.Min = 0 },
			wantCRD: []string{"spec.phases[2].gang.min: Invalid value: spec.phases[2].gang.min in body should be greater than or equal to 1"},
			wantGo:  []string{"spec.phases[2].gang.min: Invalid value"},
		},
		"duplicate phase name": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases[2].Name = "validate" },
			wantCRD: []string{"spec.phases[2]: Duplicate value: ", "spec.phases[2].dependsOn: Invalid value: a phase cannot depend on itself"},
			wantGo:  []string{"spec.phases[2].name: Duplicate value", "spec.phases[2].dependsOn[0]: Invalid value"},
		},
		"phase name not a DNS label": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases[2].Name = "Test_1" },
			wantCRD: []string{"spec.phases[2].name: Invalid value: spec.phases[2].name in body should match '^[a-z]([-a-z0-9]*[a-z0-9])?$'"},
			wantGo:  []string{"spec.phases[2].name: Invalid value"},
		},
		"no phases": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases = []v1alpha1.Phase{}; pt.Spec.Iterate = nil },
			wantCRD: []string{"spec.phases: Invalid value: spec.phases in body should have at least 1 items"},
			wantGo:  []string{"spec.phases: Required value"},
		},
		"too many phases": {
			mutate: func(pt *v1alpha1.PhasedTraining) {
				for i := len(pt.Spec.Phases); i <= 32; i++ {
					pt.Spec.Phases = append(pt.Spec.Phases, v1alpha1.Phase{Name: fmt.Sprintf("extra-%d", i), Gang: v1alpha1.Gang{Min: 1}, Template: worker()})
				}
			},
			wantCRD: []string{"spec.phases: Too many: must have at most 32 items"},
			wantGo:  []string{"spec.phases: Too many"},
		},
		// fieldPath cannot hold an index: the message starts with the
		// entry's path, as phasegang validate says it.
		"unknown dependsOn": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases[1].DependsOn = []string{"trian"} },
			wantCRD: []string{`spec.phases: Invalid value: spec.phases[1].dependsOn[0]: phase validate dependsOn unknown phase "trian": every dependsOn entry must name one of spec.phases ["train", "validate", "test"]`},
			wantGo:  []string{"spec.phases[1].dependsOn[0]: Invalid value"},
		},
		"unknown dependsOn in two phases: the message names the first": {
			mutate: func(pt *v1alpha1.PhasedTraining) {
				pt.Spec.Phases[1].DependsOn = []string{"train", "trian"}
				pt.Spec.Phases[2].DependsOn = []string{"zzz"}
			},
			wantCRD: []string{`spec.phases: Invalid value: spec.phases[1].dependsOn[1]: phase validate dependsOn unknown phase "trian": every dependsOn entry must name one of spec.phases ["train", "validate", "test"]`},
			wantGo:  []string{"spec.phases[1].dependsOn[1]: Invalid value", "spec.phases[2].dependsOn[0]: Invalid value"},
		},
		"dependsOn not a phase name": {
			mutate: func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases[1].DependsOn = []string{"Train"} },
			wantCRD: []string{
				"spec.phases[1].dependsOn[0]: Invalid value: spec.phases[1].dependsOn[0] in body should match '^[a-z]([-a-z0-9]*[a-z0-9])?$'",
				`spec.phases: Invalid value: spec.phases[1].dependsOn[0]: phase validate dependsOn unknown phase "Train": every dependsOn entry must name one of spec.phases ["train", "validate", "test"]`,
			},
			wantGo: []string{"spec.phases[1].dependsOn[0]: Invalid value"},
		},
		"self dependency": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases[1].DependsOn = []string{"train", "validate"} },
			wantCRD: []string{"spec.phases[1].dependsOn: Invalid value: a phase cannot depend on itself"},
			wantGo:  []string{"spec.phases[1].dependsOn[1]: Invalid value"},
		},
		"duplicate dependsOn": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases[1].DependsOn = []string{"train", "train"} },
			wantCRD: []string{"spec.phases[1].dependsOn[1]: Duplicate value: "},
			wantGo:  []string{"spec.phases[1].dependsOn[1]: Duplicate value"},
		},
		"dependency cycle": {
			mutate: func(pt *v1alpha1.PhasedTraining) {
				pt.Spec.Phases[0].DependsOn = []string{"test"}
				pt.Spec.Iterate = nil
			},
			// CEL has no recursion and cannot parse expr-lang: only the controller rejects it.
			wantGo: []string{"spec.phases[1].dependsOn[0]: Invalid value"},
		},
		"iterate names unknown phase": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.Iterate.Phases = []string{"train", "valdate"} },
			wantCRD: []string{`spec.iterate.phases: Invalid value: spec.iterate.phases[1]: unknown phase "valdate": every iterate.phases entry must name one of spec.phases ["train", "validate", "test"]`},
			wantGo:  []string{"spec.iterate.phases[1]: Invalid value"},
		},
		"iterate maxIterations zero": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.Iterate.MaxIterations = 0 },
			wantCRD: []string{"spec.iterate.maxIterations: Invalid value: spec.iterate.maxIterations in body should be greater than or equal to 1"},
			wantGo:  []string{"spec.iterate.maxIterations: Invalid value"},
		},
		"priority and priorityClassName": {
			mutate: func(pt *v1alpha1.PhasedTraining) {
				pt.Spec.Priority = ptr.To[int32](10)
				pt.Spec.PriorityClassName = "research"
			},
			wantCRD: []string{"spec.priorityClassName: Forbidden: set at most one of priority and priorityClassName"},
			wantGo:  []string{"spec.priorityClassName: Forbidden"},
		},
		"output not an identifier": {
			mutate: func(pt *v1alpha1.PhasedTraining) {
				pt.Spec.Phases[1].Outputs = []string{"accuracy", "top-5"}
			},
			wantCRD: []string{"spec.phases[1].outputs[1]: Invalid value: spec.phases[1].outputs[1] in body should match '^[A-Za-z_][A-Za-z0-9_]*$'"},
			wantGo:  []string{"spec.phases[1].outputs[1]: Invalid value"},
		},
		"gang min above the maximum": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases[2].Gang.Min = 10001 },
			wantCRD: []string{"spec.phases[2].gang.min: Invalid value: spec.phases[2].gang.min in body should be less than or equal to 10000"},
			wantGo:  []string{"spec.phases[2].gang.min: Invalid value"},
		},
		"gang desired above the maximum": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases[0].Gang.Desired = ptr.To[int32](10001) },
			wantCRD: []string{"spec.phases[0].gang.desired: Invalid value: spec.phases[0].gang.desired in body should be less than or equal to 10000"},
			wantGo:  []string{"spec.phases[0].gang.desired: Invalid value"},
		},
		"maxRetries above the maximum": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases[0].MaxRetries = 101 },
			wantCRD: []string{"spec.phases[0].maxRetries: Invalid value: spec.phases[0].maxRetries in body should be less than or equal to 100"},
			wantGo:  []string{"spec.phases[0].maxRetries: Invalid value"},
		},
		"maxIterations above the maximum": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.Iterate.MaxIterations = 1001 },
			wantCRD: []string{"spec.iterate.maxIterations: Invalid value: spec.iterate.maxIterations in body should be less than or equal to 1000"},
			wantGo:  []string{"spec.iterate.maxIterations: Invalid value"},
		},
		"when too long": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases[2].When = strings.Repeat("x", 1025) },
			wantCRD: []string{"spec.phases[2].when: Too long: may not be more than 1024 bytes"},
			wantGo:  []string{"spec.phases[2].when: Too long"},
		},
		"priorityClassName too long": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.PriorityClassName = strings.Repeat("x", 254) },
			wantCRD: []string{"spec.priorityClassName: Too long: may not be more than 253 bytes"},
			wantGo:  []string{"spec.priorityClassName: Too long"},
		},
		"startTimeout not a duration": {
			edit:    func(obj map[string]any) { phase(obj, 2)["startTimeout"] = "abc" },
			wantCRD: []string{"spec.phases[2].startTimeout: Invalid value: must be a duration such as 90s, 30m or 1h30m (numbers with units ns, us, ms, s, m or h)"},
			wantGo:  []string{`spec.phases[2].startTimeout: invalid duration "abc": time: invalid duration "abc"`},
		},
		"timeout with an unknown unit": {
			edit:    func(obj map[string]any) { phase(obj, 2)["timeout"] = "5min" },
			wantCRD: []string{"spec.phases[2].timeout: Invalid value: must be a duration such as 90s, 30m or 1h30m (numbers with units ns, us, ms, s, m or h)"},
			wantGo:  []string{`spec.phases[2].timeout: invalid duration "5min": time: unknown unit "min" in duration "5min"`},
		},
		"negative startTimeout": {
			edit:    func(obj map[string]any) { phase(obj, 0)["startTimeout"] = "-1m30s" },
			wantCRD: []string{"spec.phases[0].startTimeout: Invalid value: must be greater than 0 when set"},
			wantGo:  []string{"spec.phases[0].startTimeout: Invalid value"},
		},
		"timeout overflows": {
			// Matches the pattern, so CEL converts it and fails; the one
			// case left with CEL's own message.
			edit:    func(obj map[string]any) { phase(obj, 2)["timeout"] = "9999999h" },
			wantCRD: []string{"spec.phases[2].timeout: Invalid value: type conversion error from 'string' to 'google.protobuf.Duration' evaluating rule: must be a duration greater than 0"},
			wantGo:  []string{`spec.phases[2].timeout: invalid duration "9999999h": time: invalid duration "9999999h"`},
		},
		"timeout too long": {
			edit:    func(obj map[string]any) { phase(obj, 2)["timeout"] = strings.Repeat("1h", 33) },
			wantCRD: []string{"spec.phases[2].timeout: Too long: may not be more than 64 bytes"},
			wantGo:  []string{"spec.phases[2].timeout: Too long: may not be more than 64 characters"},
		},
		"quantity not a quantity": {
			edit: func(obj map[string]any) {
				container(obj, 1)["resources"].(map[string]any)["limits"].(map[string]any)["nvidia.com/gpu"] = "abc"
			},
			wantCRD: []string{`spec.phases[1].template.spec.containers[0].resources.limits.nvidia.com/gpu: Invalid value: spec.phases[1].template.spec.containers[0].resources.limits.nvidia.com/gpu in body should match '^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$'`},
			wantGo:  []string{`spec.phases[1].template.spec.containers[0].resources.limits[nvidia.com/gpu]: invalid quantity "abc": must be a number with an optional suffix, such as 500m, 4 or 32Gi`},
		},
		"container without a name": {
			edit:    func(obj map[string]any) { delete(container(obj, 0), "name") },
			wantCRD: []string{"spec.phases[0].template.spec.containers[0].name: Required value: "},
			wantGo:  []string{"spec.phases[0].template.spec.containers[0].name: Required value"},
		},
		"phase without a gang": {
			edit:    func(obj map[string]any) { delete(phase(obj, 1), "gang") },
			wantCRD: []string{"spec.phases[1].gang: Required value: "},
			wantGo:  []string{"spec.phases[1].gang: Required value"},
		},
		"duplicate container name": {
			mutate: func(pt *v1alpha1.PhasedTraining) {
				tpl := &pt.Spec.Phases[0].Template.Spec
				tpl.Containers = append(tpl.Containers, corev1.Container{Name: "worker", Image: "sidecar:1"})
			},
			wantCRD: []string{"spec.phases[0].template.spec.containers[1]: Duplicate value: "},
			wantGo:  []string{"spec.phases[0].template.spec.containers[1].name: Duplicate value"},
		},
		"duplicate env name": {
			mutate: func(pt *v1alpha1.PhasedTraining) {
				pt.Spec.Phases[1].Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}, {Name: "NCCL_DEBUG", Value: "WARN"}}
			},
			wantCRD: []string{"spec.phases[1].template.spec.containers[0].env[1]: Duplicate value: "},
			wantGo:  []string{"spec.phases[1].template.spec.containers[0].env[1].name: Duplicate value"},
		},
		"extended resource requested without a limit": {
			mutate: func(pt *v1alpha1.PhasedTraining) {
				delete(pt.Spec.Phases[0].Template.Spec.Containers[0].Resources.Limits, "nvidia.com/gpu")
			},
			// The pod template's lists are unbounded: a CEL rule over
			// them would be too expensive. The API server rejects the
			// worker pods; only the controller rejects the spec.
			wantGo: []string{"spec.phases[0].template.spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value"},
		},
		"extended resource request differs from its limit": {
			mutate: func(pt *v1alpha1.PhasedTraining) {
				tpl := &pt.Spec.Phases[2].Template.Spec
				tpl.InitContainers = []corev1.Container{{Name: "stage", Image: "stage:1", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
					Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")},
				}}}
			},
			wantGo: []string{"spec.phases[2].template.spec.initContainers[0].resources.requests[nvidia.com/gpu]: Invalid value"},
		},
		"zero timeout": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases[2].Timeout = &metav1.Duration{} },
			wantCRD: []string{"spec.phases[2].timeout: Invalid value: must be greater than 0 when set"},
			wantGo:  []string{"spec.phases[2].timeout: Invalid value"},
		},
		"negative maxRetries": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases[0].MaxRetries = -1 },
			wantCRD: []string{"spec.phases[0].maxRetries: Invalid value: spec.phases[0].maxRetries in body should be greater than or equal to 0"},
			wantGo:  []string{"spec.phases[0].maxRetries: Invalid value"},
		},
		"no containers": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases[0].Template.Spec.Containers = []corev1.Container{} },
			wantCRD: []string{"spec.phases[0].template.spec.containers: Required value: must have at least one container"},
			wantGo:  []string{"spec.phases[0].template.spec.containers: Required value"},
		},
		"when syntax error": {
			mutate: func(pt *v1alpha1.PhasedTraining) {
				pt.Spec.Phases[2].When = "float(phases.validate.outputs.accuracy) >="
			},
			// CEL has no recursion and cannot parse expr-lang: only the controller rejects it.
			wantGo: []string{"spec.phases[2].when: Invalid value"},
		},
		"when undeclared output": {
			mutate: func(pt *v1alpha1.PhasedTraining) {
				pt.Spec.Phases[2].When = "float(phases.validate.outputs.acc) >= 0.8"
			},
			// CEL has no recursion and cannot parse expr-lang: only the controller rejects it.
			wantGo: []string{"spec.phases[2].when: Invalid value"},
		},
		"topology with neither required nor preferred": {
			mutate:  func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases[0].Topology = &v1alpha1.PhaseTopology{} },
			wantCRD: []string{"spec.phases[0].topology: Invalid value: set exactly one of topology.required and topology.preferred"},
			wantGo:  []string{"spec.phases[0].topology: Invalid value"},
		},
		"topology with both required and preferred": {
			mutate: func(pt *v1alpha1.PhasedTraining) {
				pt.Spec.Phases[0].Topology = &v1alpha1.PhaseTopology{Required: "example.com/rack", Preferred: "example.com/block"}
			},
			wantCRD: []string{"spec.phases[0].topology: Invalid value: set exactly one of topology.required and topology.preferred"},
			wantGo:  []string{"spec.phases[0].topology: Invalid value"},
		},
		"topology level not a label key": {
			mutate: func(pt *v1alpha1.PhasedTraining) {
				pt.Spec.Phases[0].Topology = &v1alpha1.PhaseTopology{Preferred: "example.com/rack/x"}
			},
			wantCRD: []string{`spec.phases[0].topology.preferred: Invalid value: spec.phases[0].topology.preferred in body should match '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$'`},
			wantGo:  []string{"spec.phases[0].topology.preferred: Invalid value"},
		},
		"topology sliceSize does not divide desired": {
			mutate: func(pt *v1alpha1.PhasedTraining) {
				pt.Spec.Phases[0].Topology = &v1alpha1.PhaseTopology{Preferred: "example.com/rack", SliceSize: ptr.To[int32](2)}
				pt.Spec.Phases[0].Gang.Desired = ptr.To[int32](7)
			},
			wantCRD: []string{"spec.phases[0].topology.sliceSize: Invalid value: topology.sliceSize must divide gang.min and gang.desired"},
			wantGo:  []string{"spec.phases[0].topology.sliceSize: Invalid value"},
		},
		"topology sliceLevel without sliceSize": {
			mutate: func(pt *v1alpha1.PhasedTraining) {
				pt.Spec.Phases[0].Topology = &v1alpha1.PhaseTopology{Preferred: "example.com/rack", SliceLevel: "kubernetes.io/hostname"}
			},
			wantCRD: []string{"spec.phases[0].topology.sliceLevel: Invalid value: sliceLevel needs sliceSize"},
			wantGo:  []string{"spec.phases[0].topology.sliceLevel: Invalid value"},
		},
		"topology sameDomainAs not a dependency": {
			mutate: func(pt *v1alpha1.PhasedTraining) {
				pt.Spec.Phases[2].Topology = &v1alpha1.PhaseTopology{Required: "example.com/rack", SameDomainAs: "train"}
			},
			wantCRD: []string{"spec.phases[2].topology.sameDomainAs: Invalid value: topology.sameDomainAs must name a phase this phase dependsOn"},
			wantGo:  []string{"spec.phases[2].topology.sameDomainAs: Invalid value"},
		},
		"when not boolean": {
			mutate: func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases[2].When = "phases.validate.outputs.accuracy" },
			// CEL has no recursion and cannot parse expr-lang: only the controller rejects it.
			wantGo: []string{"spec.phases[2].when: Invalid value"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.wantGo == nil {
				t.Fatal("every case must be rejected by package phases: it checks everything the CRD checks")
			}
			pt := pipeline()
			if tc.mutate != nil {
				tc.mutate(pt)
			}
			obj := toUnstructured(t, pt)
			if tc.edit != nil {
				tc.edit(obj)
			}
			gotCRD := describe(s.create(runtime.DeepCopyJSON(obj)))
			if diff := cmp.Diff(tc.wantCRD, gotCRD); diff != "" {
				t.Errorf("API server errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantGo, local(t, obj)); diff != "" {
				t.Errorf("phasegang validate errors (-want +got):\n%s", diff)
			}
		})
	}
}

// phase returns spec.phases[i] of an unstructured PhasedTraining.
func phase(obj map[string]any, i int) map[string]any {
	return obj["spec"].(map[string]any)["phases"].([]any)[i].(map[string]any)
}

// container returns the first container of phase i's template.
func container(obj map[string]any, i int) map[string]any {
	spec := phase(obj, i)["template"].(map[string]any)["spec"].(map[string]any)
	return spec["containers"].([]any)[0].(map[string]any)
}
