package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/phasegang/phasegang/driver"
)

// The cost report: what the same 3-phase pipelines cost the cluster per
// pod when phasegang drives them and when plain pods do. Unlike pods/s,
// which both sides reach only as far as the host's cores let them, CPU
// seconds and API writes per pod do not depend on the machine's speed.

// Targets for phasegang ÷ plain (issue 16, part 2).
const (
	cpuPerPodTarget    = 1.3
	writesPerPodTarget = 1.5
)

// phaseKey names one phase of one pipeline, and its place in the pipeline
// (0: train, 1: validate, 2: test).
type phaseKey struct {
	pipeline string
	index    int
}

// phaseLatencies are, for every phase whose pods all ran, the seconds
// from the phase's queueing to its last worker Running. A phase queues
// when its previous phase's last worker ended, the first one at
// firstQueued(pipeline). Both sides are measured from their pods alone,
// so whoever decides (phasegang's controller, or the benchmark's loop
// that creates a phase's pods once the previous phase ended) pays its
// own reaction time.
func phaseLatencies(pods []corev1.Pod, keyOf func(*corev1.Pod) (phaseKey, bool), firstQueued func(pipeline string) time.Time) []float64 {
	type phaseTimes struct {
		lastRunning, lastEnded time.Time
		pods, started          int
	}
	phases := map[phaseKey]*phaseTimes{}
	for i := range pods {
		p := &pods[i]
		k, ok := keyOf(p)
		if !ok {
			continue
		}
		t := phases[k]
		if t == nil {
			t = &phaseTimes{}
			phases[k] = t
		}
		t.pods++
		if r := runningSince(p); !r.IsZero() {
			t.started++
			t.lastRunning = later(t.lastRunning, r)
		}
		t.lastEnded = later(t.lastEnded, endedAt(p))
	}
	var out []float64
	for k, t := range phases {
		if t.started < t.pods {
			continue
		}
		queued := firstQueued(k.pipeline)
		if k.index > 0 {
			prev := phases[phaseKey{k.pipeline, k.index - 1}]
			if prev == nil || prev.lastEnded.IsZero() {
				continue
			}
			queued = prev.lastEnded
		}
		if !queued.IsZero() {
			out = append(out, t.lastRunning.Sub(queued).Seconds())
		}
	}
	return out
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// endedAt is when a pod's last container ended, zero while one runs.
func endedAt(p *corev1.Pod) time.Time {
	var end time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Terminated == nil {
			return time.Time{}
		}
		end = later(end, cs.State.Terminated.FinishedAt.Time)
	}
	return end
}

// plainPhaseKey reads the labels plainPhasesRun gives its pods.
func plainPhaseKey(p *corev1.Pod) (phaseKey, bool) {
	i, err := strconv.Atoi(p.Labels["phase"])
	return phaseKey{p.Labels["pipeline"], i}, err == nil && p.Labels["pipeline"] != ""
}

// workerPhaseKey reads a phasegang worker's labels (first attempts only:
// a retried phase has no single queueing instant to measure from).
func workerPhaseKey(p *corev1.Pod) (phaseKey, bool) {
	if p.Labels[driver.LabelAttempt] != "0" {
		return phaseKey{}, false
	}
	i := slices.Index([]string{"train", "validate", "test"}, p.Labels[driver.LabelPhase])
	return phaseKey{p.Labels[driver.LabelPipeline], i}, i >= 0
}

// phaseLatency sets r's phase latency quantiles from its pods.
func (r *result) phaseLatency(pods []corev1.Pod, keyOf func(*corev1.Pod) (phaseKey, bool), firstQueued func(pipeline string) time.Time) {
	lat := phaseLatencies(pods, keyOf, firstQueued)
	r.phases, r.phaseP50, r.phaseP99 = len(lat), quantile(lat, 0.5), quantile(lat, 0.99)
}

// cost is one run's bill, per pod.
type cost struct {
	pods      int
	cpu       float64            // CPU seconds of every component, per pod
	writes    float64            // API writes, per pod
	byRes     map[string]float64 // API writes by resource, per pod
	byVerb    map[string]float64 // API writes by "resource VERB", per pod
	p50, p99  float64            // phase queued → all workers Running
	podsPerS  float64
	phaseRuns int
}

