package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/controllers"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
)

type queueFlags struct {
	namespace       string
	kubeconfig      string
	starvationBound time.Duration
	topologyLevels  []string
	timeout         time.Duration
}

func newQueue() *cobra.Command {
	f := &queueFlags{}
	cmd := &cobra.Command{
		Use:   "queue [QUEUE]",
		Short: "List the waiting gangs in queue order, what each waits for, and what a preemption would take next",
		Long: `queue reads the cluster (KUBECONFIG, or --kubeconfig), builds the snapshot
the controller's next cycle would schedule, with the controller's own code,
and runs the engine on it without writing anything. It prints each
TenantQueue's use, then every waiting gang in its queue's order (priority,
then the pipeline's age) with its position and what it waits for (capacity,
quota, its queue, a starving head's fence), then the running gangs a
preemption would take first if every waiting lender's reclaim grace period
ended now. Positions count within a queue: across queues the next gang
comes from the queue furthest below its fair share, which changes as gangs
run. Give QUEUE to list one queue, --namespace to list one namespace's
gangs. See docs/queues.md.`,
		Example: `  phasegang queue
  phasegang queue team-a
  phasegang queue --namespace ml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runQueue(cmd.Context(), cmd.OutOrStdout(), f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.namespace, "namespace", "n", "", "list only this namespace's gangs (default: every namespace)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "path to a kubeconfig (default: $KUBECONFIG, then in-cluster)")
	fl.DurationVar(&f.starvationBound, "starvation-bound", engine.DefaultConfig().StarvationBound, "the controller's --starvation-bound, if it was changed")
	fl.StringSliceVar(&f.topologyLevels, "topology-levels", nil, "the controller's --topology-levels, if it is set")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "how long to wait for the cluster")
	return cmd
}

func runQueue(ctx context.Context, w io.Writer, f *queueFlags, args []string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	if f.kubeconfig != "" {
		os.Setenv("KUBECONFIG", f.kubeconfig)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("no cluster to read the queue from: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		return err
	}
	now := time.Now()
	snap, d, err := controllers.ReadSnapshot(ctx, c, now, f.topologyLevels)
	if err != nil {
		return fmt.Errorf("reading the cluster: %w", err)
	}
	v := engine.ViewQueue(engine.Config{StarvationBound: f.starvationBound}, snap)
	sel := queueSelection{namespace: f.namespace}
	if len(args) == 1 {
		sel.queue = args[0]
	}
	return writeQueueView(w, v, d, sel, now)
}

// queueSelection narrows what `phasegang queue` prints.
type queueSelection struct{ queue, namespace string }

func (s queueSelection) queueOK(q string) bool { return s.queue == "" || s.queue == q }

func (s queueSelection) gangOK(queue string, g engine.GangKey) bool {
	return s.queueOK(queue) && (s.namespace == "" || strings.HasPrefix(g.Pipeline, s.namespace+"/"))
}

// writeQueueView prints the three parts: queues' use, waiting gangs,
// preemptions (now, and next).
func writeQueueView(w io.Writer, v engine.QueueView, d *driver.Demand, sel queueSelection, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(v.Queues) > 0 {
		fmt.Fprintln(tw, "QUEUE\tUSED\tNOMINAL\tBORROWED\tADMITTED\tPENDING")
		for _, u := range v.Queues {
			if sel.queueOK(u.Name) {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\n", u.Name, list(u.Used), list(u.Nominal), list(u.Borrowed), u.Admitted, u.Pending)
			}
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(tw, "QUEUE\tPOS\tPIPELINE\tPHASE\tPRIORITY\tWORKERS\tWAITED\tWAITING FOR")
	n := 0
	for _, g := range v.Gangs {
		if !sel.gangOK(g.Queue, g.Request.Gang) {
			continue
		}
		n++
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\t%s\t%s\n", orDash(g.Queue), g.Position, g.Request.Gang.Pipeline, phaseOf(d, g.Request.Gang),
			g.Request.Priority, workers(g.Request), now.Sub(g.Request.Queued).Round(time.Second), waitText(g))
	}
	if n == 0 {
		fmt.Fprintln(tw, "(no gang waits)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writePreemptions(w, "\nPreempted by this cycle:", v.Preemptions, d, sel)
	writePreemptions(w, "\nPreempted next, if every waiting lender's reclaim grace period ended now:", v.PreemptedNext, d, sel)
	return nil
}

func writePreemptions(w io.Writer, title string, ps []engine.Preemption, d *driver.Demand, sel queueSelection) {
	var lines []string
	for _, p := range ps {
		if sel.gangOK(p.Queue, p.Gang) || sel.gangOK(p.Lender, p.For) {
			lines = append(lines, fmt.Sprintf("  %s %s (queue %s) for %s %s (queue %s)",
				p.Gang.Pipeline, phaseOf(d, p.Gang), p.Queue, p.For.Pipeline, phaseOf(d, p.For), p.Lender))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w, title)
		fmt.Fprintln(w, strings.Join(lines, "\n"))
	}
}

// waitText is what the gang waits for, in the engine's words.
func waitText(g engine.QueuedGang) string {
	switch {
	case g.AdmitNow:
		return "fits now: the controller's next cycle grants it"
	case g.Wait == nil:
		return "-"
	}
	return g.Wait.Message()
}

func phaseOf(d *driver.Demand, k engine.GangKey) string {
	if g, ok := d.Gangs[k]; ok {
		return driver.PhaseLabel(g.Status())
	}
	return k.Phase
}

func workers(r engine.Request) string {
	if r.Desired > r.Min {
		return fmt.Sprintf("%d-%d", r.Min, r.Desired)
	}
	return fmt.Sprint(r.Min)
}

func list(rl engine.ResourceList) string {
	if len(rl) == 0 {
		return "-"
	}
	return strings.Trim(engine.FormatResources(rl), "{}")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
