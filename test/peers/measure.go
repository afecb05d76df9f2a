package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/phasegang/phasegang/test/apirequests"
	"k8s.io/client-go/tools/cache"
)

// Labels every system's worker pods carry (set in the pod template).
const (
	labelPipeline = "peers.phasegang.dev/pipeline"
	labelPhase    = "peers.phasegang.dev/phase"
)

// podTimes is when the harness saw a pod bound, Running and ended
// (through a watch: sub-second, unlike the API's 1 s timestamps).
type podTimes struct {
	gpus                  int64
	bound, running, ended time.Time
	failed                bool
}

type gangKey struct{ pipeline, phase int }

// observer watches the run's pods and records their times.
type observer struct {
	mu     sync.Mutex
	pods   map[string]*podTimes // by pod name
	gangOf map[string]gangKey
	notify chan struct{}
}

func newObserver() *observer {
	return &observer{pods: map[string]*podTimes{}, gangOf: map[string]gangKey{}, notify: make(chan struct{}, 1)}
}

func (o *observer) start(ctx context.Context, cs kubernetes.Interface, ns string) {
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	handle := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		o.see(p)
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: handle, UpdateFunc: func(_, n any) { handle(n) }})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
}

func (o *observer) see(p *corev1.Pod) {
	i, err1 := strconv.Atoi(p.Labels[labelPipeline])
	k, err2 := strconv.Atoi(p.Labels[labelPhase])
	if err1 != nil || err2 != nil {
		return
	}
	now := time.Now()
	o.mu.Lock()
	t := o.pods[p.Name]
	if t == nil {
		t = &podTimes{}
		for _, c := range p.Spec.Containers {
			if q, ok := c.Resources.Requests["nvidia.com/gpu"]; ok {
				t.gpus += q.Value()
			}
		}
		o.pods[p.Name] = t
		o.gangOf[p.Name] = gangKey{i, k}
	}
	changed := false
	if p.Spec.NodeName != "" && t.bound.IsZero() {
		t.bound, changed = now, true
	}
	switch p.Status.Phase {
	case corev1.PodRunning:
		if t.running.IsZero() {
			t.running, changed = now, true
		}
	case corev1.PodSucceeded, corev1.PodFailed:
		if t.running.IsZero() {
			t.running = now
		}
		if t.ended.IsZero() {
			t.ended, changed = now, true
			t.failed = p.Status.Phase == corev1.PodFailed
		}
	}
	o.mu.Unlock()
	if changed {
		select {
		case o.notify <- struct{}{}:
		default:
		}
	}
}

// gang is what the observer saw of one phase's pods.
type gang struct {
	pods                                 []*podTimes
	ended                                int
	firstRunning, lastRunning, lastEnded time.Time
	failed                               bool
}

func (o *observer) gangs() map[gangKey]*gang {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[gangKey]*gang{}
	for name, t := range o.pods {
		k := o.gangOf[name]
		g := out[k]
		if g == nil {
			g = &gang{}
			out[k] = g
		}
		c := *t
		g.pods = append(g.pods, &c)
		if !t.running.IsZero() {
			if g.firstRunning.IsZero() || t.running.Before(g.firstRunning) {
				g.firstRunning = t.running
			}
			if t.running.After(g.lastRunning) {
				g.lastRunning = t.running
			}
		}
		if !t.ended.IsZero() {
			g.ended++
			if t.ended.After(g.lastEnded) {
				g.lastEnded = t.ended
			}
		}
		g.failed = g.failed || t.failed
	}
	return out
}

// figures are one run's results.
type figures struct {
	system, workload                 string
	pods                             int
	makespan, jctAvg, jctP99, queued float64 // seconds
	partialSecs, waitGPUSecs         float64
	splitGangs                       int
	// handover is the 10th percentile over every phase after a
	// pipeline's first of (its last worker Running − its previous
	// phase's last pod ended): what handing over from one phase to the
	// next costs this system when nothing waits ahead (the driver
	// noticing the end, the objects created, admission, binding, kwok
	// starting the pods), printed beside the simulator's models.
	handover float64
	cpu      map[string]time.Duration // by component
	writes   map[string]float64       // by resource
	note     string
}

