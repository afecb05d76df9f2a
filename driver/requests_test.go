package driver

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

func TestRequest(t *testing.T) {
	classes := map[string]int32{"high": 1000, "low": -5}
	created := wrappers.T0.Add(-time.Hour)
	sel := map[string]string{"gpu": "a100"}
	tol := []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	aff := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}},
	}}}
	// spread keeps the gang's workers one per node: it selects the
	// template's labels.
	spread := &corev1.Affinity{NodeAffinity: aff.NodeAffinity, PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "bert"}}}}}}
	base := func() *wrappers.PT {
		return wrappers.MakePT("job").Created(created).Phase("train", 2).Desired(4).Template(func(p *corev1.PodTemplateSpec) {
			p.Spec.NodeSelector, p.Spec.Tolerations, p.Spec.Affinity = sel, tol, aff
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("1Ki")
		})
	}
	wantBase := engine.Request{
		Gang:        engine.GangKey{Pipeline: "ns/job", Phase: "train", Iteration: 1, Attempt: 2},
		Created:     created,
		Queued:      created,
		Min:         2,
		Desired:     4,
		Footprint:   engine.ResourceList{"cpu": 1000, "memory": 1024000, "pods": 1000},
		Constraints: engine.Constraints{NodeSelector: sel, Affinity: aff, Tolerations: tol},
	}
	tests := map[string]struct {
		pt   *v1alpha1.PhasedTraining
		ps   v1alpha1.PhaseStatus
		want func(r *engine.Request)
	}{
		"defaults: priority 0, queued at creation": {
			pt: base().Obj(), ps: wrappers.Attempt(wrappers.Queued("train"), 1, 2),
			want: func(*engine.Request) {},
		},
		"priority field": {
			pt: base().Priority(7).Obj(), ps: wrappers.Attempt(wrappers.Queued("train"), 1, 2),
			want: func(r *engine.Request) { r.Priority = 7 },
		},
		"negative priority class": {
			pt: base().PriorityClass("low").Obj(), ps: wrappers.Attempt(wrappers.Queued("train"), 1, 2),
			want: func(r *engine.Request) { r.Priority = -5 },
		},
		"priority class": {
			pt: base().PriorityClass("high").Obj(), ps: wrappers.Attempt(wrappers.Queued("train"), 1, 2),
			want: func(r *engine.Request) { r.Priority = 1000 },
		},
		"unknown priority class is 0": {
			pt: base().PriorityClass("nope").Obj(), ps: wrappers.Attempt(wrappers.Queued("train"), 1, 2),
			want: func(*engine.Request) {},
		},
		"priority wins over class": {
			pt: base().Priority(3).PriorityClass("high").Obj(), ps: wrappers.Attempt(wrappers.Queued("train"), 1, 2),
			want: func(r *engine.Request) { r.Priority = 3 },
		},
		"queued time and not-before from the status": {
			pt: base().Obj(),
			ps: func() v1alpha1.PhaseStatus {
				ps := wrappers.Attempt(wrappers.Queued("train"), 1, 2)
				ps.QueuedTime, ps.NotBefore = wrappers.Time(wrappers.T0), wrappers.Time(wrappers.T0.Add(time.Minute))
				return ps
			}(),
			want: func(r *engine.Request) { r.Queued, r.NotBefore = wrappers.T0, wrappers.T0.Add(time.Minute) },
		},
		"host ports and one worker per node from the template": {
			pt: base().Template(func(p *corev1.PodTemplateSpec) {
				p.Labels = map[string]string{"app": "bert"}
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 9100, HostPort: 9100}}
				p.Spec.Affinity = spread
			}).Obj(),
			ps: wrappers.Attempt(wrappers.Queued("train"), 1, 2),
			want: func(r *engine.Request) {
				r.HostPorts = []engine.HostPort{{Protocol: "TCP", Port: 9100, HostIP: "0.0.0.0"}}
				r.OnePerNode = true
				r.Constraints.Affinity = spread
			},
		},
		"desired defaults to min": {
			pt: wrappers.MakePT("job").Created(created).Phase("train", 3).Obj(), ps: wrappers.Queued("train"),
			want: func(r *engine.Request) {
				r.Gang.Iteration, r.Gang.Attempt = 0, 0
				r.Min, r.Desired = 3, 3
				r.Footprint = engine.ResourceList{"cpu": 1000, "pods": 1000}
				r.Constraints = engine.Constraints{}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			want := wantBase
			tc.want(&want)
			got := Request(tc.pt, SpecPhases(tc.pt)[tc.pt.Spec.Phases[0].Name], &tc.ps, classes)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("request (-want +got):\n%s", d)
			}
		})
	}
}

