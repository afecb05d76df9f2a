package v1alpha1

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

const header = "apiVersion: phasegang.dev/v1alpha1\nkind: PhasedTraining\n"

// doc is a minimal PhasedTraining document named name.
func doc(name string) string {
	return header + `metadata:
  name: ` + name + `
  namespace: ml
spec:
  phases:
  - name: train
    gang: {min: 2}
    template:
      spec:
        containers: [{name: worker, image: train:1}]
`
}

func TestDecode(t *testing.T) {
	cases := map[string]struct {
		in        string
		wantNames []string
		// wantErr lists substrings the error must contain; empty means
		// no error.
		wantErr []string
	}{
		"one document": {
			in:        doc("a"),
			wantNames: []string{"a"},
		},
		"several documents, comments and empty documents": {
			in:        "# leading comment\n---\n" + doc("a") + "---\n---\n# only a comment\n---\n" + doc("b"),
			wantNames: []string{"a", "b"},
		},
		"JSON": {
			in:        `{"apiVersion":"phasegang.dev/v1alpha1","kind":"PhasedTraining","metadata":{"name":"j"},"spec":{"phases":[{"name":"t","gang":{"min":1},"template":{}}]}}`,
			wantNames: []string{"j"},
		},
		"unknown field names its path": {
			in:      strings.Replace(doc("a"), "gang: {min: 2}", "gang: {min: 2, minimum: 3}", 1),
			wantErr: []string{"document 1", `unknown field "spec.phases[0].gang.minimum"`},
		},
		"field names are case-sensitive, as in the API server": {
			in:      strings.Replace(doc("a"), "spec:", "Spec:", 1),
			wantErr: []string{"document 1", `unknown field "Spec"`},
		},
		"duplicate field": {
			in:      strings.Replace(doc("a"), "namespace: ml", "namespace: ml\n  namespace: prod", 1),
			wantErr: []string{"document 1", `"namespace"`},
		},
		"other kind names the document": {
			in:        doc("a") + "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n---\n" + doc("b"),
			wantNames: []string{"a", "b"},
			wantErr:   []string{"document 2", `kind "Deployment"`},
		},
		"other version": {
			in:      strings.Replace(doc("a"), "v1alpha1", "v1", 1),
			wantErr: []string{"document 1", `apiVersion "phasegang.dev/v1"`},
		},
		"missing kind": {
			in:      "apiVersion: phasegang.dev/v1alpha1\nmetadata: {name: x}\n",
			wantErr: []string{"document 1", `kind ""`},
		},
		"not an object": {
			in:      "- a\n- b\n",
			wantErr: []string{"document 1", "not an object"},
		},
		"YAML syntax error": {
			in:      header + "metadata: {name: [\n",
			wantErr: []string{"document 1"},
		},
		"wrong type names the path with indexes and JSON's terms": {
			in:      strings.Replace(doc("a"), "min: 2", `min: "two"`, 1),
			wantErr: []string{`document 1: spec.phases[0].gang.min: invalid value "two": must be a 32-bit integer`},
		},
		"bad duration names its path": {
			in:      strings.Replace(doc("a"), "gang: {min: 2}", "gang: {min: 2}\n    startTimeout: 5min", 1),
			wantErr: []string{`document 1: spec.phases[0].startTimeout: invalid duration "5min": time: unknown unit "min" in duration "5min"`},
		},
		"bad quantity names its path": {
			in:      strings.Replace(doc("a"), "image: train:1}", "image: train:1, resources: {limits: {nvidia.com/gpu: abc}}}", 1),
			wantErr: []string{`document 1: spec.phases[0].template.spec.containers[0].resources.limits[nvidia.com/gpu]: invalid quantity "abc": must be a number with an optional suffix, such as 500m, 4 or 32Gi`},
		},
		"a quantity Go reads as 0 but the CRD's pattern rejects": {
			in:      strings.Replace(doc("a"), "image: train:1}", "image: train:1, resources: {requests: {cpu: \"-\"}}}", 1),
			wantErr: []string{`document 1: spec.phases[0].template.spec.containers[0].resources.requests[cpu]: invalid quantity "-": must be a number with an optional suffix, such as 500m, 4 or 32Gi`},
		},
		"every bad value at once, with the strict errors": {
			in: strings.Replace(doc("a"), "gang: {min: 2}", "gang: {min: 2, max: 3}\n    timeout: 1d\n    startTimeout: \"0.5\"", 1) +
				"  - name: test\n    gang: {min: 1.5}\n    template: {spec: {containers: [{name: w, image: i}]}}\n",
			wantErr: []string{
				`unknown field "spec.phases[0].gang.max"`,
				`spec.phases[0].startTimeout: invalid duration "0.5": time: missing unit in duration "0.5"`,
				`spec.phases[0].timeout: invalid duration "1d": time: unknown unit "d" in duration "1d"`,
				`spec.phases[1].gang.min: invalid value 1.5: must be a 32-bit integer`,
			},
		},
		"required fields left out name their paths": {
			in: strings.Replace(doc("a"), "    gang: {min: 2}\n", "", 1) + "  - name: null\n    gang: {}\n    template: {spec: {containers: [{image: i, ports: [{}]}]}}\n",
			wantErr: []string{
				"spec.phases[0].gang: Required value",
				"spec.phases[1].gang.min: Required value",
				"spec.phases[1].name: Required value",
				"spec.phases[1].template.spec.containers[0].name: Required value",
				"spec.phases[1].template.spec.containers[0].ports[0].containerPort: Required value",
			},
		},
		"a duration longer than the CRD's maxLength": {
			in:      strings.Replace(doc("a"), "gang: {min: 2}", "gang: {min: 2}\n    timeout: "+strings.Repeat("0", 64)+"1s", 1),
			wantErr: []string{"document 1: spec.phases[0].timeout: Too long: may not be more than 64 characters"},
		},
		"no spec": {
			in:      header + "metadata: {name: x}\n",
			wantErr: []string{"document 1: spec: Required value"},
		},
		"status is not checked for required fields: the API server ignores it on create": {
			in:        doc("a") + "status:\n  phases: [{iteration: 1}]\n  conditions: [{type: Queued}]\n",
			wantNames: []string{"a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Decode([]byte(tc.in))
			var names []string
			for _, pt := range got {
				names = append(names, pt.Name)
			}
			if diff := cmp.Diff(tc.wantNames, names); diff != "" {
				t.Errorf("decoded names (-want +got):\n%s", diff)
			}
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one containing %q", tc.wantErr)
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

func TestSetDefaults(t *testing.T) {
	in := PhasedTrainingSpec{Phases: []Phase{
		{Name: "a", Gang: Gang{Min: 2}},
		{Name: "b", Gang: Gang{Min: 2, Desired: ptr.To[int32](8)}, SuccessPolicy: SuccessPolicyChief},
	}}
	want := PhasedTrainingSpec{Phases: []Phase{
		{Name: "a", Gang: Gang{Min: 2, Desired: ptr.To[int32](2)}, SuccessPolicy: SuccessPolicyAllWorkers},
		{Name: "b", Gang: Gang{Min: 2, Desired: ptr.To[int32](8)}, SuccessPolicy: SuccessPolicyChief},
	}}
	pt := &PhasedTraining{Spec: in}
	SetDefaults(pt)
	if diff := cmp.Diff(want, pt.Spec); diff != "" {
		t.Errorf("SetDefaults (-want +got):\n%s", diff)
	}
	SetDefaults(pt)
	if diff := cmp.Diff(want, pt.Spec); diff != "" {
		t.Errorf("SetDefaults is not idempotent (-want +got):\n%s", diff)
	}
}

// checkedByValue lists the fields the CRD requires that Decode cannot
// require by presence: a nil list or pointer, or an omitempty string, is
// left out of the JSON a Go client sends, so the API server rejects the
// object whether it came from a file or not. phases.Validate checks each of
// them by value (test/crd's generated corpus proves it). The three container
// lists share the container paths.
var checkedByValue = map[string]bool{
	".spec.phases":                            true,
	".spec.iterate.phases":                    true,
	".spec.phases[].template.spec.containers": true,
	".spec.phases[].template.spec.containers[].restartPolicyRules[].action":                                               true,
	".spec.phases[].template.spec.containers[].restartPolicyRules[].exitCodes.operator":                                   true,
	".spec.phases[].template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms": true,
	".spec.phases[].template.spec.evictionResponders[].priority":                                                          true,
	".spec.phases[].template.spec.volumes[].cephfs.monitors":                                                              true,
	".spec.phases[].template.spec.volumes[].rbd.monitors":                                                                 true,
	".spec.phases[].template.spec.volumes[].scaleIO.secretRef":                                                            true,
	".spec.phases[].template.spec.volumes[].projected.sources[].podCertificate.keyType":                                   true,
	".spec.phases[].template.spec.volumes[].projected.sources[].podCertificate.signerName":                                true,
}

// TestRequiredFieldsMatchCRD checks Decode's rule for required fields
// (requiredField) against the generated CRD, so that a new field, a changed
// marker or a k8s.io/api upgrade cannot make them disagree: Decode must not
// require a field the API server does not (it would refuse valid files),
// and every field the API server requires is required by Decode or listed
// in checkedByValue.
func TestRequiredFieldsMatchCRD(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "phasegang.dev_phasedtrainings.yaml"))
	if err != nil {
		t.Fatalf("read CRD (run `make manifests`): %v", err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string
				Schema struct {
					OpenAPIV3Schema schemaNode `json:"openAPIV3Schema"`
				}
			}
		}
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("want one version, got %d", len(crd.Spec.Versions))
	}
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	spec, ok := root.Properties["spec"]
	if !ok || !slices.Contains(root.Required, "spec") || !jsonFields(reflect.TypeFor[PhasedTraining]())["spec"].required {
		t.Fatal("spec must be required by both")
	}
	checked := 0
	var walk func(path string, s *schemaNode, typ reflect.Type)
	walk = func(path string, s *schemaNode, typ reflect.Type) {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		switch {
		case s.Items != nil && typ.Kind() == reflect.Slice:
			walk(path+"[]", s.Items, typ.Elem())
			return
		case s.AdditionalProperties != nil && typ.Kind() == reflect.Map:
			walk(path+"{}", s.AdditionalProperties, typ.Elem())
			return
		case typ.Kind() != reflect.Struct || len(s.Properties) == 0 || decodesItself(typ):
			return
		}
		fields := jsonFields(typ)
		for name, child := range s.Properties {
			f, ok := fields[name]
			if !ok {
				t.Errorf("%s.%s: in the CRD but not in %s", path, name, typ)
				continue
			}
			p := path + "." + name
			crdRequired := slices.Contains(s.Required, name)
			generic := strings.NewReplacer(".initContainers[]", ".containers[]", ".ephemeralContainers[]", ".containers[]").Replace(p)
			switch {
			case f.required && !crdRequired:
				t.Errorf("%s: Decode requires it, the CRD does not", p)
			case crdRequired && !f.required && !checkedByValue[generic]:
				t.Errorf("%s: the CRD requires it, Decode does not: require it, or check it by value in phases.Validate and list it in checkedByValue", p)
			case crdRequired:
				checked++
			}
			walk(p, &child, f.typ)
		}
	}
	walk(".spec", &spec, reflect.TypeFor[PhasedTrainingSpec]())
	t.Logf("%d required fields checked", checked)
}

// schemaNode is the part of an OpenAPI schema TestRequiredFieldsMatchCRD reads.
type schemaNode struct {
	Properties           map[string]schemaNode `json:"properties"`
	Items                *schemaNode           `json:"items"`
	AdditionalProperties *schemaNode           `json:"additionalProperties"`
	Required             []string              `json:"required"`
}
