//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/internal/wrappers"
)

var provisioningList = schema.GroupVersionKind{Group: driver.ProvisioningGroup, Version: driver.ProvisioningVersion, Kind: driver.ProvisioningKind + "List"}

// A gang no current node can hold, with the controller asking a cluster
// autoscaler for nodes (--provisioning-class): phasegang creates a
// ProvisioningRequest for the whole gang and a PodTemplate of one worker;
// a test-side provisioner, standing in for cluster-autoscaler, reads them,
// adds kwok nodes of the template's pool for the gang and sets
// Provisioned; the gang is reserved whole on the new nodes and the
// pipeline succeeds; the request and template are deleted once the phase
// ends.
func TestProvisioningRequestAddsNodes(t *testing.T) {
	ctx := context.Background()
	out, err := exec.Command("kubectl", "apply", "--server-side", "-f", filepath.Join(repoRoot, "test/cluster/provisioningrequest-crd.yaml")).CombinedOutput()
	if err != nil {
		t.Fatalf("installing the ProvisioningRequest CRD: %v\n%s", err, out)
	}
	eventually(t, 30*time.Second, "the ProvisioningRequest API to be served", func() (bool, error) {
		var l unstructured.UnstructuredList
		l.SetGroupVersionKind(provisioningList)
		err := k8s.List(ctx, &l)
		return err == nil, err
	})
	controller.stop()
	extraControllerArgs = []string{"--provisioning-class", driver.ProvisioningAtomicClass, "--provisioning-delay", "0s"}
	controller = startController()
	t.Cleanup(func() {
		controller.stop()
		extraControllerArgs = nil
		controller = startController()
	})

	ns := namespace(t)
	pool := "pool-autoscaled-" + ns[strings.LastIndex(ns, "-")+1:]
	pt := create(t, wrappers.NewPT(ns, "grow").Phase("train", 6).PodTemplate(worker(pool, 1, 3, "")).Obj())

	// The request, for the gang's 6 workers, with a template of one.
	var req unstructured.Unstructured
	eventually(t, 30*time.Second, "a ProvisioningRequest for the gang", func() (bool, error) {
		var l unstructured.UnstructuredList
		l.SetGroupVersionKind(provisioningList)
		if err := k8s.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return false, err
		}
		if len(l.Items) != 1 {
			return false, fmt.Errorf("%d requests; pipeline: %s", len(l.Items), describe(get(t, pt)))
		}
		req = l.Items[0]
		return true, nil
	})
	if c, _, _ := unstructured.NestedString(req.Object, "spec", "provisioningClassName"); c != driver.ProvisioningAtomicClass {
		t.Errorf("provisioningClassName %q", c)
	}
	sets, _, _ := unstructured.NestedSlice(req.Object, "spec", "podSets")
	if len(sets) != 1 {
		t.Fatalf("podSets %v", sets)
	}
	set := sets[0].(map[string]any)
	count, _ := set["count"].(int64)
	tmplName, _ := set["podTemplateRef"].(map[string]any)["name"].(string)
	var tmpl corev1.PodTemplate
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: tmplName}, &tmpl); err != nil {
		t.Fatalf("the request's PodTemplate %s: %v", tmplName, err)
	}
	if count != 6 || tmpl.Template.Spec.NodeSelector["pool"] != pool {
		t.Fatalf("request for %d pods of pool %q, want the gang's 6 of pool %s", count, tmpl.Template.Spec.NodeSelector["pool"], pool)
	}
	eventuallyEvent(t, ns, "ProvisioningRequested", "asked the cluster autoscaler for 6 × ")

	// The stand-in autoscaler: nodes for count workers of the template's
	// GPUs, 4 GPUs a node, then Provisioned.
	gpus := tmpl.Template.Spec.Containers[0].Resources.Requests.Name("nvidia.com/gpu", "").Value()
	nodes(t, pool, int((count*gpus+3)/4), 4)
	unstructured.SetNestedSlice(req.Object, []any{map[string]any{
		"type": "Provisioned", "status": "True", "reason": "Provisioned", "message": "e2e provisioner added the nodes",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
	}}, "status", "conditions")
	if err := k8s.Status().Update(ctx, &req); err != nil {
		t.Fatalf("setting Provisioned: %v", err)
	}

	done := waitState(t, pt, v1alpha1.PipelineSucceeded, 60*time.Second)
	if h := done.Status.Phases[0].History; len(h) == 0 || h[0].Type != v1alpha1.PhaseEventReserved || h[0].Workers != 6 {
		t.Errorf("the gang was not reserved whole on the new nodes: %+v", h)
	}
	for _, p := range pods(t, ns, map[string]string{"phasegang.dev/managed": "true"}) {
		if !strings.HasPrefix(p.Spec.NodeName, pool+"-") {
			t.Errorf("worker %s ran on %q, not on a provisioned node", p.Name, p.Spec.NodeName)
		}
	}
	eventually(t, 20*time.Second, "the request and its template to be deleted after the phase", func() (bool, error) {
		var l unstructured.UnstructuredList
		l.SetGroupVersionKind(provisioningList)
		if err := k8s.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return false, err
		}
		var tl corev1.PodTemplateList
		if err := k8s.List(ctx, &tl, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return len(l.Items) == 0 && len(tl.Items) == 0, fmt.Errorf("%d requests, %d templates left", len(l.Items), len(tl.Items))
	})
}