// costOf is a whole run's bill: pods is every pod it ran, podsPerSec its
// rate from the first creation to the last pod Running.
func costOf(r result, pods int, podsPerSec float64) cost {
	c := cost{pods: pods, byRes: map[string]float64{}, byVerb: map[string]float64{}, p50: r.phaseP50, p99: r.phaseP99, podsPerS: podsPerSec, phaseRuns: r.phases}
	if pods == 0 {
		return c
	}
	n := float64(pods)
	for _, d := range r.used.cpu {
		c.cpu += d.Seconds() / n
	}
	for res, w := range r.used.writes {
		c.byRes[res] = w / n
		c.writes += w / n
	}
	for rv, w := range r.used.verbs {
		c.byVerb[rv] = w / n
	}
	return c
}

// printCost prints the cost per pod of the whole 3-phase run, plain pods
// against phasegang, with the ratios and their targets.
func printCost(plain, pg result) {
	a, b := costOf(plain, plain.pods, plain.podsPerSec), costOf(pg, pg.allPods, pg.whole.podsPerSec)
	ratio := func(x, y float64) string {
		if x == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f×", y/x)
	}
	row := func(name, x, y, r, target string) {
		fmt.Printf("%-42s %12s %12s %8s %8s\n", name, x, y, r, target)
	}
	fmt.Printf("\n")
	row("cost per pod, whole run (3 phases)", "plain pods", "phasegang", "ratio", "target")
	row("pods", strconv.Itoa(a.pods), strconv.Itoa(b.pods), "", "")
	row("cluster CPU-seconds per pod", fmt.Sprintf("%.4f", a.cpu), fmt.Sprintf("%.4f", b.cpu), ratio(a.cpu, b.cpu), fmt.Sprintf("≤ %.1f×", cpuPerPodTarget))
	row("API writes per pod", fmt.Sprintf("%.2f", a.writes), fmt.Sprintf("%.2f", b.writes), ratio(a.writes, b.writes), fmt.Sprintf("≤ %.1f×", writesPerPodTarget))
	var resources []string
	for res := range a.byRes {
		resources = append(resources, res)
	}
	for res := range b.byRes {
		if _, ok := a.byRes[res]; !ok {
			resources = append(resources, res)
		}
	}
	slices.Sort(resources)
	for _, res := range resources {
		if a.byRes[res] < 0.01 && b.byRes[res] < 0.01 {
			continue
		}
		row("  "+res, fmt.Sprintf("%.2f", a.byRes[res]), fmt.Sprintf("%.2f", b.byRes[res]), "", "")
		// By verb where a resource has more than one, or the sides
		// differ: which requests the extra is.
		var verbs []string
		for _, m := range []map[string]float64{a.byVerb, b.byVerb} {
			for rv := range m {
				if r, v, _ := strings.Cut(rv, " "); r == res && !slices.Contains(verbs, v) {
					verbs = append(verbs, v)
				}
			}
		}
		slices.Sort(verbs)
		if len(verbs) > 1 {
			for _, v := range verbs {
				row("    "+strings.ToLower(v), fmt.Sprintf("%.2f", a.byVerb[res+" "+v]), fmt.Sprintf("%.2f", b.byVerb[res+" "+v]), "", "")
			}
		}
	}
	row(fmt.Sprintf("phase queued → all Running p50 (s, %d/%d)", a.phaseRuns, b.phaseRuns), fmt.Sprintf("%.0f", a.p50), fmt.Sprintf("%.0f", b.p50), "", "")
	row("phase queued → all Running p99 (s)", fmt.Sprintf("%.0f", a.p99), fmt.Sprintf("%.0f", b.p99), "", "")
	row("pods/s (host-bound: both share the cores)", fmt.Sprintf("%.1f", a.podsPerS), fmt.Sprintf("%.1f", b.podsPerS), ratio(a.podsPerS, b.podsPerS), "")
}
