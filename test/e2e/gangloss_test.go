//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// A worker of a running gang preempted by a higher-priority pod breaks the
// gang: phasegang releases it whole (the surviving worker's pod goes too)
// and queues the same attempt again, with the cause in the history and an
// Event, instead of re-creating the lost worker alone. Once the
// preemptor is done, the gang runs again and the pipeline succeeds on its
// first attempt.
func TestPreemptedWorkerReleasesTheGang(t *testing.T) {
	ns := namespace(t)
	nodes(t, "pool-preempt", 2, 4)
	urgentClass := priorityClass(t, "e2e-urgent", 1000000)
	pt := create(t, wrappers.NewPT(ns, "train").Phase("train", 2).PodTemplate(worker("pool-preempt", 4, 12, "")).Obj())
	waitState(t, pt, v1alpha1.PipelineRunning, 30*time.Second)

	urgent := worker("pool-preempt", 4, 3, "")
	urgent.Spec.PriorityClassName = urgentClass
	preemptor := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "urgent", Annotations: urgent.Annotations}, Spec: urgent.Spec}
	if err := k8s.Create(context.Background(), preemptor); err != nil {
		t.Fatal(err)
	}

	var lost v1alpha1.PhaseEvent
	eventually(t, 30*time.Second, "the gang released for its lost worker", func() (bool, error) {
		cur := get(t, pt)
		for _, e := range cur.Status.Phases[0].History {
			if e.Type == v1alpha1.PhaseEventWorkerLost {
				lost = e
				return true, nil
			}
		}
		return false, fmt.Errorf("no WorkerLost yet: %s", describe(cur))
	})
	if !strings.Contains(lost.Message, "PreemptionByScheduler") || !strings.Contains(lost.Message, "released whole") {
		t.Errorf("WorkerLost says %q, want kube-scheduler's preemption and the release", lost.Message)
	}
	// The survivor goes too: while the preemptor holds a node, no worker
	// of the gang runs (8 GPUs needed, 4 free).
	eventually(t, 10*time.Second, "no worker running while the gang is released", func() (bool, error) {
		for _, p := range pods(t, ns, map[string]string{"phasegang.dev/managed": "true"}) {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.CreationTimestamp.Time.Before(lost.Time.Time) {
				return false, fmt.Errorf("pod %s of the released gang still runs", p.Name)
			}
		}
		return true, nil
	})
	eventuallyEvent(t, ns, "WorkerLost", "released whole")

	done := waitState(t, pt, v1alpha1.PipelineSucceeded, 60*time.Second)
	if n := len(done.Status.Phases); n != 1 || done.Status.Phases[0].Attempt != 0 {
		t.Errorf("want the first attempt to succeed, no retry spent: %s", describe(done))
	}
	t.Logf("WorkerLost: %s", lost.Message)
}

// A worker pod that admission refuses mid-gang (a ValidatingAdmissionPolicy
// denies worker 2 of attempt 0: the pod check at arrival, which tries
// worker 0, passes) releases the whole gang: the attempt fails with the API
// server's words, its created pods are deleted, and the retry, which the
// policy admits, succeeds.
func TestRefusedWorkerPodReleasesTheGang(t *testing.T) {
	ns := namespace(t)
	nodes(t, "pool-refuse", 1, 8)
	denyWorker2(t, ns)
	pt := create(t, wrappers.NewPT(ns, "train").Phase("train", 4).PodTemplate(worker("pool-refuse", 1, 3, "")).
		With(func(p *v1alpha1.Phase) { p.MaxRetries = 1 }).Obj())

	var failed v1alpha1.PhaseStatus
	eventually(t, 30*time.Second, "attempt 0 failed on the refused pod", func() (bool, error) {
		cur := get(t, pt)
		for _, ps := range cur.Status.Phases {
			if ps.Attempt == 0 && ps.State == v1alpha1.PhaseFailed {
				failed = ps
				return true, nil
			}
		}
		return false, fmt.Errorf("%s", describe(cur))
	})
	if !strings.Contains(failed.Message, "did not start: the API server refused a worker's pod") || !strings.Contains(failed.Message, "e2e refuses worker 2") {
		t.Errorf("attempt 0 says %q, want the refusal in the API server's words", failed.Message)
	}
	done := waitState(t, pt, v1alpha1.PipelineSucceeded, 60*time.Second)
	// Attempt 0's pods never all ran as a gang: none of them succeeded.
	for _, p := range pods(t, ns, map[string]string{"phasegang.dev/managed": "true", "phasegang.dev/attempt": "0"}) {
		if p.Status.Phase == corev1.PodSucceeded {
			t.Errorf("pod %s of the refused gang ran to the end", p.Name)
		}
	}
	if last := done.Status.Phases[len(done.Status.Phases)-1]; last.Attempt != 1 || last.State != v1alpha1.PhaseSucceeded {
		t.Errorf("want attempt 1 to succeed: %s", describe(done))
	}
	t.Logf("refused: %s", failed.Message)
}

// denyWorker2 makes the API server refuse the pod of worker 2 of any
// first attempt in namespace ns.
func denyWorker2(t *testing.T, ns string) {
	t.Helper()
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-deny-worker-2-" + ns},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: `!(has(object.metadata.labels) && object.metadata.labels[?'phasegang.dev/worker-index'].orValue('') == '2' && object.metadata.labels[?'phasegang.dev/attempt'].orValue('') == '0')`,
				Message:    "e2e refuses worker 2",
				Reason:     new(metav1.StatusReasonForbidden),
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := k8s.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), o) })
	}
	// The policy takes effect when the API server's informer has it: probe
	// with a dry-run pod until it is refused.
	probe := worker("pool-refuse", 1, 1, "")
	eventually(t, 20*time.Second, "the admission policy in effect", func() (bool, error) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "probe-",
			Labels: map[string]string{"phasegang.dev/worker-index": "2", "phasegang.dev/attempt": "0"}}, Spec: probe.Spec}
		err := k8s.Create(context.Background(), p, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "e2e refuses worker 2"), err
	})
}
