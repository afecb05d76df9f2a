//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// A template the API server rejects (here a ValidatingAdmissionPolicy
// denies its pods; phasegang's own validation accepts it) is Invalid at
// arrival with the API server's message at the phase's field path, and
// no pod is created.
func TestPodRejectedByAPIServer(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	nodes(t, "pool-deny", 1, 8)
	const label = "e2e.phasegang.dev/deny"
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-deny-labelled-pods"},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: `!has(object.metadata.labels) || !('` + label + `' in object.metadata.labels)`,
				Message:    "e2e policy: pods labelled " + label + " are denied",
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-deny-labelled-pods"},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), o) })
	}
	// The policy takes a moment to be enforced: wait until a dry-run of a
	// labelled pod is denied.
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "probe-", Labels: map[string]string{label: "yes"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}
	eventually(t, 20*time.Second, "the policy to be enforced", func() (bool, error) {
		err := k8s.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err), err
	})

	tmpl := worker("pool-deny", 1, 1, "")
	tmpl.Labels = map[string]string{label: "yes"}
	pt := create(t, wrappers.NewPT(ns, "denied").
		Phase("prep", 1).PodTemplate(worker("pool-deny", 1, 1, "")).
		Phase("train", 1).PodTemplate(tmpl).DependsOn("prep").Obj())
	got := waitState(t, pt, v1alpha1.PipelineInvalid, 20*time.Second)
	var msg string
	for _, c := range got.Status.Conditions {
		if c.Type == string(v1alpha1.ConditionInvalid) {
			msg = c.Message
		}
	}
	for _, want := range []string{"spec.phases[1].template", "pods labelled " + label + " are denied"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Invalid message %q lacks %q", msg, want)
		}
	}
	// Not even the accepted first phase ran: no grant before the check.
	time.Sleep(2 * time.Second)
	if ps := pods(t, ns, nil); len(ps) > 0 {
		t.Errorf("%d pods created for a pipeline the API server rejects", len(ps))
	}
}
