package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The suite's tenant-queue target (issue 31): on a workload with tenant
// queues, every queue gets at least 90% of its entitlement in every hour
// in which it has work waiting (QueueMetrics.WaitingShort is 0 for every
// queue), and each class's average time to admission is reported.

// ClassAdmission is one class's average time to admission under
// phasegang: from a pipeline's arrival to the start of its first phase's
// last attempt (Kueue's timeToAdmission: creation to the last
// admission, so a preempted workload counts its re-admission).
type ClassAdmission struct {
	Class     string
	Pipelines int
	// Avg is in seconds.
	Avg float64
}

// queueFailure says how the run misses the queue target ("" if it
// meets it): how many hours with work waiting fell below 90% of the
// entitlement, and the worst queue's worst hour.
func queueFailure(f *Fairness) string {
	if f == nil {
		return ""
	}
	short, hours, worst := 0, 0, -1
	for i, m := range f.Queues {
		short += m.WaitingShort
		hours += m.WaitingHours
		if m.WaitingShort > 0 && (worst < 0 || m.WaitingWorst < f.Queues[worst].WaitingWorst) {
			worst = i
		}
	}
	if short == 0 {
		return ""
	}
	w := f.Queues[worst]
	return fmt.Sprintf("a queue held < 90%% of its entitlement in %d of %d queue-hours with work waiting (worst %s: %.1f%%)",
		short, hours, w.Queue, 100*w.WaitingWorst)
}

// classAdmissions averages each class's time to admission from the
// phase attempts a run reported (records): a pipeline's class is the
// value of its training's label, pipelines without the label are left
// out, and classes come in the order the scenario first names them.
func classAdmissions(sc *Scenario, label string, records []PhaseRecord) []ClassAdmission {
	type pipe struct {
		class, first string
		arrival      time.Duration
	}
	pipes := map[string]pipe{}
	var order []string
	for i := range sc.Workload {
		w := &sc.Workload[i]
		class, ok := w.Training.Labels[label]
		if !ok || len(w.Training.Spec.Phases) == 0 {
			continue
		}
		if !slices.Contains(order, class) {
			order = append(order, class)
		}
		for r, name := range pipelineNames(w) {
			pipes[name] = pipe{class, w.Training.Spec.Phases[0].Name, w.Arrival.Duration + time.Duration(r)*w.Interval.Duration}
		}
	}
	admitted := map[string]time.Duration{}
	for _, rec := range records {
		if p, ok := pipes[rec.Pipeline]; ok && rec.Instance.Name == p.first {
			if at, seen := admitted[rec.Pipeline]; !seen || rec.Started > at {
				admitted[rec.Pipeline] = rec.Started
			}
		}
	}
	sum, n := map[string]time.Duration{}, map[string]int{}
	for name, at := range admitted {
		p := pipes[name]
		sum[p.class] += at - p.arrival
		n[p.class]++
	}
	var out []ClassAdmission
	for _, c := range order {
		if n[c] > 0 {
			out = append(out, ClassAdmission{Class: c, Pipelines: n[c], Avg: sum[c].Seconds() / float64(n[c])})
		}
	}
	return out
}

// pipelineNames are the "namespace/name" of a workload's pipelines, as
// the simulator names its replicas.
func pipelineNames(w *Workload) []string {
	ns := w.Training.Namespace
	if ns == "" {
		ns = "default"
	}
	count := max(w.Count, 1)
	out := make([]string, count)
	for r := range count {
		name := w.Training.Name
		if w.Count > 1 {
			name = fmt.Sprintf("%s-%d", name, r)
		}
		out[r] = ns + "/" + name
	}
	return out
}

// AdmissionLine is the suite's line for a row's class admission times,
// e.g. "small 1h02m (210), medium 3h10m (60)"; "" without classes.
func (row *SuiteRow) AdmissionLine(human func(float64) string) string {
	var parts []string
	for _, c := range row.Admission {
		parts = append(parts, fmt.Sprintf("%s %s (%d)", c.Class, human(c.Avg), c.Pipelines))
	}
	return strings.Join(parts, ", ")
}
