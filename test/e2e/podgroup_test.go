//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/internal/wrappers"
)

// With Kubernetes' gang API served (`make e2e` with
// E2E_UP_ARGS=--workload-api; .ci/run does both), a reserved gang gets a
// PodGroup its pods join, and a pod phasegang does not manage that takes a
// granted node between the grant and the binding makes kube-scheduler bind
// none of the gang, not part of it. The race is made certain by a
// scheduling gate in the template: the gang's pods exist, gated, while the
// other pod is bound to worker 1's node; then the gates are lifted, worker
// 0's first. The engine sees the taken node as well and, with nothing
// else to hold worker 1, releases the gang and queues it again (see
// race_test.go); no worker binds meanwhile. Without the API the test is
// skipped (phasegang's own race handling is then all there is;
// docs/controller.md).
func TestPodGroupBindsTheGangWhole(t *testing.T) {
	if _, err := k8s.RESTMapper().RESTMapping(schema.GroupKind{Group: "scheduling.k8s.io", Kind: "PodGroup"}, "v1beta1"); meta.IsNoMatchError(err) {
		t.Skip("the API server does not serve scheduling.k8s.io/v1beta1 PodGroups (run with E2E_UP_ARGS=--workload-api)")
	}
	ns := namespace(t)
	nodes(t, "pool-pg", 2, 8)
	const hold = "e2e.phasegang.dev/hold"
	tmpl := worker("pool-pg", 8, 3, "")
	tmpl.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: hold}}
	pt := create(t, wrappers.NewPT(ns, "train").Phase("train", 2).PodTemplate(tmpl).Obj())

	var group schedulingv1beta1.PodGroup
	var node1 string
	eventually(t, 30*time.Second, "the gang's PodGroup and pods", func() (bool, error) {
		var groups schedulingv1beta1.PodGroupList
		if err := k8s.List(context.Background(), &groups, client.InNamespace(ns)); err != nil {
			return false, err
		}
		ps := pods(t, ns, map[string]string{"phasegang.dev/managed": "true"})
		if len(groups.Items) != 1 || len(ps) != 2 {
			return false, fmt.Errorf("%d groups, %d pods", len(groups.Items), len(ps))
		}
		group = groups.Items[0]
		for _, p := range ps {
			if sg := p.Spec.SchedulingGroup; sg == nil || sg.PodGroupName == nil || *sg.PodGroupName != group.Name {
				return false, fmt.Errorf("pod %s is not in group %s: %+v", p.Name, group.Name, sg)
			}
		}
		node1 = get(t, pt).Status.Phases[0].Assignments[1]
		return true, nil
	})
	if g := group.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != 2 {
		t.Fatalf("group %s has policy %+v, want gang minCount 2", group.Name, group.Spec.SchedulingPolicy)
	}

	// Another workload takes worker 1's node (spec.nodeName: no scheduler
	// involved) while the gang's pods are gated.
	other := worker("pool-pg", 8, 6, "")
	other.Spec.NodeName = node1
	intruder := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "intruder", Annotations: other.Annotations}, Spec: other.Spec}
	if err := k8s.Create(context.Background(), intruder); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the intruder running on "+node1, func() (bool, error) {
		var p corev1.Pod
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(intruder), &p)
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	// The engine sees the taken node too: nothing else fits worker 1, so
	// the gang is released and queued again (its pods deleted, re-made
	// gated once it is reserved anew). Whatever pods the gang has get
	// their gates lifted; while the intruder holds node 1, no worker of
	// the gang is bound: not worker 0 on its free node either.
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		var p corev1.Pod
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(intruder), &p); err != nil || p.Status.Phase != corev1.PodRunning {
			break
		}
		for _, w := range pods(t, ns, map[string]string{"phasegang.dev/managed": "true"}) {
			if w.Spec.NodeName != "" {
				t.Fatalf("worker pod %s was bound to %s while its gang's other worker could not be", w.Name, w.Spec.NodeName)
			}
			if len(w.Spec.SchedulingGates) > 0 {
				w.Spec.SchedulingGates = nil
				_ = k8s.Update(context.Background(), &w) // changed meanwhile: next round
			}
		}
	}
	// Once the intruder is done, the gang binds whole and finishes (the
	// pods of a new reservation are gated too: lift them as they come).
	ungateUntilDone(t, pt)
	done := get(t, pt)
	// Read from the containers' times: the gang ran after the intruder.
	intruderEnd := finishedAt(t, ns, "intruder")
	for _, w := range pods(t, ns, map[string]string{"phasegang.dev/managed": "true"}) {
		if s := startedAt(w); s.Before(intruderEnd) {
			t.Errorf("worker %s started at %s, before the intruder ended at %s", w.Name, s.Format(time.TimeOnly), intruderEnd.Format(time.TimeOnly))
		}
	}
	t.Logf("succeeded %s after the intruder's creation: %s", time.Since(intruder.CreationTimestamp.Time).Round(time.Second), describe(done))
}

func startedAt(p corev1.Pod) time.Time {
	for _, cs := range p.Status.ContainerStatuses {
		if r := cs.State.Terminated; r != nil {
			return r.StartedAt.Time
		}
	}
	return time.Time{}
}

func finishedAt(t *testing.T, ns, name string) time.Time {
	t.Helper()
	var p corev1.Pod
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if r := cs.State.Terminated; r != nil {
			return r.FinishedAt.Time
		}
	}
	t.Fatalf("pod %s has not finished: %s", name, p.Status.Phase)
	return time.Time{}
}
