package driver

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// A gang waiting for capacity past the delay, or that no current node can
// hold, gets a ProvisioningRequest for its min workers with a PodTemplate
// of one worker pinned to no node; a gang held by quota, or waiting less
// than the delay, does not; a granted gang keeps the request it has.
func TestWantedProvisioning(t *testing.T) {
	queued := wrappers.Queued("train")
	queued.QueuedTime = wrappers.Time(now.Add(-time.Minute))
	pt := wrappers.MakePT("job").Phase("train", 4).Phase("test", 1).Status(queued).Obj()
	pt.Namespace = "ml"
	d := demandOf(pt)
	if len(d.Queue) != 1 {
		t.Fatalf("demand queue %+v, want the train gang", d.Queue)
	}
	key := d.Queue[0].Gang
	const class = ProvisioningAtomicClass
	cases := map[string]struct {
		plan  engine.Plan
		delay time.Duration
		have  map[string]bool
		want  int
	}{
		"waits for capacity":            {plan: engine.Plan{Waiting: []engine.Wait{{Gang: key, Reason: engine.WaitCapacity}}}, want: 1},
		"no node can hold it":           {plan: engine.Plan{Infeasible: []engine.Infeasible{{Gang: key, Nodes: true}}}, want: 1},
		"a quota can never admit it":    {plan: engine.Plan{Infeasible: []engine.Infeasible{{Gang: key}}}},
		"waits for its queue":           {plan: engine.Plan{Waiting: []engine.Wait{{Gang: key, Reason: engine.WaitQueue}}}},
		"waited less than the delay":    {plan: engine.Plan{Waiting: []engine.Wait{{Gang: key, Reason: engine.WaitCapacity}}}, delay: 2 * time.Minute},
		"granted now, had one: kept":    {plan: engine.Plan{Reserves: []engine.Reservation{{Gang: key}}}, have: map[string]bool{"ml/job-train": true}, want: 1},
		"granted now, had none: no new": {plan: engine.Plan{Reserves: []engine.Reservation{{Gang: key}}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := WantedProvisioning(tc.plan, d, class, tc.delay, now, tc.have)
			if len(got) != tc.want {
				t.Fatalf("%d wanted, want %d: %+v", len(got), tc.want, got)
			}
			if tc.want == 0 {
				return
			}
			w := got[0]
			if w.Request.GetName() != "job-train" || w.Request.GetNamespace() != "ml" || w.Template.Name != "job-train" {
				t.Errorf("request %s/%s, template %s; want ml/job-train for both", w.Request.GetNamespace(), w.Request.GetName(), w.Template.Name)
			}
			if c, _, _ := unstructured.NestedString(w.Request.Object, "spec", "provisioningClassName"); c != class {
				t.Errorf("class %q, want %q", c, class)
			}
			sets, _, _ := unstructured.NestedSlice(w.Request.Object, "spec", "podSets")
			if len(sets) != 1 || sets[0].(map[string]any)["count"] != int64(4) ||
				sets[0].(map[string]any)["podTemplateRef"].(map[string]any)["name"] != "job-train" {
				t.Errorf("podSets %v, want one set of the gang's 4 naming the template", sets)
			}
			if a := w.Template.Template.Spec.Affinity; a != nil && a.NodeAffinity != nil {
				t.Errorf("the template is pinned to a node: %+v", a.NodeAffinity)
			}
			if len(w.Request.GetOwnerReferences()) != 1 || len(w.Template.OwnerReferences) != 1 {
				t.Errorf("the request and template must be owned by the pipeline")
			}
		})
	}
}

// The autoscaler's outcome is read from the request's conditions.
func TestProvisioningState(t *testing.T) {
	req := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Accepted", "status": "True", "message": "ok"},
		map[string]any{"type": "Failed", "status": "True", "message": "no node group fits 16 nvidia.com/gpu"},
	}}}}
	if p, f, msg := ProvisioningState(req); p || !f || msg != "no node group fits 16 nvidia.com/gpu" {
		t.Errorf("state = %v %v %q, want failed with the autoscaler's message", p, f, msg)
	}
	if p, f, _ := ProvisioningState(&unstructured.Unstructured{Object: map[string]any{}}); p || f {
		t.Errorf("no conditions: %v %v, want neither", p, f)
	}
}
