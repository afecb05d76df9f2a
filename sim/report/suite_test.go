package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phasegang/phasegang/sim"
)

// testdataWorkload is a suite workload read from a scenario file, named
// name.
func testdataWorkload(name, path string) sim.SuiteWorkload {
	return sim.SuiteWorkload{Name: name, Shape: "test", Load: func() (*sim.Scenario, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		sc, err := sim.LoadScenario(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		sc.Name = name
		return sc, nil
	}}
}

// The suite on two tiny workloads: one where every gang policy reaches LB
// (per-pod deadlocks and does not count), one where phasegang's elastic
// start loses on average JCT. The table is printed as is, and the error
// names the failing workload and metric only.
func TestSuiteTableAndVerdict(t *testing.T) {
	rows, err := sim.RunSuite([]sim.SuiteWorkload{
		testdataWorkload("one-node", "../testdata/seed-one-node.yaml"),
		testdataWorkload("tiny-loss", "../testdata/suite-tiny-loss.yaml"),
	})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	err = WriteSuite(&b, rows)
	want := `policy suite: 2 workloads; phasegang ÷ the best baseline per metric; verdict: the targets of docs/simulator.md#policy-suite
workload   pipelines  GPUs  makespan  LB     makespan/LB  JCT avg/LB  makespan ÷ best    JCT avg ÷ best     JCT p99 ÷ best     verdict
one-node   12         8     8h00m     8h00m  1.000        6.500       1.000 (whole-job)  1.000 (whole-job)  1.000 (whole-job)  ok
tiny-loss  3          4     2h00m     2h00m  1.000        1.666       1.000 (whole-job)  1.250 (whole-job)  1.000 (whole-job)  FAIL: dominated by whole-job (JCT avg +25.0%)
one-node: [per-pod] left pipelines deadlocked or unfinished and do not count as baselines
`
	if got := b.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	if err == nil || err.Error() != "policy suite: 1 of 2 workloads fail: tiny-loss (dominated by whole-job (JCT avg +25.0%))" {
		t.Errorf("error %v, want the failing workload and metric", err)
	}
	if r := rows[1]; len(r.Failures) != 1 || r.Ratio[1] < 1.2 || r.Best[1] != sim.PolicyWholeJob {
		t.Errorf("tiny-loss row %+v", r)
	}
	// By hand: each of tiny-loss's three pipelines is one 1h phase, so no
	// schedule's average JCT is below 1h; phasegang's is (1h + 2h + 2h) / 3.
	if lb := rows[1].Results[0].Metrics.JCTAvgLowerBound; lb != 3600 {
		t.Errorf("tiny-loss JCT avg LB %vs, want 3600s", lb)
	}

	// Alone, the passing workload passes.
	if err := WriteSuite(&b, rows[:1]); err != nil {
		t.Errorf("one-node alone: %v", err)
	}
}

// Every suite workload loads and can run, and on each LB is at most every
// policy's makespan, and the JCT bound at most every policy's average JCT.
// It also holds the suite's figures (checkSuiteGolden) and its verdict
// (checkSuiteVerdict), with linear and with sub-linear scaling.
func TestSuiteWorkloadsLoad(t *testing.T) {
	seed, err := os.ReadFile("../../examples/simulate/seed-deadlock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ws := sim.SuiteWorkloads(seed)
	if len(ws) < 10 {
		t.Fatalf("%d suite workloads, want at least 10", len(ws))
	}
	for _, w := range ws {
		sc, err := w.Load()
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		if err := sim.CheckRunnable(sc); err != nil {
			t.Errorf("%s: %v", w.Name, err)
		}
	}
	if testing.Short() {
		return
	}
	rows, err := sim.RunSuite(ws)
	if err != nil {
		t.Fatal(err)
	}
	checkSuiteGolden(t, rows)
	doc, err := os.ReadFile("../../docs/simulator.md")
	if err != nil {
		t.Fatal(err)
	}
	checkSuiteVerdict(t, "linear scaling", rows, suiteKnownFailures, string(doc))
	scaled, err := sim.RunSuite(sim.WithScaling(ws, &sim.Scaling{EfficiencyPerDoubling: 0.9}))
	if err != nil {
		t.Fatal(err)
	}
	checkSuiteVerdict(t, "0.9 efficiency per doubling", scaled, suiteKnownFailuresSubLinear, string(doc))
	for _, row := range rows {
		for _, r := range row.Results {
			m := r.Metrics
			if m.Finished+m.Failed < m.Pipelines {
				continue // deadlocked or unfinished: no makespan to bound
			}
			if m.LowerBound > m.Makespan+1e-6 {
				t.Errorf("%s, %s: LB %s above the makespan %s", row.Workload.Name, r.Policy, human(m.LowerBound), human(m.Makespan))
			}
			if m.LowerBound <= 0 {
				t.Errorf("%s: LB is %v", row.Workload.Name, m.LowerBound)
			}
			if m.JCTAvgLowerBound > m.JCTAvg+1e-6 || m.JCTAvgLowerBound <= 0 {
				t.Errorf("%s, %s: JCT avg LB %s, average JCT %s", row.Workload.Name, r.Policy, human(m.JCTAvgLowerBound), human(m.JCTAvg))
			}
		}
	}
}

// The suite's verdict. `make policy` exits 1 while any workload fails,
// so CI cannot run it as a gate yet; this test is the gate instead: the
// workloads on which phasegang misses a target (sim/suite.go, judge)
// must be exactly these, each with the section of docs/simulator.md that says why. A change that makes another workload
// fail, or one of these pass, fails the test, so the list is edited on
// purpose rather than regenerated with the golden file.
var (
	suiteKnownFailures = map[string]string{
		"philly-day51-teams": "Tenant queues from the traces' teams (2026-12-07)",
		"philly-day28-teams": "Tenant queues from the traces' teams (2026-12-07)",
	}
	suiteKnownFailuresSubLinear = map[string]string{
		"seed":               "Under sub-linear scaling",
		"philly-day51-teams": "Tenant queues from the traces' teams (2026-12-07)",
		"philly-day28-teams": "Tenant queues from the traces' teams (2026-12-07)",
	}
)

// checkSuiteVerdict checks that the workloads that fail are exactly the
// known ones, and that doc (docs/simulator.md) has the section each
// points to.
func checkSuiteVerdict(t *testing.T, model string, rows []sim.SuiteRow, known map[string]string, doc string) {
	t.Helper()
	for _, row := range rows {
		name := row.Workload.Name
		section, isKnown := known[name]
		switch {
		case len(row.Failures) > 0 && !isKnown:
			t.Errorf("%s: phasegang now fails %s: %s", model, name, strings.Join(row.Failures, "; "))
		case len(row.Failures) == 0 && isKnown:
			t.Errorf("%s: %s passes now: take it off the known failures (and update docs/simulator.md)", model, name)
		case isKnown && !strings.Contains(doc, "\n### "+section):
			t.Errorf("%s: known failure %s points to a section docs/simulator.md does not have: %q", model, name, section)
		}
	}
}

// checkSuiteGolden holds the suite's figures to testdata/suite.golden
// (rewritten with -update): the table as `phasegang simulate --suite`
// prints it, then every policy's absolute figures, so a change of policy
// shows what it moves, baselines included (they share the engine). The
// suite's output blocks in docs/simulator.md and docs/benchmarks.md must
// be that table too.
func checkSuiteGolden(t *testing.T, rows []sim.SuiteRow) {
	t.Helper()
	table := suiteOutput(rows)
	var b strings.Builder
	b.WriteString(table)
	b.WriteString("\nabsolute figures (makespan, JCT avg, JCT p99, seconds):\n")
	for _, row := range rows {
		for _, r := range row.Results {
			m := r.Metrics
			fmt.Fprintf(&b, "%s %s %.0f %.0f %.0f\n", row.Workload.Name, r.Policy, m.Makespan, m.JCTAvg, m.JCTP99)
		}
	}
	golden := filepath.Join("testdata", "suite.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("suite differs from %s (-want +got):\n%s", golden, diff)
	}
	for _, doc := range []string{"../../docs/simulator.md", "../../docs/benchmarks.md"} {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(text), table) {
			t.Errorf("%s does not show the suite's output as it is now:\n%s", doc, table)
		}
	}
}

// suiteOutput is what `phasegang simulate --suite` prints: the table,
// then the error line (on stderr) when a workload fails.
func suiteOutput(rows []sim.SuiteRow) string {
	var b strings.Builder
	if err := WriteSuite(&b, rows); err != nil {
		b.WriteString("phasegang: " + err.Error() + "\n")
	}
	return b.String()
}
