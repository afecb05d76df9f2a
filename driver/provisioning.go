package driver

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
)

// Asking a cluster autoscaler for a gang's nodes.
//
// phasegang creates no pod until a gang is granted whole, so a cluster
// autoscaler, which scales up for pending pods, never sees a gang that
// does not fit. A ProvisioningRequest (autoscaling.x-k8s.io/v1, served by
// cluster-autoscaler's CRD, the API Kueue uses for the same purpose) asks
// for the whole gang's capacity at once instead: a PodTemplate of one
// worker and the gang's min as the count. The autoscaler adds the nodes
// (atomically with class best-effort-atomic-scale-up) and sets
// Provisioned; the engine then sees the nodes and grants the gang on them
// as on any other node. Nothing about admission changes: the request only
// makes capacity appear.

// ProvisioningRequest's API.
const (
	ProvisioningGroup   = "autoscaling.x-k8s.io"
	ProvisioningVersion = "v1"
	ProvisioningKind    = "ProvisioningRequest"
	// ProvisioningAtomicClass is cluster-autoscaler's class that adds all
	// of a request's nodes or none.
	ProvisioningAtomicClass = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
)

// ProvisioningWant is one gang that should have a ProvisioningRequest:
// its PodTemplate and the request naming it (same name).
type ProvisioningWant struct {
	Gang     engine.GangKey
	Template *corev1.PodTemplate
	Request  *unstructured.Unstructured
}

// WantedProvisioning lists the gangs that should have a
// ProvisioningRequest after a cycle: queued gangs that waited at least
// delay and do not fit the current nodes (they wait for capacity, or no
// current node could ever hold them; not gangs a quota or queue holds
// back, which nodes would not help), and granted gangs that have one
// already (kept until their phase attempt ends, so the autoscaler does not
// take the nodes back while the pods start). have holds the existing
// requests as namespace/name.
func WantedProvisioning(plan engine.Plan, d *Demand, class string, delay time.Duration, now time.Time, have map[string]bool) []ProvisioningWant {
	want := map[engine.GangKey]bool{}
	for _, w := range plan.Waiting {
		if w.Reason == engine.WaitCapacity {
			want[w.Gang] = true
		}
	}
	for _, inf := range plan.Infeasible {
		if inf.Nodes {
			want[inf.Gang] = true
		}
	}
	queued := map[engine.GangKey]engine.Request{}
	for _, r := range d.Queue {
		queued[r.Gang] = r
	}
	var out []ProvisioningWant
	add := func(key engine.GangKey, count int32) {
		g, ok := d.Gangs[key]
		if !ok || g.Phase == nil {
			return
		}
		tmpl, req := BuildProvisioning(g.Pipeline, g.Phase, g.Status(), count, class)
		out = append(out, ProvisioningWant{Gang: key, Template: tmpl, Request: req})
	}
	for _, r := range d.Queue {
		if want[r.Gang] && now.Sub(r.Queued) >= delay {
			add(r.Gang, r.Min)
		}
	}
	keep := func(key engine.GangKey, min int32) {
		if g, ok := d.Gangs[key]; ok && have[g.Pipeline.Namespace+"/"+ProvisioningName(g.Pipeline, g.Status())] {
			add(key, min)
		}
	}
	for _, gr := range d.Ledger {
		keep(gr.Gang, gr.Min)
	}
	for _, rv := range plan.Reserves {
		if r, ok := queued[rv.Gang]; ok {
			keep(rv.Gang, r.Min)
		}
	}
	return out
}

// ProvisioningName is the PodTemplate and ProvisioningRequest of a phase
// attempt.
func ProvisioningName(pt *v1alpha1.PhasedTraining, ps *v1alpha1.PhaseStatus) string {
	return DNSLabel(InstanceName(pt, ps.Name, ps.Iteration, ps.Attempt), 253)
}

// BuildProvisioning is the PodTemplate (one worker as phasegang would
// create it, pinned to no node) and the ProvisioningRequest for count of
// them, both owned by the pipeline and labelled as its pods are.
func BuildProvisioning(pt *v1alpha1.PhasedTraining, phase *v1alpha1.Phase, ps *v1alpha1.PhaseStatus, count int32, class string) (*corev1.PodTemplate, *unstructured.Unstructured) {
	name := ProvisioningName(pt, ps)
	owner := *metav1.NewControllerRef(pt, v1alpha1.GroupVersion.WithKind(v1alpha1.Kind))
	pod := BuildWorkerPod(pt, phase, ps, 0, "", count)
	tmpl := &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pt.Namespace, Labels: workerLabels(pt, ps), OwnerReferences: []metav1.OwnerReference{owner}},
		Template:   corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations}, Spec: pod.Spec},
	}
	req := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ProvisioningGroup + "/" + ProvisioningVersion,
		"kind":       ProvisioningKind,
		"spec": map[string]any{
			"provisioningClassName": class,
			"podSets": []any{map[string]any{
				"podTemplateRef": map[string]any{"name": name},
				"count":          int64(count),
			}},
		},
	}}
	req.SetName(name)
	req.SetNamespace(pt.Namespace)
	req.SetLabels(workerLabels(pt, ps))
	req.SetOwnerReferences([]metav1.OwnerReference{owner})
	return tmpl, req
}

// ProvisioningState reads a ProvisioningRequest's outcome from its
// conditions: Provisioned or Failed (with the autoscaler's message), or
// neither yet.
func ProvisioningState(req *unstructured.Unstructured) (provisioned, failed bool, message string) {
	conds, _, _ := unstructured.NestedSlice(req.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["status"] != "True" {
			continue
		}
		msg, _ := m["message"].(string)
		switch m["type"] {
		case "Provisioned":
			provisioned, message = true, msg
		case "Failed":
			failed, message = true, msg
		}
	}
	return provisioned, failed, message
}
