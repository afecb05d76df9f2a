package report

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/phasegang/phasegang/sim"
)

// WriteFairness prints, for the results that have tenant queues, one row
// per queue and policy, and each policy's Jain's index and lost work.
func WriteFairness(w io.Writer, results []*sim.Result) error {
	var with []*sim.Result
	for _, r := range results {
		if r.Fairness != nil {
			with = append(with, r)
		}
	}
	if len(with) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nper queue (share: GPUs held ÷ entitled while the queue had demand; hours: whole hours with demand throughout):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "queue\tpolicy\tnominal\tentitled GPU·h\theld GPU·h\tshare\thours\t<90% hours\tworst hour\twait avg\twait max\tpreempted\tlost GPU·h\t")
	for q := range with[0].Fairness.Queues {
		for _, r := range with {
			m := r.Fairness.Queues[q]
			fmt.Fprintf(tw, "%s\t%s\t%g\t%.1f\t%.1f\t%s\t%d\t%d\t%s\t%s\t%s\t%d\t%.1f\t\n",
				m.Queue, r.Policy, m.Nominal, m.EntitledGPUh, m.HeldGPUh, percent(m.Share), m.Hours, m.Short,
				percent(m.WorstHour), human(m.WaitAvg), human(m.WaitMax), m.Preempted, m.PreemptedGPUh)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range with {
		fmt.Fprintf(w, "%s: Jain's index %s over the queues' shares, %.1f GPU-hours lost to preemption\n",
			r.Policy, strconv.FormatFloat(r.Fairness.Jain, 'f', 3, 64), r.Fairness.PreemptedGPUh)
	}
	return nil
}
