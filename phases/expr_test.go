package phases

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// exprPT has a dashed phase name and outputs, for expression tests.
func exprPT() *wrappers.PT {
	return wrappers.MakePT("p").
		Phase("train-big", 8).Outputs("loss").
		Phase("validate", 2).DependsOn("train-big").Outputs("accuracy", "f1").
		Phase("test", 1).DependsOn("validate")
}

func TestGraphExpressions(t *testing.T) {
	p := wrappers.Compiled(t, Compile, exprPT().Obj())
	st := wrappers.Status(
		wrappers.MakePS("train-big", Succeeded).Workers(v1alpha1.WorkerCounts{Granted: 8, Succeeded: 8, Failed: 0}).Outputs("loss", "0.25"),
		wrappers.MakePS("validate", Succeeded).Workers(v1alpha1.WorkerCounts{Granted: 2, Succeeded: 2, Failed: 0}).Outputs("accuracy", "0.93"),
	)
	tests := map[string]struct {
		expr, wantErr string
		want          bool
	}{
		"float conversion":           {expr: "float(phases.validate.outputs.accuracy) >= 0.9", want: true},
		"bracket access, dashed":     {expr: `phases["train-big"].state == "Succeeded"`, want: true},
		"bracket access, outputs":    {expr: `float(phases["train-big"].outputs["loss"]) < 0.5`, want: true},
		"$env access":                {expr: `float($env.phases.validate.outputs.accuracy) > 0.9`, want: true},
		"counts":                     {expr: `phases.validate.workers == 2 && phases["train-big"].succeeded == 8 && phases.validate.failed == 0`, want: true},
		"pending phase":              {expr: `phases.test.state == "Pending" && phases.test.attempt == 0`, want: true},
		"int division is float":      {expr: `7 / 2 == 3.5`, want: true},
		"integer division via int()": {expr: `int(7 / 2) == 3`, want: true},
		"missing output is an error, not a zero": {
			expr:    `float(phases.validate.outputs.f1) == 0`,
			wantErr: "phases.validate.outputs.f1 has no value: phase validate (Succeeded) did not report it (1:31)"},
		"missing output compared as a string is an error too": {
			expr:    `phases.validate.outputs.f1 == ""`,
			wantErr: "phases.validate.outputs.f1 has no value: phase validate (Succeeded) did not report it (1:25)"},
		"short-circuit avoids the missing output": {
			expr: `phases.validate.state == "Skipped" || phases.validate.outputs.accuracy != ""`, want: true},
		"non-numeric output": {
			expr:    `float(phases["train-big"].outputs.loss) > 0 && float(phases.validate.state) > 0`,
			wantErr: "invalid operation: float(Succeeded) (1:48)"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			prog, err := p.env.compileExpr(tt.expr, p.env.graph, "")
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			got, err := p.env.run(prog, p.env.graphEnv(0, p.views(st, 0)))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("got %v, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestPolicyExpressions(t *testing.T) {
	p := wrappers.Compiled(t, Compile, wrappers.MakePT("p").Phase("eval", 4).Outputs("loss").Obj())
	c := p.Phase("eval")
	tests := map[string]struct {
		expr                                string
		workers, succeeded, failed, running int32
		outputs                             map[string]string
		want                                bool
	}{
		"half of 4":                 {expr: "succeeded >= workers / 2", workers: 4, succeeded: 2, want: true},
		"2 of 5 is below 2.5":       {expr: "succeeded >= workers / 2", workers: 5, succeeded: 2, want: false},
		"integer half of 5 via int": {expr: "succeeded >= int(workers / 2)", workers: 5, succeeded: 2, want: true},
		"failed and running":        {expr: "failed == 0 && running == 1", workers: 4, succeeded: 3, running: 1, want: true},
		"outputs":                   {expr: "float(outputs.loss) < 0.1", workers: 4, outputs: map[string]string{"loss": "0.05"}, want: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			prog, err := p.env.compileExpr(tt.expr, p.env.policy[c.Index], c.Name)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			got, err := p.env.run(prog, p.env.policyEnv(c.Index, c.Name, tt.workers, tt.succeeded, tt.failed, tt.running, tt.outputs))
			if err != nil || got != tt.want {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// fuzzPipeline is the spec FuzzCompileExpr compiles expressions against.
func fuzzPipeline(tb testing.TB) *Pipeline {
	return wrappers.Compiled(tb, Compile, exprPT().Iterate(3, "", "train-big", "validate").Obj())
}

// FuzzCompileExpr feeds arbitrary strings to the expression compile path
// (as when/until and as a success policy) and evaluates what compiles: it
// must never panic.
func FuzzCompileExpr(f *testing.F) {
	for _, s := range []string{
		`float(phases.validate.outputs.accuracy) >= 0.9`,
		`phases["train-big"].state == "Succeeded"`,
		`succeeded >= workers / 2`,
		`iteration < 3 && phases.validate.failed == 0`,
		`float(outputs.loss) < 0.1`,
		`$output("validate", "accuracy") == ""`,
		`phases.trian.state`,
		`len(phases) > 0`,
	} {
		f.Add(s)
	}
	// Seed from examples/*.yaml when they exist: every when/until/
	// successPolicy value found by a line scan.
	files, _ := filepath.Glob(filepath.Join("..", "examples", "*.yaml"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			for _, k := range []string{"when:", "until:", "successPolicy:"} {
				if v, ok := strings.CutPrefix(line, k); ok {
					f.Add(strings.Trim(strings.TrimSpace(v), `"'`))
				}
			}
		}
	}
	p := fuzzPipeline(f)
	st := wrappers.Status(wrappers.MakePS("train-big", Succeeded).Outputs("loss", "1"), wrappers.MakePS("validate", Running))
	f.Fuzz(func(t *testing.T, src string) {
		if prog, err := p.env.compileExpr(src, p.env.graph, ""); err == nil {
			_, _ = p.env.run(prog, p.env.graphEnv(0, p.views(st, 0)))
		}
		c := p.Phase("validate")
		if prog, err := p.env.compileExpr(src, p.env.policy[c.Index], c.Name); err == nil {
			_, _ = p.env.run(prog, p.env.policyEnv(c.Index, c.Name, 2, 1, 0, 1, map[string]string{"accuracy": "x"}))
		}
		// And through Compile, as a user's spec.
		pt := exprPT().When(src).Obj()
		pt.Spec.Phases[1].SuccessPolicy = src
		_ = Validate(pt)
	})
}
