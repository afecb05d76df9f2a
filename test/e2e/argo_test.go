//go:build e2e

package e2e

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/cmd/phasegang/argo"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// The success and failure conditions of the generated Argo resource step,
// evaluated as Argo's executor does at run time, against PhasedTrainings
// read back from the real API server: one that succeeded, one that failed,
// and one still running.
func TestArgoConditionsOnRealObjects(t *testing.T) {
	ns := namespace(t)
	nodes(t, "pool-argo", 1, 8)
	ok := create(t, wrappers.NewPT(ns, "ok").Phase("train", 2).PodTemplate(worker("pool-argo", 1, 2, "")).Obj())
	failing := worker("pool-argo", 1, 2, "")
	failing.Annotations["phasegang.dev/sim-exit-code"] = "3"
	bad := create(t, wrappers.NewPT(ns, "bad").Phase("train", 2).PodTemplate(failing).Obj())
	slow := create(t, wrappers.NewPT(ns, "slow").Phase("train", 2).PodTemplate(worker("pool-argo", 1, 300, "")).Obj())

	cases := []struct {
		pt                *v1alpha1.PhasedTraining
		state             v1alpha1.PipelineState
		succeeded, failed bool
	}{
		{ok, v1alpha1.PipelineSucceeded, true, false},
		{bad, v1alpha1.PipelineFailed, false, true},
		{slow, v1alpha1.PipelineRunning, false, false},
	}
	for _, tc := range cases {
		cur := waitState(t, tc.pt, tc.state, 90*time.Second)
		wft, err := argo.WorkflowTemplate(cur, argo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var tmpl = wft.GetTemplateByName(argo.ResourceTemplate)
		if tmpl == nil {
			t.Fatalf("no %s template", argo.ResourceTemplate)
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
		if err != nil {
			t.Fatal(err)
		}
		s, f, err := argo.EvaluateConditions(tmpl, obj)
		if err != nil {
			t.Fatalf("%s: %v", cur.Name, err)
		}
		if s != tc.succeeded || f != tc.failed {
			t.Errorf("%s (state %s): successCondition %q → %v, failureCondition %q → %v; want %v, %v",
				cur.Name, cur.Status.State, tmpl.Resource.SuccessCondition, s, tmpl.Resource.FailureCondition, f, tc.succeeded, tc.failed)
		}
		t.Logf("%s: state %s → Argo would report succeeded=%v failed=%v", cur.Name, cur.Status.State, s, f)
	}
}
