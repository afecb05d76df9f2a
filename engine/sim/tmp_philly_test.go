package sim

import (
	"os"
	"testing"
	"time"
	"github.com/phasegang/phasegang/engine"
)

func TestTmpPhilly(t *testing.T) {
	f, _ := os.Open("/work/shared/traces/philly.csv")
	jobs, err := ReadTrace(f)
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultTraceOptions()
	o.Limit = 0
	jobs = FilterTrace(jobs, o)
	sc := TraceScenario("philly", jobs, o, 64, 8)
	start := time.Now()
	cfg := engine.DefaultConfig()
	
	r, err := Run(sc, Options{Policy: PolicyPhasegang, Clock: time.Now, Engine: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wall %v engine %v cycles %d placements %d", time.Since(start), r.EngineWall, r.Cycles, r.Placements)
	WriteTable(os.Stdout, []*Result{r})
}
