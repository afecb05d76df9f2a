package v1alpha1

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
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
		"wrong type": {
			in:      strings.Replace(doc("a"), "min: 2", `min: "two"`, 1),
			wantErr: []string{"document 1", "spec.phases.gang.min"},
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
