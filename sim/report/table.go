package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/phasegang/phasegang/sim"
)

// WriteTable prints results side by side, one row per policy.
func WriteTable(w io.Writer, results []*sim.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tfinished\tdeadlocked\tmakespan\tLB\tutil\tJCT avg\tJCT p50\tJCT p99\tqueued avg\tqueued p99\tidle GPU·h\tdecisions/s\t")
	for _, r := range results {
		m := r.Metrics
		dps := "-"
		if m.DecisionsPerSec > 0 {
			dps = strconv.FormatFloat(m.DecisionsPerSec, 'f', 0, 64)
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\t\n",
			r.Policy, m.Finished, m.Pipelines, m.Deadlocked,
			human(m.Makespan), human(m.LowerBound), percent(m.Utilization),
			human(m.JCTAvg), human(m.JCTP50), human(m.JCTP99), human(m.QueuedAvg), human(m.QueuedP99),
			m.IdleGPUh, dps)
	}
	return tw.Flush()
}

// percent renders a fraction as 93.7%, or "-" when it is undefined (NaN).
func percent(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return strconv.FormatFloat(100*f, 'f', 1, 64) + "%"
}

// human renders seconds compactly: 45s, 12m30s, 3h05m, 2d04h, ∞.
func human(sec float64) string {
	if sec < 0 || math.IsInf(sec, 1) {
		return "∞"
	}
	d := time.Duration(sec * float64(time.Second)).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}

// maxUnfinishedLines caps the pipelines WriteUnfinished names per policy;
// a stuck trace would otherwise print thousands (--csv has them all).
const maxUnfinishedLines = 50

// unfinishedOrder is the order in which WriteUnfinished groups states: the
// ones that say most about the policy first.
var unfinishedOrder = []string{sim.StateDeadlocked, sim.StateUnfinished, sim.StateInfeasible, "Failed"}

// WriteUnfinished names, under the table, every pipeline of r that did not
// finish (the table's "finished" counts only those that succeeded): its
// state (Deadlocked, Unfinished, Infeasible or Failed) and why.
func WriteUnfinished(w io.Writer, r *sim.Result) error {
	var left []sim.PipelineResult
	count := map[string]int{}
	for _, p := range r.Pipelines {
		if p.State != "Succeeded" {
			left = append(left, p)
			count[p.State]++
		}
	}
	if len(left) == 0 {
		return nil
	}
	rank := func(state string) int {
		if i := slices.Index(unfinishedOrder, state); i >= 0 {
			return i
		}
		return len(unfinishedOrder)
	}
	slices.SortStableFunc(left, func(a, b sim.PipelineResult) int { return rank(a.State) - rank(b.State) })
	var states []string
	for _, p := range left {
		if n := count[p.State]; n > 0 {
			states = append(states, fmt.Sprintf("%d %s", n, strings.ToLower(p.State)))
			count[p.State] = 0
		}
	}
	fmt.Fprintf(w, "%s: %d of %d pipelines did not finish (%s):\n", r.Policy, len(left), len(r.Pipelines), strings.Join(states, ", "))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, p := range left[:min(len(left), maxUnfinishedLines)] {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", p.Name, p.State, strings.TrimSpace(p.Message))
	}
	if n := len(left) - maxUnfinishedLines; n > 0 {
		fmt.Fprintf(tw, "  … and %d more (--csv lists every pipeline)\n", n)
	}
	return tw.Flush()
}

// WriteCSV writes one row per pipeline.
func WriteCSV(w io.Writer, r *sim.Result) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"policy", "pipeline", "state", "arrival_s", "finish_s", "jct_s", "queueing_s", "phases", "message"})
	for _, p := range r.Pipelines {
		finish, jct := "", ""
		if p.Ended() {
			finish, jct = secs(p.Finish), secs(p.JCT())
		}
		_ = cw.Write([]string{string(r.Policy), p.Name, p.State, secs(p.Arrival), finish, jct, secs(p.Queueing), strconv.Itoa(p.Phases), strings.TrimSpace(p.Message)})
	}
	cw.Flush()
	return cw.Error()
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