func TestSchedulable(t *testing.T) {
	tests := map[string]struct {
		pt   *v1alpha1.PhasedTraining
		want bool
	}{
		"fresh":                     {wrappers.MakePT("p").Obj(), true},
		"running":                   {wrappers.MakePT("p").State(v1alpha1.PipelineRunning).Obj(), true},
		"queued":                    {wrappers.MakePT("p").State(v1alpha1.PipelineQueued).Obj(), true},
		"infeasible":                {wrappers.MakePT("p").State(v1alpha1.PipelineInfeasible).Obj(), true},
		"invalid":                   {wrappers.MakePT("p").State(v1alpha1.PipelineInvalid).Obj(), false},
		"succeeded":                 {wrappers.MakePT("p").State(v1alpha1.PipelineSucceeded).Obj(), false},
		"failed":                    {wrappers.MakePT("p").State(v1alpha1.PipelineFailed).Obj(), false},
		"deleted":                   {wrappers.MakePT("p").Deleting(now).Obj(), false},
		"new generation unobserved": {wrappers.MakePT("p").Generation(3, 2).Obj(), false},
		"never observed":            {wrappers.MakePT("p").Generation(1, 0).Obj(), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Schedulable(tc.pt); got != tc.want {
				t.Errorf("Schedulable = %v, want %v", got, tc.want)
			}
		})
	}
}

// demandSummary is what a test asserts of a Demand: the gangs of each
// list by key, their priorities, where each gang points back to, and the
// schedulable pipelines.
type demandSummary struct {
	Ledger, Queue, Upcoming []string
	Priority                map[string]int32 // gang → priority, across the lists
	Gangs                   map[string]int   // gang → index of its PhaseStatus
	Pipelines               []string
}

func summarizeDemand(t *testing.T, d *Demand) demandSummary {
	t.Helper()
	s := demandSummary{Priority: map[string]int32{}, Gangs: map[string]int{}}
	add := func(list *[]string, r engine.Request) {
		*list = append(*list, r.Gang.String())
		s.Priority[r.Gang.String()] = r.Priority
	}
	for _, g := range d.Ledger {
		add(&s.Ledger, g.Request)
	}
	for _, r := range d.Queue {
		add(&s.Queue, r)
	}
	for _, r := range d.Upcoming {
		add(&s.Upcoming, r)
	}
	for k, g := range d.Gangs {
		if got := GangKey(g.Pipeline, g.Status()); got != k {
			t.Errorf("Gangs[%v] points at %v", k, got)
		}
		if g.Phase == nil || g.Phase.Name != k.Phase {
			t.Errorf("Gangs[%v].Phase = %v", k, g.Phase)
		}
		s.Gangs[k.String()] = g.Index
	}
	s.Pipelines = d.pipelineKeys()
	return s
}

