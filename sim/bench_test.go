package sim

import "testing"

// BenchmarkSimulatePhillySlice runs the 200-job Philly slice under
// phasegang on 8 nodes: the simulator's whole loop (driver.Advance, the
// ledger deltas, the engine's cycles). The full trace's figures are in
// docs/benchmarks.md; this keeps the per-pipeline cost in view.
func BenchmarkSimulatePhillySlice(b *testing.B) {
	sc := loadTrace(b, "testdata/philly-slice.csv", DefaultTraceOptions(), 8, 8)
	b.ReportAllocs()
	for b.Loop() {
		res, err := Run(sc, Options{Policy: PolicyPhasegang})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Pipelines) != 200 {
			b.Fatalf("%d pipelines, want 200", len(res.Pipelines))
		}
	}
}
