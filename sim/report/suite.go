package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/phasegang/phasegang/sim"
)

// WriteSuite prints the suite's table: per workload, phasegang's makespan
// ÷ LB and, per metric, phasegang ÷ the best baseline (named), then the
// verdict. It returns an error naming every failing workload and metric.
func WriteSuite(w io.Writer, rows []sim.SuiteRow) error {
	fmt.Fprintf(w, "policy suite: %d workloads; phasegang ÷ the best baseline per metric; verdict: the targets of docs/simulator.md#policy-suite\n", len(rows))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tpipelines\tGPUs\tmakespan\tLB\tmakespan/LB\tJCT avg/LB\tmakespan ÷ best\tJCT avg ÷ best\tJCT p99 ÷ best\tverdict")
	var failing []string
	for _, row := range rows {
		m := row.Results[0].Metrics
		cells := make([]string, len(sim.SuiteMetrics))
		for i := range sim.SuiteMetrics {
			cells[i] = fmtRatio(row.Ratio[i]) + " " + shortPolicy(row.Best[i])
		}
		verdict := "ok"
		if len(row.Failures) > 0 {
			verdict = "FAIL: " + strings.Join(row.Failures, "; ")
			failing = append(failing, row.Workload.Name+" ("+strings.Join(row.Failures, "; ")+")")
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", row.Workload.Name, row.Pipelines, row.GPUs,
			human(m.Makespan), human(m.LowerBound), fmtRatio(row.MakespanOverLB), fmtRatio(row.JCTAvgOverLB), cells[0], cells[1], cells[2], verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, row := range rows {
		if len(row.Excluded) > 0 {
			fmt.Fprintf(w, "%s: %v left pipelines deadlocked or unfinished and do not count as baselines\n", row.Workload.Name, row.Excluded)
		}
	}
	for _, row := range rows {
		if line := row.AdmissionLine(human); line != "" {
			fmt.Fprintf(w, "%s: phasegang's average time to admission per class (pipelines): %s\n", row.Workload.Name, line)
		}
	}
	if len(failing) > 0 {
		return fmt.Errorf("policy suite: %d of %d workloads fail: %s", len(failing), len(rows), strings.Join(failing, ", "))
	}
	return nil
}

func fmtRatio(r float64) string {
	switch {
	case math.IsNaN(r):
		return "-"
	case math.IsInf(r, 1):
		return "∞"
	}
	return fmt.Sprintf("%.3f", r)
}

// shortPolicy names a baseline in the table: (rigid), (whole-job), (per-pod).
func shortPolicy(p sim.Policy) string {
	switch p {
	case "":
		return ""
	case sim.PolicyRigid:
		return "(rigid)"
	}
	return "(" + string(p) + ")"
}
