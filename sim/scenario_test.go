package sim

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// scenarioYAML is a valid one-node scenario whose workload entries are the
// given YAML fragments (each ends in a newline), in order.
func scenarioYAML(entries ...string) string {
	var b strings.Builder
	b.WriteString("cluster:\n  nodePools:\n  - {name: n, count: 1, allocatable: {cpu: \"8\", pods: \"110\"}}\nworkload:\n")
	for _, e := range entries {
		b.WriteString(e)
	}
	return b.String()
}

// entry is one workload entry named name with fields prepended (e.g.
// "arrival: -1m").
func entry(name string, fields ...string) string {
	var b strings.Builder
	b.WriteString("- training:\n")
	b.WriteString("    metadata: {name: " + name + "}\n")
	b.WriteString("    spec: {phases: [{name: train, gang: {min: 1}, template: {spec: {containers: [{name: w, image: i, resources: {requests: {cpu: \"1\"}}}]}}}]}\n")
	b.WriteString("  runtimes: {train: 1h}\n")
	for _, f := range fields {
		b.WriteString("  " + f + "\n")
	}
	return b.String()
}

func TestScenarioValidate(t *testing.T) {
	cases := map[string]struct {
		in   string
		want []string // the error's lines; nil means valid
	}{
		"valid": {
			in: scenarioYAML(entry("a", "count: 3", "arrival: 0s", "interval: 10m"), entry("b")),
		},
		"negative arrival": {
			in:   scenarioYAML(entry("a"), entry("b"), entry("c"), entry("d", "arrival: -1m")),
			want: []string{"workload[3].arrival: must not be negative"},
		},
		"negative interval": {
			in:   scenarioYAML(entry("a", "count: 2", "interval: -30s")),
			want: []string{"workload[0].interval: must not be negative"},
		},
		"negative count": {
			in:   scenarioYAML(entry("a", "count: -2")),
			want: []string{"workload[0].count: must not be negative"},
		},
		"every problem at once, with the training's": {
			in: scenarioYAML(entry("a"), strings.Replace(entry("b", "count: -1", "arrival: -1h", "interval: -1s"), "min: 1", "min: 0", 1)),
			want: []string{
				"workload[1].arrival: must not be negative",
				"workload[1].interval: must not be negative",
				"workload[1].count: must not be negative",
				"workload[1].training.spec.phases[0].gang.min: Invalid value: 0: must be at least 1",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := LoadScenario([]byte(tc.in))
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("LoadScenario errors (-want +got):\n%s", diff)
			}
		})
	}
}
