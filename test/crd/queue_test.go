package crd_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// teamQueue is a valid queue that borrows and lends; each case of
// TestInvalidQueues breaks one thing in it.
func teamQueue() *wrappers.TQ {
	return wrappers.MakeQueue("team-a").Cohort("research").
		Nominal("nvidia.com/gpu", "8").Borrowing("4").Lending("6").
		Nominal("cpu", "64").Weight("2").Reclaim(v1alpha1.PreemptLowerPriority)
}

func TestValidQueuesAreAdmitted(t *testing.T) {
	s := newAPIServerFor(t, queueCRDPath)
	// A quantity may be written as a number, as in a ResourceQuota.
	number := toUnstructured(t, ptr.To(wrappers.MakeQueue("n").Cohort("c").Nominal("nvidia.com/gpu", "8").Lending("4").Obj()))
	number["spec"].(map[string]any)["resources"].([]any)[0].(map[string]any)["nominalQuota"] = int64(8)
	number["spec"].(map[string]any)["resources"].([]any)[0].(map[string]any)["lendingLimit"] = int64(4)
	if errs := s.create(number); len(errs) > 0 {
		t.Errorf("API server rejects quantities written as numbers:\n%v", errs.ToAggregate())
	}
	for name, q := range map[string]v1alpha1.TenantQueue{
		"team queue":       teamQueue().Obj(),
		"nominal only":     wrappers.MakeQueue("default").Nominal("nvidia.com/gpu", "16").Obj(),
		"zero nominal":     wrappers.MakeQueue("burst").Cohort("research").Nominal("nvidia.com/gpu", "0").Obj(),
		"lending all":      wrappers.MakeQueue("b").Cohort("c").Nominal("memory", "512Gi").Lending("512Gi").Obj(),
		"fractional cpu":   wrappers.MakeQueue("cpu").Nominal("cpu", "1500m").Obj(),
		"pods are counted": wrappers.MakeQueue("pods").Nominal("pods", "100").Obj(),
	} {
		t.Run(name, func(t *testing.T) {
			obj := toUnstructured(t, &q)
			if errs := s.create(obj); len(errs) > 0 {
				t.Errorf("API server rejects it:\n%v", errs.ToAggregate())
			}
			if errs := v1alpha1.ValidateTenantQueue(&q); len(errs) > 0 {
				t.Errorf("ValidateTenantQueue rejects it:\n%v", errs.ToAggregate())
			}
		})
	}
}

// TestExampleQueuesAreAdmitted: the TenantQueues of examples/*.yaml, which
// `phasegang validate` passes, are admitted by the API server.
func TestExampleQueuesAreAdmitted(t *testing.T) {
	s := newAPIServerFor(t, queueCRDPath)
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := v1alpha1.DecodeObjects(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, o := range objs {
			q, ok := o.(*v1alpha1.TenantQueue)
			if !ok {
				continue
			}
			n++
			if errs := v1alpha1.ValidateTenantQueue(q); len(errs) > 0 {
				t.Errorf("%s: ValidateTenantQueue rejects %s:\n%v", f, q.Name, errs.ToAggregate())
			}
			if errs := s.create(toUnstructured(t, q)); len(errs) > 0 {
				t.Errorf("%s: the API server rejects %s:\n%v", f, q.Name, errs.ToAggregate())
			}
		}
	}
	if n == 0 {
		t.Error("no TenantQueue in examples/*.yaml")
	}
}

func TestQueueDefaults(t *testing.T) {
	s := newAPIServerFor(t, queueCRDPath)
	q := wrappers.MakeQueue("a").Nominal("nvidia.com/gpu", "8").Obj()
	q.Spec.FairSharing = &v1alpha1.FairSharing{}
	q.Spec.Preemption = &v1alpha1.QueuePreemption{}
	obj := toUnstructured(t, &q)
	if errs := s.create(obj); len(errs) > 0 {
		t.Fatalf("API server rejects it:\n%v", errs.ToAggregate())
	}
	var stored v1alpha1.TenantQueue
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &stored); err != nil {
		t.Fatal(err)
	}
	want := v1alpha1.QueuePreemption{WithinQueue: v1alpha1.PreemptNever, ReclaimWithinCohort: v1alpha1.PreemptNever}
	if diff := cmp.Diff(want, *stored.Spec.Preemption); diff != "" {
		t.Errorf("preemption defaults (-want +got):\n%s", diff)
	}
	if w := stored.Spec.FairSharing.Weight; w == nil || w.String() != "1" {
		t.Errorf("fairSharing.weight defaults to %v, want 1", w)
	}
}

