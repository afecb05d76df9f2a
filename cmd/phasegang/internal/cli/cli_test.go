package cli

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// run runs the command line in-process from the repository root, so file
// names in the output read as a user at the root would see them.
func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr []string) {
	t.Helper()
	t.Chdir(filepath.Join("..", "..", "..", ".."))
	var out, errOut bytes.Buffer
	code = Main(args, strings.NewReader(stdin), &out, &errOut, "v1.2.3")
	return code, lines(out.String()), lines(errOut.String())
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// queue is a TenantQueue document with the given spec (YAML flow style).
func queue(name, spec string) string {
	return "apiVersion: phasegang.dev/v1alpha1\nkind: TenantQueue\nmetadata: {name: " + name + "}\nspec: {" + spec + "}\n"
}

func TestValidate(t *testing.T) {
	const good = "apiVersion: phasegang.dev/v1alpha1\nkind: PhasedTraining\nmetadata: {name: p}\n" +
		"spec: {phases: [{name: train, gang: {min: 1}, template: {spec: {containers: [{name: w, image: i}]}}}]}\n"
	cases := map[string]struct {
		args       []string
		stdin      string
		wantCode   int
		wantStdout []string
		wantStderr []string
	}{
		"examples are valid": {
			args:     []string{"validate", "examples/early-stopping.yaml", "examples/elastic.yaml", "examples/train-validate-test.yaml"},
			wantCode: 0,
			wantStdout: []string{
				"examples/early-stopping.yaml: ml/gpt-small-early-stop: OK",
				"examples/elastic.yaml: ml/bert-elastic: OK",
				"examples/train-validate-test.yaml: ml/resnet50: OK",
			},
		},
		"a TenantQueue is cluster-scoped: its name alone": {
			args:       []string{"validate", "examples/tenant-queue.yaml"},
			wantCode:   0,
			wantStdout: []string{"examples/tenant-queue.yaml: team-a: OK"},
		},
		"a stream mixing TenantQueues and PhasedTrainings, in its order": {
			args:     []string{"validate", "-"},
			stdin:    queue("team-a", "cohort: research, resources: [{name: nvidia.com/gpu, nominalQuota: 8, lendingLimit: 4}]") + "---\n" + good + "---\n" + queue("team-b", "resources: [{name: cpu, nominalQuota: -1, borrowingLimit: 2}], fairSharing: {weight: 0}, preemption: {withinQueue: Sometimes}"),
			wantCode: 1,
			wantStdout: []string{
				"-: team-a: OK",
				"-: p: OK",
				`-: team-b: spec.resources[0].nominalQuota: Invalid value: "-1": nominalQuota must not be negative`,
				"-: team-b: spec.resources: Forbidden: borrowingLimit and lendingLimit need a cohort to borrow from and lend to",
				`-: team-b: spec.fairSharing.weight: Invalid value: "0": weight must be greater than 0`,
				`-: team-b: spec.preemption.withinQueue: Unsupported value: "Sometimes": supported values: "Never", "LowerPriority", "Any"`,
			},
		},
		"a TenantQueue's decode errors name the field": {
			args:       []string{"validate", "-"},
			stdin:      queue("team-a", "resources: [{name: nvidia.com/gpu, nominalQuota: eight}], preemption: {reclaimGracePeriod: 5min}"),
			wantCode:   1,
			wantStdout: []string{`-: document 1: spec.preemption.reclaimGracePeriod: invalid duration "5min": time: unknown unit "min" in duration "5min" spec.resources[0].nominalQuota: invalid quantity "eight": must be a number with an optional suffix, such as 500m, 4 or 32Gi`},
		},
		"one bad file fails the run; the others are still reported": {
			args:     []string{"validate", "examples/elastic.yaml", "examples/invalid/unknown-dependson.yaml"},
			wantCode: 1,
			wantStdout: []string{
				"examples/elastic.yaml: ml/bert-elastic: OK",
				`examples/invalid/unknown-dependson.yaml: ml/unknown-dependson: spec.phases[1].dependsOn[0]: Invalid value: "trian": unknown phase (did you mean "train"?)`,
			},
		},
		"each error on its own line": {
			args:     []string{"validate", "-"},
			stdin:    strings.Replace(good, "gang: {min: 1}, template", "gang: {min: 0}, dependsOn: [train, test], template", 1),
			wantCode: 1,
			wantStdout: []string{
				"-: p: spec.phases[0].gang.min: Invalid value: 0: must be at least 1",
				`-: p: spec.phases[0].dependsOn[0]: Invalid value: "train": a phase cannot depend on itself`,
				`-: p: spec.phases[0].dependsOn[1]: Invalid value: "test": unknown phase`,
			},
		},
		"standard input, no namespace": {
			args:       []string{"validate", "-"},
			stdin:      good,
			wantCode:   0,
			wantStdout: []string{"-: p: OK"},
		},
		"a decode error names the document; the other documents are checked": {
			args:     []string{"validate", "-"},
			stdin:    "apiVersion: v1\nkind: ConfigMap\n---\n" + good,
			wantCode: 1,
			wantStdout: []string{
				`-: document 1: apiVersion "v1" kind "ConfigMap": want apiVersion "phasegang.dev/v1alpha1" kind "PhasedTraining" or "TenantQueue"`,
				"-: p: OK",
			},
		},
		"multi-line YAML errors are folded onto one line": {
			args:       []string{"validate", "-"},
			stdin:      good + "metadata: {name: q}\n",
			wantCode:   1,
			wantStdout: []string{`-: document 1: yaml: unmarshal errors: line 5: key "metadata" already set in map`},
		},
		"empty file": {
			args:       []string{"validate", "-"},
			stdin:      "# nothing here\n",
			wantCode:   1,
			wantStdout: []string{"-: no PhasedTraining or TenantQueue found"},
		},
		"missing file": {
			args:       []string{"validate", "examples/nope.yaml"},
			wantCode:   1,
			wantStdout: []string{"examples/nope.yaml: open examples/nope.yaml: no such file or directory"},
		},
		"no file": {
			args:       []string{"validate"},
			wantCode:   1,
			wantStderr: []string{"phasegang: requires at least 1 arg(s), only received 0"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.stdin, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
			if diff := cmp.Diff(tc.wantStdout, stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantStderr, stderr); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateInvalidExamples runs every file of examples/invalid and checks
// that the output has a line for that file containing each of the file's
// "# expect: ..." comments. Adding an invalid example is adding a test.
func TestValidateInvalidExamples(t *testing.T) {
	eachInvalidExample(t, func(t *testing.T, name string, _ []byte, expects []string) {
		code, stdout, stderr := run(t, "", "validate", name)
		if code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
		if len(stderr) > 0 {
			t.Errorf("stderr: %q", stderr)
		}
		expectLines(t, "output", stdout, name, expects)
	})
}

// eachInvalidExample runs test on every file of examples/invalid, as a
// subtest named after the file, with the name the CLI (run from the
// repository's root) is given, the file's content and its "# expect:"
// comments. They are read first: run changes the directory.
func eachInvalidExample(t *testing.T, test func(t *testing.T, name string, data []byte, expects []string)) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "examples", "invalid", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid examples: %v", err)
	}
	for _, f := range files {
		name := filepath.ToSlash(filepath.Join("examples", "invalid", filepath.Base(f)))
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			test(t, name, data, expectations(t, f))
		})
	}
}

// expectLines fails t unless each of wants is in some line of lines (the
// command's stdout or stderr, said by what) that is about file name.
func expectLines(t *testing.T, what string, lines []string, name string, wants []string) {
	t.Helper()
	for _, want := range wants {
		if !slices.ContainsFunc(lines, func(line string) bool {
			return strings.HasPrefix(line, name+": ") && strings.Contains(line, want)
		}) {
			t.Errorf("no %s line contains %q; got:\n%s", what, want, strings.Join(lines, "\n"))
		}
	}
}

// expectations returns the "# expect: ..." comments of a file; every invalid
// example must have at least one.
func expectations(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "# expect: "); ok {
			out = append(out, rest)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no '# expect: ' comment", file)
	}
	return out
}

func TestVersion(t *testing.T) {
	code, stdout, stderr := run(t, "", "version")
	want := []string{"phasegang v1.2.3 " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	if code != 0 || len(stderr) > 0 {
		t.Errorf("exit code %d, stderr %q", code, stderr)
	}
	if diff := cmp.Diff(want, stdout); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
}
