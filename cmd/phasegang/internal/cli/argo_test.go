package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestArgoTemplateMatchesExample: the generated example under examples/argo
// is exactly what the command prints, after its header comment.
func TestArgoTemplateMatchesExample(t *testing.T) {
	code, stdout, stderr := run(t, "", "argo", "template", "-f", "examples/train-validate-test.yaml")
	if code != 0 || len(stderr) > 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	data, err := os.ReadFile(filepath.Join("examples", "argo", "train-validate-test.workflowtemplate.yaml")) // run chdirs to the root
	if err != nil {
		t.Fatal(err)
	}
	want := lines(string(data))
	for len(want) > 0 && strings.HasPrefix(want[0], "#") {
		want = want[1:]
	}
	if d := cmp.Diff(want, stdout); d != "" {
		t.Errorf("examples/argo/train-validate-test.workflowtemplate.yaml is stale (-file +generated):\n%s", d)
	}
}

func TestArgoTemplate(t *testing.T) {
	pt := func(name string) string {
		return "apiVersion: phasegang.dev/v1alpha1\nkind: PhasedTraining\nmetadata: {name: " + name + ", namespace: ml}\n" +
			"spec: {phases: [{name: train, gang: {min: 1}, outputs: [loss], template: {spec: {containers: [{name: w, image: i}]}}}]}\n"
	}

	t.Run("json", func(t *testing.T) {
		code, stdout, stderr := run(t, pt("p"), "argo", "template", "-f", "-", "-o", "json", "--name", "wt", "-n", "team", "--service-account", "sa")
		if code != 0 || len(stderr) > 0 {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		var wft struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
			Spec     struct {
				Entrypoint         string
				ServiceAccountName string
				OnExit             string
				Templates          []struct {
					Name    string
					Outputs struct{ Parameters []struct{ Name string } }
				}
			}
		}
		if err := json.Unmarshal([]byte(strings.Join(stdout, "\n")), &wft); err != nil {
			t.Fatal(err)
		}
		if wft.Kind != "WorkflowTemplate" || wft.Metadata.Name != "wt" || wft.Metadata.Namespace != "team" ||
			wft.Spec.Entrypoint != "main" || wft.Spec.ServiceAccountName != "sa" || len(wft.Spec.Templates) != 3 || wft.Spec.OnExit != "stop-unfinished" {
			t.Errorf("got %+v", wft)
		}
		var outs []string
		for _, p := range wft.Spec.Templates[1].Outputs.Parameters {
			outs = append(outs, p.Name)
		}
		if d := cmp.Diff([]string{"name", "state", "train-loss"}, outs); d != "" {
			t.Errorf("outputs (-want +got):\n%s", d)
		}
	})

	t.Run("one template per PhasedTraining", func(t *testing.T) {
		code, stdout, _ := run(t, pt("a")+"---\n"+pt("b"), "argo", "template", "-f", "-")
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
		var seps, names int
		for _, l := range stdout {
			if l == "---" {
				seps++
			}
			if l == "  name: a" || l == "  name: b" {
				names++
			}
		}
		if seps != 1 || names != 2 {
			t.Errorf("%d separators, %d names:\n%s", seps, names, strings.Join(stdout, "\n"))
		}
		code, _, stderr := run(t, pt("a")+"---\n"+pt("b"), "argo", "template", "-f", "-", "--name", "x")
		if code != 1 || len(stderr) != 1 || !strings.Contains(stderr[0], "--name with 2 PhasedTrainings") {
			t.Errorf("--name with 2: exit %d stderr %q", code, stderr)
		}
	})

	errCases := map[string]struct {
		args       []string
		stdin      string
		wantStderr []string
	}{
		"unknown field: file and field path": {
			args:       []string{"-f", "examples/invalid/unknown-field.yaml"},
			wantStderr: []string{`examples/invalid/unknown-field.yaml: document 1: unknown field "spec.phases[0].gang.minimum"`},
		},
		"invalid spec: file, object and field": {
			args:       []string{"-f", "examples/invalid/unknown-dependson.yaml"},
			wantStderr: []string{`examples/invalid/unknown-dependson.yaml: ml/unknown-dependson: spec.phases[1].dependsOn[0]: Invalid value: "trian": unknown phase (did you mean "train"?)`},
		},
		"no file": {
			args:       []string{},
			wantStderr: []string{`phasegang: required flag(s) "filename" not set`},
		},
		"missing file": {
			args:       []string{"-f", "nope.yaml"},
			wantStderr: []string{"phasegang: open nope.yaml: no such file or directory"},
		},
		"bad output": {
			args:       []string{"-f", "examples/elastic.yaml", "-o", "table"},
			wantStderr: []string{`phasegang: --output "table": want yaml or json`},
		},
		"empty": {
			args:       []string{"-f", "-"},
			stdin:      "# nothing\n",
			wantStderr: []string{"phasegang: -: no PhasedTraining found"},
		},
		"template variable in the object": {
			args:       []string{"-f", "-"},
			stdin:      strings.Replace(pt("p"), "image: i", `image: "{{x}}"`, 1),
			wantStderr: []string{`phasegang: -: ml/p: spec.phases[0].template.spec.containers[0].image: Invalid value: "{{x}}": contains "{{", which Argo would substitute as a template variable`},
		},
	}
	for name, c := range errCases {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := run(t, c.stdin, append([]string{"argo", "template"}, c.args...)...)
			if code != 1 || len(stdout) > 0 {
				t.Errorf("exit %d, stdout %q", code, stdout)
			}
			if d := cmp.Diff(c.wantStderr, stderr); d != "" {
				t.Errorf("stderr (-want +got):\n%s", d)
			}
		})
	}
}

// TestArgoTemplateRefusesInvalidExamples: every examples/invalid file is
// refused, with nothing on stdout and each expected problem on stderr.
func TestArgoTemplateRefusesInvalidExamples(t *testing.T) {
	eachInvalidExample(t, func(t *testing.T, name string, data []byte, expects []string) {
		code, stdout, stderr := run(t, "", "argo", "template", "-f", name)
		if code != 1 || len(stdout) > 0 {
			t.Errorf("exit %d, stdout %d lines", code, len(stdout))
		}
		if strings.Contains(string(data), "\nkind: TenantQueue\n") {
			// argo template reads PhasedTrainings only: it refuses the
			// queue as another kind; its problems are validate's.
			return
		}
		expectLines(t, "stderr", stderr, name, expects)
	})
}