func TestInvalidQueues(t *testing.T) {
	s := newAPIServerFor(t, queueCRDPath)
	cases := map[string]struct {
		mutate func(q *v1alpha1.TenantQueue)
		// edit changes the object as JSON, for what a typed object cannot
		// hold (the YAML a user writes).
		edit func(obj map[string]any)
		want []string
	}{
		"lendingLimit above nominal": {
			mutate: func(q *v1alpha1.TenantQueue) { q.Spec.Resources[0].LendingLimit = qtyPtr("9") },
			want:   []string{"spec.resources[0].lendingLimit: Invalid value: lendingLimit must not exceed nominalQuota"},
		},
		"negative nominal": {
			mutate: func(q *v1alpha1.TenantQueue) {
				q.Spec.Resources[1].NominalQuota = *qtyPtr("-1")
			},
			want: []string{"spec.resources[1].nominalQuota: Invalid value: nominalQuota must not be negative"},
		},
		"negative borrowingLimit": {
			mutate: func(q *v1alpha1.TenantQueue) { q.Spec.Resources[0].BorrowingLimit = qtyPtr("-2") },
			want:   []string{"spec.resources[0].borrowingLimit: Invalid value: borrowingLimit must not be negative"},
		},
		"negative lendingLimit": {
			mutate: func(q *v1alpha1.TenantQueue) { q.Spec.Resources[0].LendingLimit = qtyPtr("-2") },
			want:   []string{"spec.resources[0].lendingLimit: Invalid value: lendingLimit must not be negative"},
		},
		"limits without a cohort": {
			mutate: func(q *v1alpha1.TenantQueue) { q.Spec.Cohort = "" },
			want:   []string{"spec.resources: Forbidden: borrowingLimit and lendingLimit need a cohort to borrow from and lend to"},
		},
		"zero weight": {
			mutate: func(q *v1alpha1.TenantQueue) { q.Spec.FairSharing.Weight = qtyPtr("0") },
			want:   []string{"spec.fairSharing.weight: Invalid value: weight must be greater than 0"},
		},
		"duplicate resource": {
			mutate: func(q *v1alpha1.TenantQueue) { q.Spec.Resources[1].Name = "nvidia.com/gpu" },
			want:   []string{"spec.resources[1]: Duplicate value: "},
		},
		"no resources": {
			mutate: func(q *v1alpha1.TenantQueue) { q.Spec.Resources = []v1alpha1.QueueResource{}; q.Spec.Cohort = "" },
			want:   []string{"spec.resources: Invalid value: spec.resources in body should have at least 1 items"},
		},
		"cohort not a DNS label": {
			mutate: func(q *v1alpha1.TenantQueue) { q.Spec.Cohort = "Research" },
			want:   []string{"spec.cohort: Invalid value: spec.cohort in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"},
		},
		"unknown preemption policy": {
			mutate: func(q *v1alpha1.TenantQueue) { q.Spec.Preemption.WithinQueue = "Sometimes" },
			want:   []string{`spec.preemption.withinQueue: Unsupported value: supported values: "Never", "LowerPriority", "Any"`},
		},
		"reclaim grace not a duration": {
			edit: func(obj map[string]any) {
				obj["spec"].(map[string]any)["preemption"].(map[string]any)["reclaimGracePeriod"] = "5min"
			},
			want: []string{"spec.preemption.reclaimGracePeriod: Invalid value: must be a duration such as 90s, 30m or 1h30m (numbers with units ns, us, ms, s, m or h)"},
		},
		"negative reclaim grace": {
			edit: func(obj map[string]any) {
				obj["spec"].(map[string]any)["preemption"].(map[string]any)["reclaimGracePeriod"] = "-1m"
			},
			want: []string{"spec.preemption.reclaimGracePeriod: Invalid value: must not be negative"},
		},
		"negative nominal written as a number": {
			edit: func(obj map[string]any) {
				obj["spec"].(map[string]any)["resources"].([]any)[1].(map[string]any)["nominalQuota"] = int64(-3)
			},
			want: []string{"spec.resources[1].nominalQuota: Invalid value: nominalQuota must not be negative"},
		},
		"resource name with a space": {
			mutate: func(q *v1alpha1.TenantQueue) { q.Spec.Resources[1].Name = "nvidia gpu" },
			want:   []string{"spec.resources[1].name: Invalid value: spec.resources[1].name in body should match '^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$'"},
		},
		"cohort too long": {
			mutate: func(q *v1alpha1.TenantQueue) { q.Spec.Cohort = strings.Repeat("c", 64) },
			want:   []string{"spec.cohort: Too long: may not be more than 63 bytes"},
		},
		"too many resources": {
			mutate: func(q *v1alpha1.TenantQueue) {
				for i := range 15 {
					q.Spec.Resources = append(q.Spec.Resources, v1alpha1.QueueResource{Name: fmt.Sprintf("example.com/r%d", i), NominalQuota: *qtyPtr("1")})
				}
			},
			want: []string{"spec.resources: Too many: must have at most 16 items"},
		},
		"lending above nominal and negative borrowing at once": {
			mutate: func(q *v1alpha1.TenantQueue) {
				q.Spec.Resources[0].LendingLimit = qtyPtr("9")
				q.Spec.Resources[0].BorrowingLimit = qtyPtr("-1")
			},
			want: []string{
				"spec.resources[0].lendingLimit: Invalid value: lendingLimit must not exceed nominalQuota",
				"spec.resources[0].borrowingLimit: Invalid value: borrowingLimit must not be negative",
			},
		},
		"nominal not a quantity": {
			edit: func(obj map[string]any) {
				obj["spec"].(map[string]any)["resources"].([]any)[0].(map[string]any)["nominalQuota"] = "eight"
			},
			want: []string{`spec.resources[0].nominalQuota: Invalid value: spec.resources[0].nominalQuota in body should match '^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$'`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := teamQueue().Obj()
			q.Spec.Preemption.ReclaimGracePeriod = nil
			if tc.mutate != nil {
				tc.mutate(&q)
			}
			obj := toUnstructured(t, &q)
			if tc.edit != nil {
				tc.edit(obj)
			}
			crdErrs := s.create(runtime.DeepCopyJSON(obj))
			if diff := cmp.Diff(tc.want, describe(crdErrs)); diff != "" {
				t.Errorf("API server errors (-want +got):\n%s", diff)
			}
			// The pure validator (phasegang validate, the simulator)
			// rejects the same fields with the same error types.
			if diff := cmp.Diff(sorted(paths(crdErrs)), localQueue(t, obj)); diff != "" {
				t.Errorf("ValidateTenantQueue disagrees with the API server (-API server +ValidateTenantQueue):\n%s", diff)
			}
		})
	}
}

