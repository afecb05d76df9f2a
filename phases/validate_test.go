package phases

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func errStrings(b *ptBuilder) []string {
	var out []string
	for _, e := range Validate(b.Obj()) {
		out = append(out, e.Error())
	}
	return out
}

// TestValidate has one case per class of ErrorClasses, asserting the exact
// messages users see.
func TestValidate(t *testing.T) {
	ok := func() *ptBuilder { return linear() }
	tests := map[string]struct {
		pt   *ptBuilder
		want []string
	}{
		"valid":      {pt: ok()},
		"valid loop": {pt: loopPT(3)},
		"phases-empty": {pt: MakePT("p"), want: []string{
			"spec.phases: Required value: must have at least one phase"}},
		"phases-too-many": {pt: func() *ptBuilder {
			b := MakePT("p")
			for i := 0; i < 33; i++ {
				b.Phase("p"+string(rune('a'+i%26))+string(rune('a'+i/26)), 1)
			}
			return b
		}(), want: []string{"spec.phases: Too many: 33: must have at most 32 items"}},
		"name-required": {pt: MakePT("p").Phase("", 1), want: []string{
			"spec.phases[0].name: Required value: every phase needs a name"}},
		"name-syntax": {pt: MakePT("p").Phase("Train_1", 1), want: []string{
			`spec.phases[0].name: Invalid value: "Train_1": must be lowercase letters, digits and '-', start with a letter and end with a letter or digit (e.g. 'train', 'eval-2')`}},
		"name-too-long": {pt: MakePT("p").Phase("a234567890123456789012345678901234", 1), want: []string{
			`spec.phases[0].name: Invalid value: "a234567890123456789012345678901234": must be at most 32 characters`}},
		"name-duplicate": {pt: MakePT("p").Phase("train", 1).Phase("train", 1), want: []string{
			`spec.phases[1].name: Duplicate value: "train"`}},
		"gang-min": {pt: MakePT("p").Phase("train", 0), want: []string{
			"spec.phases[0].gang.min: Invalid value: 0: must be at least 1"}},
		"gang-desired": {pt: MakePT("p").Phase("train", 8).Desired(4), want: []string{
			"spec.phases[0].gang.desired: Invalid value: 4: must be greater than or equal to gang.min (8)"}},
		"template-containers": {pt: MakePT("p").Phase("train", 1).NoContainers(), want: []string{
			"spec.phases[0].template.spec.containers: Required value: must have at least one container"}},
		"max-retries": {pt: MakePT("p").Phase("train", 1).Retries(-1), want: []string{
			"spec.phases[0].maxRetries: Invalid value: -1: must be 0 or more"}},
		"timeout": {pt: MakePT("p").Phase("train", 1).Timeout(-1e9).StartTimeout(0), want: []string{
			`spec.phases[0].timeout: Invalid value: "-1s": must be greater than 0 when set`,
			`spec.phases[0].startTimeout: Invalid value: "0s": must be greater than 0 when set`}},
		"depends-unknown": {pt: MakePT("p").Phase("train", 1).Phase("validate", 1).DependsOn("trian").Phase("test", 1).DependsOn("zzz"), want: []string{
			`spec.phases[1].dependsOn[0]: Invalid value: "trian": unknown phase (did you mean "train"?)`,
			`spec.phases[2].dependsOn[0]: Invalid value: "zzz": unknown phase`}},
		"depends-self": {pt: MakePT("p").Phase("train", 1).DependsOn("train"), want: []string{
			`spec.phases[0].dependsOn[0]: Invalid value: "train": a phase cannot depend on itself`}},
		"depends-duplicate": {pt: MakePT("p").Phase("prep", 1).Phase("train", 1).DependsOn("prep", "prep"), want: []string{
			`spec.phases[1].dependsOn[1]: Duplicate value: "prep"`}},
		"depends-cycle": {pt: MakePT("p").Phase("prep", 1).Phase("train", 1).DependsOn("prep", "validate").Phase("validate", 1).DependsOn("train"), want: []string{
			`spec.phases[2].dependsOn[0]: Invalid value: "train": dependency cycle train → validate → train`}},
		"depends-cycle-3": {pt: MakePT("p").Phase("a", 1).DependsOn("c").Phase("b", 1).DependsOn("a").Phase("c", 1).DependsOn("b"), want: []string{
			`spec.phases[1].dependsOn[0]: Invalid value: "a": dependency cycle a → b → c → a`}},
		"output-identifier": {pt: MakePT("p").Phase("train", 1).Outputs("val-loss"), want: []string{
			`spec.phases[0].outputs[0]: Invalid value: "val-loss": must be an identifier: a letter or '_' followed by letters, digits or '_'`}},
		"output-duplicate": {pt: MakePT("p").Phase("train", 1).Outputs("loss", "loss"), want: []string{
			`spec.phases[0].outputs[1]: Duplicate value: "loss"`}},
		"output-too-long": {pt: MakePT("p").Phase("train", 1).Outputs(strings.Repeat("x", 64)), want: []string{
			`spec.phases[0].outputs[0]: Invalid value: "` + strings.Repeat("x", 64) + `": must be at most 63 characters`}},
		"when-expr unknown phase": {pt: ok().When("phases.trian.state == 'Succeeded'"), want: []string{
			`spec.phases[2].when: Invalid value: "phases.trian.state == 'Succeeded'": unknown name trian: phases has only test, train, validate (1:8)`}},
		"when-expr undeclared output": {pt: ok().When("float(phases.validate.outputs.acc) > 0.9"), want: []string{
			`spec.phases[2].when: Invalid value: "float(phases.validate.outputs.acc) > 0.9": unknown name acc: declares only the outputs accuracy (1:31)`}},
		"when-expr no outputs": {pt: ok().When("phases.train.outputs.loss == ''"), want: []string{
			`spec.phases[2].when: Invalid value: "phases.train.outputs.loss == ''": unknown name loss: declares no outputs (add the key to spec.phases[].outputs) (1:22)`}},
		"when-expr unknown variable": {pt: ok().When("trian == 1"), want: []string{
			`spec.phases[2].when: Invalid value: "trian == 1": unknown name trian (1:1)`}},
		"when-expr not boolean": {pt: ok().When("iteration + 1"), want: []string{
			`spec.phases[2].when: Invalid value: "iteration + 1": expected bool, but got int`}},
		"when-expr syntax": {pt: ok().When("phases.train.state =="), want: []string{
			`spec.phases[2].when: Invalid value: "phases.train.state ==": unexpected token EOF (1:21)`}},
		"policy-expr": {pt: MakePT("p").Phase("train", 4).Policy("succeeded >= worker / 2"), want: []string{
			`spec.phases[0].successPolicy: Invalid value: "succeeded >= worker / 2": unknown name worker (1:14)`}},
		"policy-expr miscased": {pt: MakePT("p").Phase("train", 4).Policy("chief"), want: []string{
			`spec.phases[0].successPolicy: Invalid value: "chief": must be AllWorkers, Chief or a boolean expression (did you mean Chief?)`}},
		"priority-both": {pt: ok().Priority(5, "high"), want: []string{
			"spec.priorityClassName: Forbidden: may not be set together with spec.priority: set one of them"}},
		"iterate-empty": {pt: ok().Iterate(2, ""), want: []string{
			"spec.iterate.phases: Required value: must name at least one phase to repeat"}},
		"iterate-unknown": {pt: ok().Iterate(2, "", "trian"), want: []string{
			`spec.iterate.phases[0]: Invalid value: "trian": unknown phase (did you mean "train"?)`}},
		"iterate-duplicate": {pt: ok().Iterate(2, "", "train", "train"), want: []string{
			`spec.iterate.phases[1]: Duplicate value: "train"`}},
		"iterate-max": {pt: ok().Iterate(0, "", "train"), want: []string{
			"spec.iterate.maxIterations: Invalid value: 0: must be at least 1"}},
		"iterate-open": {pt: ok().Iterate(2, "", "train", "test"), want: []string{
			`spec.iterate.phases: Invalid value: ["train","test"]: phase validate runs after loop phase train and before loop phase test, so it would have to run inside the loop: add it to iterate.phases or remove one of those dependencies`}},
		"until-expr": {pt: ok().Iterate(2, "phases.validate.outputs.accuracy > 0.9", "train", "validate"), want: []string{
			`spec.iterate.until: Invalid value: "phases.validate.outputs.accuracy > 0.9": invalid operation: > (mismatched types string and float64) (1:34)`}},
		"several errors at once": {pt: MakePT("p").Phase("train", 0).Phase("x", 1).DependsOn("nope").When("nope"), want: []string{
			"spec.phases[0].gang.min: Invalid value: 0: must be at least 1",
			`spec.phases[1].dependsOn[0]: Invalid value: "nope": unknown phase`,
			`spec.phases[1].when: Invalid value: "nope": unknown name nope (1:1)`}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, errStrings(tt.pt)); d != "" {
				t.Errorf("Validate (-want +got):\n%s", d)
			}
		})
	}
}

// TestErrorClassesCovered keeps ErrorClasses and the table above in sync.
func TestErrorClassesCovered(t *testing.T) {
	// Every class has a case named after it in TestValidate; this list is
	// checked by name so a new class without a test fails here.
	covered := map[string]bool{}
	for _, c := range []string{"phases-empty", "phases-too-many", "name-required", "name-syntax", "name-too-long",
		"name-duplicate", "gang-min", "gang-desired", "template-containers", "max-retries", "timeout",
		"depends-unknown", "depends-self", "depends-duplicate", "depends-cycle", "output-identifier",
		"output-duplicate", "output-too-long", "when-expr", "policy-expr", "priority-both", "iterate-empty", "iterate-unknown",
		"iterate-duplicate", "iterate-max", "iterate-open", "until-expr"} {
		covered[c] = true
	}
	for _, c := range ErrorClasses {
		if !covered[c] {
			t.Errorf("error class %s has no TestValidate case", c)
		}
	}
}
