package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phasegang/phasegang/sim"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func loadScenario(t *testing.T, path string) *sim.Scenario {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := sim.LoadScenario(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return sc
}

func loadTrace(t testing.TB, path string, o sim.TraceOptions, nodes, gpus int) *sim.Scenario {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	jobs, err := sim.ReadTrace(f)
	if err != nil {
		t.Fatal(err)
	}
	return sim.TraceScenario(filepath.Base(path), sim.FilterTrace(jobs, o), o, nodes, gpus)
}

func run(t *testing.T, sc *sim.Scenario, p sim.Policy) *sim.Result {
	t.Helper()
	r, err := sim.Run(sc, sim.Options{Policy: p, Record: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Golden outputs: the comparison table and per-pipeline CSV of small
// scenarios. Run with -update to rewrite them after a deliberate change.
func TestGolden(t *testing.T) {
	cases := map[string]func(t *testing.T) *sim.Scenario{
		"seed-deadlock": func(t *testing.T) *sim.Scenario { return loadScenario(t, "../../examples/simulate/seed-deadlock.yaml") },
		"mixed":         func(t *testing.T) *sim.Scenario { return loadScenario(t, "../testdata/mixed.yaml") },
		"tiresias-60job": func(t *testing.T) *sim.Scenario {
			return loadTrace(t, "../testdata/tiresias-60job.csv", sim.DefaultTraceOptions(), 8, 4)
		},
	}
	for name, load := range cases {
		t.Run(name, func(t *testing.T) {
			sc := load(t)
			var results []*sim.Result
			var out bytes.Buffer
			for _, p := range sim.Policies {
				r := run(t, sc, p)
				results = append(results, r)
			}
			if err := WriteTable(&out, results); err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				if err := WriteUnfinished(&out, r); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range results {
				if err := WriteCSV(&out, r); err != nil {
					t.Fatal(err)
				}
			}
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), out.String()); diff != "" {
				t.Errorf("output differs from %s (-want +got):\n%s", golden, diff)
			}
		})
	}
}