// localQueue is what `phasegang validate` says about a TenantQueue: its
// ValidateTenantQueue errors as sorted "path: type", or, for what a typed
// object cannot hold, Decode's error rendered as "path: Invalid value"
// for the path it names.
func localQueue(t testing.TB, obj map[string]any) []string {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := v1alpha1.DecodeObjects(data)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "document 1: ")
		path, _, _ := strings.Cut(msg, ": ")
		return []string{path + ": " + field.ErrorTypeInvalid.String()}
	}
	if len(objs) != 1 {
		t.Fatalf("decoded %d objects, want 1", len(objs))
	}
	return sorted(paths(v1alpha1.ValidateTenantQueue(objs[0].(*v1alpha1.TenantQueue))))
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

// TestImmutableQueueName: a pipeline's grants are charged to its queue,
// so spec.queueName may be neither changed, set nor removed after create.
func TestImmutableQueueName(t *testing.T) {
	s := newAPIServer(t)
	withQueue := func(name string) map[string]any {
		pt := pipeline()
		pt.Spec.QueueName = name
		return toUnstructured(t, pt)
	}
	for name, tc := range map[string]struct {
		old, new string
		want     []string
	}{
		"unchanged":  {old: "team-a", new: "team-a"},
		"changed":    {old: "team-a", new: "team-b", want: []string{"spec.queueName: Invalid value: queueName is immutable: a pipeline's grants are charged to its queue"}},
		"set":        {old: "", new: "team-b", want: []string{"spec.queueName: Invalid value: queueName is immutable: a pipeline's grants are charged to its queue"}},
		"removed":    {old: "team-a", new: "", want: []string{"spec.queueName: Invalid value: queueName is immutable: a pipeline's grants are charged to its queue"}},
		"both unset": {old: "", new: ""},
	} {
		t.Run(name, func(t *testing.T) {
			old := s.stored(t, withQueue(tc.old))
			if diff := cmp.Diff(tc.want, describe(s.update(withQueue(tc.new), old))); diff != "" {
				t.Errorf("API server errors on update (-want +got):\n%s", diff)
			}
		})
	}
}