// partialTolerance: kwok sets a bound gang's pods Running one status
// patch at a time, so even a gang placed at once is seen Running over a
// few hundred milliseconds. A spread up to this is not counted as waiting.
const partialTolerance = time.Second

func compute(w workload, arrivals []time.Time, start time.Time, gs map[gangKey]*gang) (figures, error) {
	f := figures{workload: w.name, pods: w.pods()}
	var jcts, queued, starts []float64
	var end time.Time
	for i, p := range w.pipelines {
		q := 0.0
		prevEnd := arrivals[i]
		for k := range p.phases {
			g := gs[gangKey{i, k}]
			if g == nil || g.ended < int(p.phases[k].workers) {
				return f, fmt.Errorf("%s phase %s did not end", p.name, p.phases[k].name)
			}
			q += g.lastRunning.Sub(prevEnd).Seconds()
			if k > 0 {
				starts = append(starts, g.lastRunning.Sub(prevEnd).Seconds())
			}
			prevEnd = g.lastEnded
			if spread := g.lastRunning.Sub(g.firstRunning); spread > partialTolerance {
				f.splitGangs++
				f.partialSecs += spread.Seconds()
				for _, t := range g.pods {
					f.waitGPUSecs += g.lastRunning.Sub(t.running).Seconds() * float64(t.gpus)
				}
			}
		}
		queued = append(queued, q)
		jcts = append(jcts, prevEnd.Sub(arrivals[i]).Seconds())
		if prevEnd.After(end) {
			end = prevEnd
		}
	}
	f.makespan = end.Sub(start).Seconds()
	f.jctAvg, f.jctP99 = mean(jcts), quantile(jcts, 0.99)
	f.queued = mean(queued)
	f.handover = quantile(starts, 0.10)
	return f, nil
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / math.Max(1, float64(len(v)))
}

func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[max(0, min(len(s)-1, int(math.Ceil(q*float64(len(s))))-1))]
}

// usage is what this cluster's processes spent: CPU time per component
// (by process id, so other clusters on the machine are not counted) and
// kube-apiserver's writes by resource.
type usage struct {
	cpu    map[string]time.Duration
	writes map[string]float64
}

func snapshot(cfg *rest.Config, pids map[string]int) usage {
	u := usage{cpu: map[string]time.Duration{}, writes: map[string]float64{}}
	for name, pid := range pids {
		u.cpu[name] = procCPU(pid)
	}
	samples, _ := apirequests.Read(cfg)
	for _, r := range samples {
		if !r.Write() {
			continue
		}
		res := r.Resource
		if r.Subresource != "" {
			res += "/" + r.Subresource
		}
		if r.Group != "" {
			res += "." + r.Group
		}
		if r.DryRun {
			res += " (dry run)"
		}
		u.writes[res] += r.Value
	}
	return u
}

func (u usage) since(b usage) usage {
	d := usage{cpu: map[string]time.Duration{}, writes: map[string]float64{}}
	for k, v := range u.cpu {
		d.cpu[k] = v - b.cpu[k]
	}
	for k, v := range u.writes {
		if x := v - b.writes[k]; x > 0 {
			d.writes[k] = x
		}
	}
	return d
}

// procCPU is a process's user + system CPU time from /proc.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0
	}
	fs := strings.Fields(string(b[end+2:]))
	ut, _ := strconv.ParseInt(fs[11], 10, 64)
	st, _ := strconv.ParseInt(fs[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// writeTimeline saves each gang's times (seconds from the start of the
// run): arrival of its pipeline, first and last pod Running, last pod ended.
func writeTimeline(file string, w workload, arrivals []time.Time, start time.Time, gs map[gangKey]*gang) {
	var b strings.Builder
	b.WriteString("pipeline\tphase\tworkers\tarrived\tfirst_running\tlast_running\tlast_ended\n")
	at := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return fmt.Sprintf("%.2f", t.Sub(start).Seconds())
	}
	for i, p := range w.pipelines {
		for k, ph := range p.phases {
			g := gs[gangKey{i, k}]
			if g == nil {
				g = &gang{}
			}
			fmt.Fprintf(&b, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", p.name, ph.name, ph.workers, at(arrivals[i]), at(g.firstRunning), at(g.lastRunning), at(g.lastEnded))
		}
	}
	_ = os.WriteFile(file, []byte(b.String()), 0o644)
}