func TestDemand(t *testing.T) {
	threePhases := func() *wrappers.PT {
		return wrappers.MakePT("job").Phase("train", 2).Phase("eval", 1).DependsOn("train").Phase("test", 1).DependsOn("eval")
	}
	classes := Priorities{"high": 1000}
	tests := map[string]struct {
		pts  []*v1alpha1.PhasedTraining
		want demandSummary
	}{
		// The engine checks a pipeline's later phases when it arrives, so
		// one that can never fit is found before the earlier ones ran.
		"upcoming lists the phases without a status entry, and Pending ones": {
			pts: []*v1alpha1.PhasedTraining{threePhases().Status(wrappers.Running("train", "n1", "n2"), wrappers.PhaseIn("eval", v1alpha1.PhasePending)).Obj()},
			want: demandSummary{
				Ledger:    []string{"ns/job/train#0.0"},
				Upcoming:  []string{"ns/job/eval#0.0", "ns/job/test#0.0"},
				Priority:  map[string]int32{"ns/job/train#0.0": 0, "ns/job/eval#0.0": 0, "ns/job/test#0.0": 0},
				Gangs:     map[string]int{"ns/job/train#0.0": 0},
				Pipelines: []string{"ns/job"},
			},
		},
		"a new pipeline's phases are all upcoming": {
			pts: []*v1alpha1.PhasedTraining{threePhases().Obj()},
			want: demandSummary{
				Upcoming:  []string{"ns/job/train#0.0", "ns/job/eval#0.0", "ns/job/test#0.0"},
				Priority:  map[string]int32{"ns/job/train#0.0": 0, "ns/job/eval#0.0": 0, "ns/job/test#0.0": 0},
				Pipelines: []string{"ns/job"},
			},
		},
		"a phase with a status entry is not upcoming, in whatever iteration or attempt": {
			pts: []*v1alpha1.PhasedTraining{threePhases().Status(
				wrappers.PhaseIn("train", v1alpha1.PhaseFailed), wrappers.Attempt(wrappers.Queued("train"), 0, 1),
			).Obj()},
			want: demandSummary{
				Queue:     []string{"ns/job/train#0.1"},
				Upcoming:  []string{"ns/job/eval#0.0", "ns/job/test#0.0"},
				Priority:  map[string]int32{"ns/job/train#0.1": 0, "ns/job/eval#0.0": 0, "ns/job/test#0.0": 0},
				Gangs:     map[string]int{"ns/job/train#0.1": 1},
				Pipelines: []string{"ns/job"},
			},
		},
		"priorityClassName is resolved through Priorities for every list": {
			pts: []*v1alpha1.PhasedTraining{threePhases().PriorityClass("high").
				Status(wrappers.Running("train", "n1"), wrappers.Queued("eval")).Obj()},
			want: demandSummary{
				Ledger:    []string{"ns/job/train#0.0"},
				Queue:     []string{"ns/job/eval#0.0"},
				Upcoming:  []string{"ns/job/test#0.0"},
				Priority:  map[string]int32{"ns/job/train#0.0": 1000, "ns/job/eval#0.0": 1000, "ns/job/test#0.0": 1000},
				Gangs:     map[string]int{"ns/job/train#0.0": 0, "ns/job/eval#0.0": 1},
				Pipelines: []string{"ns/job"},
			},
		},
		// It waits for the class (applyNoClass says so) instead of
		// running at priority 0; its running grant stays.
		"a pipeline naming a missing priority class queues nothing": {
			pts: []*v1alpha1.PhasedTraining{threePhases().PriorityClass("nope").
				Status(wrappers.Running("train", "n1"), wrappers.Queued("eval")).Obj()},
			want: demandSummary{
				Ledger:   []string{"ns/job/train#0.0"},
				Priority: map[string]int32{"ns/job/train#0.0": 0},
				Gangs:    map[string]int{"ns/job/train#0.0": 0},
			},
		},
		// Its grant stays until its phase ends; nothing of it waits.
		"an unschedulable pipeline: grant kept, nothing queued or upcoming": {
			pts: []*v1alpha1.PhasedTraining{threePhases().Generation(2, 1).
				Status(wrappers.Running("train", "n1"), wrappers.Queued("eval")).Obj()},
			want: demandSummary{
				Ledger:   []string{"ns/job/train#0.0"},
				Priority: map[string]int32{"ns/job/train#0.0": 0},
				Gangs:    map[string]int{"ns/job/train#0.0": 0},
			},
		},
		"a deleted pipeline adds nothing": {
			pts: []*v1alpha1.PhasedTraining{threePhases().Deleting(now).Status(wrappers.Running("train", "n1"), wrappers.Queued("eval")).Obj()},
		},
		"pipelines are keyed by namespace and name": {
			pts: []*v1alpha1.PhasedTraining{
				wrappers.MakePT("b").Phase("train", 1).Status(wrappers.Queued("train")).Obj(),
				wrappers.MakePT("a").Namespace("other").Phase("train", 1).Status(wrappers.Queued("train")).Obj(),
			},
			want: demandSummary{
				Queue:     []string{"ns/b/train#0.0", "other/a/train#0.0"},
				Priority:  map[string]int32{"ns/b/train#0.0": 0, "other/a/train#0.0": 0},
				Gangs:     map[string]int{"ns/b/train#0.0": 0, "other/a/train#0.0": 0},
				Pipelines: []string{"ns/b", "other/a"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var d Demand
			for _, pt := range tc.pts {
				d.Add(pt, classes)
			}
			if d := cmp.Diff(tc.want, summarizeDemand(t, &d), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("demand (-want +got):\n%s", d)
			}
		})
	}
}

// An upcoming phase is asked for as its first attempt would be: the
// pipeline's age and priority, the phase's gang and footprint.
func TestUpcomingRequest(t *testing.T) {
	pt := wrappers.MakePT("job").Priority(5).Phase("train", 2).Desired(4).GPUs(1).Obj()
	got := Upcoming(pt, nil)
	want := []engine.Request{Request(pt, SpecPhases(pt)[pt.Spec.Phases[0].Name], &v1alpha1.PhaseStatus{Name: "train"}, nil)}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("upcoming (-want +got):\n%s", d)
	}
	if r := got[0]; r.Priority != 5 || r.Min != 2 || r.Desired != 4 || !r.Queued.Equal(wrappers.T0) || r.Footprint["nvidia.com/gpu"] != 1000 {
		t.Errorf("upcoming request = %+v", r)
	}
}