func qtyPtr(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// TestImmutablePhasesAndIterate: the engine grants a phase for its
// template and gang, so spec.phases and spec.iterate may not change after
// create (as a Job's template); the fields that only order or clean up
// may.
func TestImmutablePhasesAndIterate(t *testing.T) {
	s := newAPIServer(t)
	const (
		phasesImmutable  = "spec.phases: Invalid value: phases are immutable: a running phase's grant was made for its template and gang; delete the PhasedTraining and create it again"
		iterateImmutable = "spec.iterate: Invalid value: iterate is immutable: the pipeline's iterations are counted against it; delete the PhasedTraining and create it again"
	)
	for name, tc := range map[string]struct {
		edit func(*v1alpha1.PhasedTraining)
		want []string
	}{
		"unchanged":       {edit: func(*v1alpha1.PhasedTraining) {}},
		"priority":        {edit: func(pt *v1alpha1.PhasedTraining) { pt.Spec.Priority = ptr.To[int32](100) }},
		"podTTL":          {edit: func(pt *v1alpha1.PhasedTraining) { pt.Spec.PodTTLSecondsAfterFinished = ptr.To[int32](60) }},
		"labels":          {edit: func(pt *v1alpha1.PhasedTraining) { pt.Labels = map[string]string{"team": "a"} }},
		"a phase's gang":  {edit: func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases[0].Gang.Min = 4 }, want: []string{phasesImmutable}},
		"a phase's image": {edit: func(pt *v1alpha1.PhasedTraining) { pt.Spec.Phases[1].Template.Spec.Containers[0].Image = "other:2" }, want: []string{phasesImmutable}},
		"a phase added": {edit: func(pt *v1alpha1.PhasedTraining) {
			pt.Spec.Phases = append(pt.Spec.Phases, v1alpha1.Phase{Name: "export", DependsOn: []string{"train"}, Gang: v1alpha1.Gang{Min: 1}, Template: worker()})
		}, want: []string{phasesImmutable}},
		"maxIterations":   {edit: func(pt *v1alpha1.PhasedTraining) { pt.Spec.Iterate.MaxIterations = 10 }, want: []string{iterateImmutable}},
		"iterate removed": {edit: func(pt *v1alpha1.PhasedTraining) { pt.Spec.Iterate = nil }, want: []string{iterateImmutable}},
		"phases and iterate too": {edit: func(pt *v1alpha1.PhasedTraining) {
			pt.Spec.Phases[0].Gang.Min = 1
			pt.Spec.Iterate.Until = "iteration >= 2"
		}, want: []string{iterateImmutable, phasesImmutable}},
	} {
		t.Run(name, func(t *testing.T) {
			old := s.stored(t, toUnstructured(t, pipeline()))
			pt := pipeline()
			tc.edit(pt)
			if diff := cmp.Diff(tc.want, sorted(describe(s.update(toUnstructured(t, pt), old)))); diff != "" {
				t.Errorf("API server errors on update (-want +got):\n%s", diff)
			}
		})
	}
}
