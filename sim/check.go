package sim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
)

// maxCheckLines caps the workloads CheckRunnable names: a trace has
// thousands, most with the same problem.
const maxCheckLines = 5

// CheckRunnable returns an error when no pipeline of sc can ever run on its
// cluster, where a run would print nothing but "0/N finished": the cluster
// has no nodes, or every pipeline has a phase whose gang, at its min size,
// cannot fit even the empty cluster (no node has a resource its workers
// need, such as GPUs or pod slots; no node matches its nodeSelector,
// affinity or tolerations; or the matching nodes are too few). The verdict
// per phase is the engine's own, reached as the controller reaches it for
// a pipeline's upcoming phases: a phase that a `when` may skip still
// counts, since the engine admits no phase of a pipeline that has one that
// can never run. It returns nil when some pipeline can run; those that
// cannot are reported Infeasible by the run itself.
func CheckRunnable(sc *Scenario) error {
	nodes := sc.Cluster.Nodes()
	if len(nodes) == 0 {
		return errors.New("no pipeline can run: the cluster has no nodes")
	}
	cannot := cannotRun(sc, nodes)
	var lines []string // per distinct workload: its first phase that cannot fit
	seen := map[string]bool{}
	for i := range sc.Workload {
		key := workloadKey(sc, i)
		if seen[key] {
			continue
		}
		seen[key] = true
		if cannot[key] == "" {
			return nil // this workload can run
		}
		lines = append(lines, fmt.Sprintf("%s, phase %s", workloadLabel(sc, i), cannot[key]))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "no pipeline can run on this cluster (%d nodes, %d GPUs): each has a phase whose gang cannot fit even the empty cluster",
		len(nodes), sc.Cluster.GPUs())
	for _, l := range lines[:min(len(lines), maxCheckLines)] {
		b.WriteString("\n  " + l)
	}
	if n := len(lines) - maxCheckLines; n > 0 {
		fmt.Fprintf(&b, "\n  … and %d more workloads", n)
	}
	return errors.New(b.String())
}

// cannotRun maps the key of each distinct workload that can never run on
// nodes to its first phase that cannot fit and the engine's reason
// ("train: …").
func cannotRun(sc *Scenario, nodes []engine.Node) map[string]string {
	plan := engine.Schedule(engine.DefaultConfig(), engine.Snapshot{Now: Epoch, Nodes: nodes, Upcoming: upcomingRequests(sc)})
	why := map[engine.GangKey]string{}
	for _, inf := range plan.Infeasible {
		why[inf.Gang] = inf.Message
	}
	out := map[string]string{}
	for i := range sc.Workload {
		key := workloadKey(sc, i)
		if _, done := out[key]; done {
			continue
		}
		out[key] = ""
		for _, ph := range sc.Workload[i].Training.Spec.Phases {
			if msg, ok := why[engine.GangKey{Pipeline: key, Phase: ph.Name}]; ok {
				out[key] = ph.Name + ": " + msg
				break
			}
		}
	}
	return out
}

// runnable is sc without the workloads that can never run on its cluster:
// the lower bounds count only work that can run (an Infeasible pipeline
// is reported at once and takes no capacity).
func runnable(sc *Scenario) *Scenario {
	cannot := cannotRun(sc, sc.Cluster.Nodes())
	out := *sc
	out.Workload = nil
	for i := range sc.Workload {
		if cannot[workloadKey(sc, i)] == "" {
			out.Workload = append(out.Workload, sc.Workload[i])
		}
	}
	return &out
}

// upcomingRequests is one engine request per phase of each distinct
// workload, at the phase's min size: the least any policy asks for. The
// gang's pipeline is the workload's key.
func upcomingRequests(sc *Scenario) []engine.Request {
	var reqs []engine.Request
	seen := map[string]bool{}
	for i := range sc.Workload {
		key := workloadKey(sc, i)
		if seen[key] {
			continue
		}
		seen[key] = true
		pt := &sc.Workload[i].Training
		for j := range pt.Spec.Phases {
			ph := &pt.Spec.Phases[j]
			// The controller's own reading of the phase (footprint,
			// constraints, host ports, one worker per node, quota facts),
			// so a gang that can never fit for any of them is caught here
			// as the controller would catch it; then the least any policy
			// asks for: min workers, from the start.
			r := driver.Request(pt, driver.SpecPhase{Spec: ph, Shape: driver.ShapeOf(ph)}, &v1alpha1.PhaseStatus{Name: ph.Name}, nil)
			size := max(ph.Gang.Min, 1)
			r.Gang = engine.GangKey{Pipeline: key, Phase: ph.Name}
			r.Created, r.Queued, r.Min, r.Desired = Epoch, Epoch, size, size
			reqs = append(reqs, r)
		}
	}
	return reqs
}

// workloadKey identifies workload i's spec: a trace's jobs of one size
// share theirs, so they are checked once.
func workloadKey(sc *Scenario, i int) string {
	if k := sc.Workload[i].specKey; k != "" {
		return k
	}
	return "#" + strconv.Itoa(i)
}

// workloadLabel names workload i as a user finds it in the scenario.
func workloadLabel(sc *Scenario, i int) string {
	w := &sc.Workload[i]
	name := w.Training.Name
	if ns := w.Training.Namespace; ns != "" {
		name = ns + "/" + name
	}
	switch {
	case w.specKey != "":
		return "jobs like " + name
	case w.Count > 1:
		return fmt.Sprintf("workload[%d] %s (%d pipelines)", i, name, w.Count)
	}
	return fmt.Sprintf("workload[%d] %s", i, name)
}
