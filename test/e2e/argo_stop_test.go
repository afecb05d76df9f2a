//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/cmd/phasegang/argo"
	"github.com/phasegang/phasegang/internal/wrappers"
)

var argoVar = regexp.MustCompile(`\{\{\s*([^}\s]+)\s*\}\}`)

// argoSubst substitutes Argo's {{...}} variables as the workflow
// controller does before the executor runs a resource template.
func argoSubst(t *testing.T, s string, vars map[string]string) string {
	t.Helper()
	return argoVar.ReplaceAllStringFunc(s, func(m string) string {
		v, ok := vars[argoVar.FindStringSubmatch(m)[1]]
		if !ok {
			t.Fatalf("no value for %s", m)
		}
		return v
	})
}

// kubectlAs runs kubectl as the workflow's service account (impersonated),
// so RBAC decides as it would for Argo's executor.
func kubectlAs(t *testing.T, sa string, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--as", sa}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestArgoStepAndPipelineAgree plays the generated WorkflowTemplate's
// resource steps and its exit handler against the real API server, as
// Argo's executor runs them (workflow/executor/resource.go: `kubectl create
// -f manifest -o json`, then `kubectl delete --ignore-not-found FLAGS -o
// name`), as the service account of examples/argo/rbac.yaml. Four
// pipelines end Succeeded, Failed, Infeasible (a worker needs 16 GPUs, the
// nodes have 8: the step fails) and Running (the workflow was stopped);
// the exit handler deletes the Infeasible and the Running one, which could
// still run, orphaned from their workflow, and keeps the other two.
func TestArgoStepAndPipelineAgree(t *testing.T) {
	ns := namespace(t)
	pool := "pool-argo-stop"
	nodes(t, pool, 1, 8)
	// The documented RBAC, for this test's namespace ("for another
	// namespace, change every `namespace: ml`").
	rbac, err := os.ReadFile(filepath.Join(repoRoot, "examples", "argo", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	apply := exec.Command("kubectl", "apply", "-f", "-")
	apply.Stdin = strings.NewReader(strings.ReplaceAll(string(rbac), "namespace: ml", "namespace: "+ns))
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("applying examples/argo/rbac.yaml: %v\n%s", err, out)
	}
	sa := "system:serviceaccount:" + ns + ":phasegang-argo"
	vars := map[string]string{"workflow.namespace": ns, "workflow.name": "wf-e2e", "inputs.parameters.traceparent": ""}

	failing := worker(pool, 1, 2, "")
	failing.Annotations["phasegang.dev/sim-exit-code"] = "3"
	huge := worker(pool, 1, 2, "")
	huge.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("16")
	huge.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = resource.MustParse("16")
	specs := map[string]*v1alpha1.PhasedTraining{
		"ok":    wrappers.NewPT(ns, "ok").Phase("train", 1).PodTemplate(worker(pool, 1, 1, `{"loss": "0.2"}`)).With(func(p *v1alpha1.Phase) { p.Outputs = []string{"loss"} }).Obj(),
		"bad":   wrappers.NewPT(ns, "bad").Phase("train", 1).PodTemplate(failing).Obj(),
		"never": wrappers.NewPT(ns, "never").Phase("train", 1).PodTemplate(huge).Obj(),
		"slow":  wrappers.NewPT(ns, "slow").Phase("train", 1).PodTemplate(worker(pool, 1, 300, "")).Obj(),
	}
	want := map[string]v1alpha1.PipelineState{"ok": v1alpha1.PipelineSucceeded, "bad": v1alpha1.PipelineFailed,
		"never": v1alpha1.PipelineInfeasible, "slow": v1alpha1.PipelineRunning}
	created := map[string]*v1alpha1.PhasedTraining{}
	for name, spec := range specs {
		wft, err := argo.WorkflowTemplate(spec, argo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		res := wft.GetTemplateByName(argo.ResourceTemplate)
		if wft.Spec.OnExit != argo.StopTemplate {
			t.Fatalf("onExit = %q", wft.Spec.OnExit)
		}
		out, err := kubectlAs(t, sa, argoSubst(t, res.Resource.Manifest, vars), "create", "-f", "-", "-o", "json")
		if err != nil {
			t.Fatalf("the resource step's create, as %s: %v\n%s", sa, err, out)
		}
		var pt v1alpha1.PhasedTraining
		if err := json.Unmarshal([]byte(out), &pt); err != nil {
			t.Fatal(err)
		}
		created[name] = &pt
	}
	for name, pt := range created {
		cur := waitState(t, pt, want[name], 60*time.Second)
		// The step polls as the service account; Argo's conditions decide.
		out, err := kubectlAs(t, sa, "", "get", "-n", ns, "phasedtrainings.phasegang.dev", cur.Name, "-o", "json")
		if err != nil {
			t.Fatalf("the resource step's get, as %s: %v\n%s", sa, err, out)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(out), &obj); err != nil {
			t.Fatal(err)
		}
		wft, _ := argo.WorkflowTemplate(specs[name], argo.Options{})
		s, f, err := argo.EvaluateConditions(wft.GetTemplateByName(argo.ResourceTemplate), obj)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s (%s): %s → step succeeded=%v failed=%v", name, cur.Name, cur.Status.State, s, f)
	}
	// Argo's executor reports outputs as this service account (the
	// WorkflowTaskResult CRD is Argo's, not installed here: ask RBAC).
	for _, verb := range []string{"create", "patch"} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: sa, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: "argoproj.io", Resource: "workflowtaskresults"},
		}}
		if err := k8s.Create(context.Background(), sar); err != nil {
			t.Fatal(err)
		}
		if !sar.Status.Allowed {
			t.Errorf("%s may not %s workflowtaskresults: %+v", sa, verb, sar.Status)
		}
	}

	// The workflow ends (its step failed on "never"): the exit handler.
	flags := make([]string, len(argo.StopFlags()))
	for i, f := range argo.StopFlags() {
		flags[i] = argoSubst(t, f, map[string]string{"workflow.namespace": ns, "workflow.name": "wf-e2e"})
	}
	out, err := kubectlAs(t, sa, "", append(append([]string{"delete", "--ignore-not-found"}, flags...), "-o", "name")...)
	if err != nil {
		t.Fatalf("the exit handler's delete, as %s: %v\n%s", sa, err, out)
	}
	t.Logf("exit handler deleted:\n%s", out)
	var deleted []string
	for _, l := range strings.Fields(out) {
		deleted = append(deleted, l[strings.LastIndex(l, "/")+1:])
	}
	slices.Sort(deleted)
	wantDeleted := []string{created["never"].Name, created["slow"].Name}
	slices.Sort(wantDeleted)
	if !slices.Equal(deleted, wantDeleted) {
		t.Errorf("the exit handler deleted %v, want the Infeasible and the Running pipeline %v", deleted, wantDeleted)
	}
	eventually(t, 30*time.Second, "the stopped pipelines and their pods gone", func() (bool, error) {
		var list v1alpha1.PhasedTrainingList
		if err := k8s.List(context.Background(), &list); err != nil {
			return false, err
		}
		left := map[string]bool{}
		for _, pt := range list.Items {
			if pt.Namespace == ns {
				left[pt.Name] = true
			}
		}
		if left[created["never"].Name] || left[created["slow"].Name] {
			return false, nil
		}
		if !left[created["ok"].Name] || !left[created["bad"].Name] {
			t.Fatalf("the exit handler deleted a finished pipeline: %v", left)
		}
		for _, p := range pods(t, ns, nil) {
			if strings.HasPrefix(p.Name, created["slow"].Name) && p.DeletionTimestamp == nil {
				return false, nil
			}
		}
		return true, nil
	})
}
