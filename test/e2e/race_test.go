//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// A pod phasegang does not manage names a granted node (spec.nodeName)
// between the grant and kube-scheduler binding the gang's pinned pods. The
// gang's pods carry a scheduling gate, so that window stays open until the
// test lifts it. Within seconds the engine sees the node's pods and grants
// exceed its allocatable and moves the displaced worker to the other node
// (or, if nothing fitted, would release and re-reserve the gang); the
// history and an Event name the node and the pod, and once the gates are
// lifted every worker binds and the pipeline succeeds.
func TestUnmanagedPodTakesGrantedNode(t *testing.T) {
	ns := namespace(t)
	pool := nodes(t, "pool-race", 2, 8)
	tmpl := worker("pool-race", 1, 2, "")
	tmpl.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "e2e.phasegang.dev/hold"}}
	pt := makePT(ns, "race").phase("train", 8, 8, tmpl).create(t)

	var granted string
	eventually(t, 30*time.Second, "the gang granted on one node", func() (bool, error) {
		cur := get(t, pt)
		if len(cur.Status.Phases) == 0 || len(cur.Status.Phases[0].Reservation) != 1 {
			return false, fmt.Errorf("%s", describe(cur))
		}
		for node := range cur.Status.Phases[0].Reservation {
			granted = node
		}
		return true, nil
	})
	other := pool[0]
	if other == granted {
		other = pool[1]
	}
	intruder := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "intruder"},
		Spec: corev1.PodSpec{
			NodeName:    granted,
			Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "c", Image: "other:e2e", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
			}}},
		},
	}
	if err := k8s.Create(context.Background(), intruder); err != nil {
		t.Fatal(err)
	}
	took := time.Now()

	var what v1alpha1.PhaseEvent
	eventually(t, 10*time.Second, "the displaced worker moved, or the gang re-reserved", func() (bool, error) {
		cur := get(t, pt)
		for _, ps := range cur.Status.Phases {
			for _, e := range ps.History {
				if e.Type == v1alpha1.PhaseEventMoved || e.Type == v1alpha1.PhaseEventDisplaced {
					what = e
					return true, nil
				}
			}
		}
		return false, fmt.Errorf("%s", describe(cur))
	})
	t.Logf("%s after %v: %s", what.Type, time.Since(took).Round(10*time.Millisecond), what.Message)
	if want := "node " + granted + " can no longer hold its reserved workers: pod " + ns + "/intruder, which phasegang does not manage, took the capacity"; !strings.Contains(what.Message, want) {
		t.Errorf("history says %q, want it to contain %q", what.Message, want)
	}
	cur := get(t, pt)
	if what.Type == v1alpha1.PhaseEventMoved {
		if want := "moved worker 7 to " + other; !strings.Contains(what.Message, want) {
			t.Errorf("history says %q, want %q", what.Message, want)
		}
		if got := cur.Status.Phases[0].Reservation; got[granted] != 7 || got[other] != 1 {
			t.Errorf("reservation %v, want 7 on %s and 1 on %s", got, granted, other)
		}
	}
	eventually(t, 10*time.Second, "an Event naming the node", func() (bool, error) {
		var evs corev1.EventList
		if err := k8s.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if (e.Reason == "WorkersMoved" || e.Reason == "Displaced") && strings.Contains(e.Message, "node "+granted) {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events, none WorkersMoved or Displaced", len(evs.Items))
	})

	// Lift the gate of every worker pod, the re-created one included,
	// until the pipeline ends: every worker binds where it is reserved.
	eventually(t, 60*time.Second, "the pipeline to succeed", func() (bool, error) {
		for _, p := range pods(t, ns, map[string]string{"phasegang.dev/pipeline": "race"}) {
			if len(p.Spec.SchedulingGates) == 0 {
				continue
			}
			p.Spec.SchedulingGates = nil
			if err := k8s.Update(context.Background(), &p); err != nil {
				continue // changed meanwhile: next round
			}
		}
		cur := get(t, pt)
		if cur.Status.State == v1alpha1.PipelineFailed {
			t.Fatalf("failed: %s", describe(cur))
		}
		return cur.Status.State == v1alpha1.PipelineSucceeded, fmt.Errorf("state %s: %s", cur.Status.State, describe(cur))
	})
	// No worker ever bound to the taken node beyond what it holds.
	var bound int
	for _, p := range pods(t, ns, map[string]string{"phasegang.dev/pipeline": "race"}) {
		if p.Spec.NodeName == granted {
			bound++
		}
	}
	if bound > 7 {
		t.Errorf("%d workers ran on %s, which holds 7 next to the intruder", bound, granted)
	}
}
