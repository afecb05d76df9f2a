package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/phasegang/phasegang/examples"
	"github.com/phasegang/phasegang/sim"
	"github.com/phasegang/phasegang/sim/report"
)

// runSuite is `phasegang simulate --suite`: the policy suite's workloads
// (or those --suite-workloads names), every policy on each, one row per
// workload; an error (exit code 1) names each workload and metric on which
// phasegang misses one of the suite's targets (sim/suite.go, judge).
func runSuite(stdout, stderr io.Writer, f *simulateFlags, args []string) error {
	if len(args) > 0 || f.trace != "" || f.compare {
		return fmt.Errorf("--suite runs its own workloads under every policy: give no scenario, --trace or --compare")
	}
	ws := sim.SuiteWorkloads(examples.SeedScenario)
	if f.suiteWorkloads != "" {
		var picked []sim.SuiteWorkload
		for _, name := range strings.Split(f.suiteWorkloads, ",") {
			name = strings.TrimSpace(name)
			i := slices.IndexFunc(ws, func(w sim.SuiteWorkload) bool { return w.Name == name })
			if i < 0 {
				var names []string
				for _, w := range ws {
					names = append(names, w.Name)
				}
				return fmt.Errorf("--suite-workloads: no workload %q (want some of %s)", name, strings.Join(names, ", "))
			}
			picked = append(picked, ws[i])
		}
		ws = picked
	}
	scaling, err := scalingFlag(f, nil)
	if err != nil {
		return err
	}
	if scaling != nil {
		ws = sim.WithScaling(ws, scaling)
		e := scaling.EfficiencyPerDoubling
		if e == 0 {
			e = 1
		}
		fmt.Fprintf(stdout, "scaling: efficiency %.2f per doubling of an elastic phase's workers; %s lost per resize\n", e, scaling.ResizeCost.Duration)
	}
	start := time.Now()
	rows, err := sim.RunSuite(ws)
	if err != nil {
		return err
	}
	err = report.WriteSuite(stdout, rows)
	if f.stats {
		fmt.Fprintf(stdout, "suite: %d workloads × %d policies in %.1fs wall\n", len(rows), len(sim.Policies), time.Since(start).Seconds())
	}
	return err
}
