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
	"github.com/phasegang/phasegang/internal/wrappers"
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
	pt := create(t, wrappers.NewPT(ns, "race").Phase("train", 8).PodTemplate(tmpl).Obj())

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
	intrude(t, ns, granted)
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
	ungateUntilDone(t, pt)
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

// When no other node fits the displaced worker, the gang is released
// whole and the same attempt queued again (its age kept, no retry spent):
// its pods go, it waits for capacity with the numbers, and once the other
// pod is gone it is re-reserved and runs.
func TestUnmanagedPodDisplacesGang(t *testing.T) {
	ns := namespace(t)
	nodes(t, "pool-displace", 1, 8)
	tmpl := worker("pool-displace", 1, 2, "")
	tmpl.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "e2e.phasegang.dev/hold"}}
	pt := create(t, wrappers.NewPT(ns, "displaced").Phase("train", 8).PodTemplate(tmpl).Obj())
	eventually(t, 30*time.Second, "the gang granted", func() (bool, error) {
		cur := get(t, pt)
		return len(cur.Status.Phases) > 0 && cur.Status.Phases[0].Workers.Granted == 8, fmt.Errorf("%s", describe(cur))
	})
	intruder := intrude(t, ns, "pool-displace-0")
	took := time.Now()
	var cur *v1alpha1.PhasedTraining
	eventually(t, 10*time.Second, "the gang released and queued again", func() (bool, error) {
		cur = get(t, pt)
		ps := cur.Status.Phases[0]
		return ps.State == v1alpha1.PhaseQueued && strings.Contains(ps.WaitingFor, "7 fit now"), fmt.Errorf("%s", describe(cur))
	})
	t.Logf("released and queued after %v: %s", time.Since(took).Round(10*time.Millisecond), cur.Status.Phases[0].Message)
	ps := cur.Status.Phases[0]
	if ps.Attempt != 0 || len(cur.Status.Phases) != 1 {
		t.Errorf("requeued as attempt %d (%d phase entries), want the same attempt 0", ps.Attempt, len(cur.Status.Phases))
	}
	if want := "no other node fits worker 7; the gang was released and queued again"; !strings.Contains(ps.Message, want) {
		t.Errorf("message %q, want it to contain %q", ps.Message, want)
	}
	if h := ps.History; len(h) == 0 || h[len(h)-1].Type != v1alpha1.PhaseEventDisplaced {
		t.Errorf("history %v, want it to end with Displaced", h)
	}
	eventually(t, 10*time.Second, "the released gang's pods deleted", func() (bool, error) {
		left := pods(t, ns, map[string]string{"phasegang.dev/pipeline": "displaced"})
		return len(left) == 0, fmt.Errorf("%d pods left", len(left))
	})
	if err := k8s.Delete(context.Background(), intruder, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	ungateUntilDone(t, pt)
}

// intrude creates, in ns, a pod phasegang does not manage that names node
// and takes one GPU there.
func intrude(t *testing.T, ns, node string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "intruder"},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "c", Image: "other:e2e", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
			}}},
		},
	}
	if err := k8s.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// ungateUntilDone lifts the scheduling gate of every worker pod of pt
// (re-created ones included) until the pipeline succeeds.
func ungateUntilDone(t *testing.T, pt *v1alpha1.PhasedTraining) {
	t.Helper()
	eventually(t, 60*time.Second, "the pipeline to succeed", func() (bool, error) {
		for _, p := range pods(t, pt.Namespace, map[string]string{"phasegang.dev/pipeline": pt.Name}) {
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
}

// kube-scheduler refuses a pinned worker for a reason the engine does not
// model: another pipeline's running workers carry the label its required
// pod anti-affinity selects, on every node. The worker is moved once to a
// node with free capacity, refused there too, and then stays, saying so
// in its history and an Event; once the other pipeline ends it binds and
// the pipeline succeeds. No delete-and-create loop.
func TestRefusedWorkerMovesOnce(t *testing.T) {
	ns := namespace(t)
	nodes(t, "pool-refuse", 2, 8)
	apart := func(seconds int) corev1.PodTemplateSpec {
		tmpl := worker("pool-refuse", 1, seconds, "")
		tmpl.Labels = map[string]string{"app": "shared"}
		tmpl.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "shared"}},
			}},
		}}
		return tmpl
	}
	first := create(t, wrappers.NewPT(ns, "first").Phase("train", 2).PodTemplate(apart(8)).Obj())
	waitState(t, first, v1alpha1.PipelineRunning, 30*time.Second)
	second := create(t, wrappers.NewPT(ns, "second").Phase("train", 1).PodTemplate(apart(1)).Obj())

	var history []v1alpha1.PhaseEvent
	eventually(t, 20*time.Second, "the refused worker moved once, then left where it is", func() (bool, error) {
		cur := get(t, second)
		if len(cur.Status.Phases) == 0 {
			return false, nil
		}
		history = cur.Status.Phases[0].History
		for _, e := range history {
			if e.Type == v1alpha1.PhaseEventRefused {
				return true, nil
			}
		}
		return false, fmt.Errorf("%s; history %v", describe(cur), history)
	})
	var moved, refused int
	for _, e := range history {
		switch e.Type {
		case v1alpha1.PhaseEventMoved:
			moved++
			t.Logf("Moved: %s", e.Message)
		case v1alpha1.PhaseEventRefused:
			refused++
			t.Logf("Refused: %s", e.Message)
			if !strings.Contains(e.Message, "anti-affinity") || !strings.Contains(e.Message, "so it stays reserved there") {
				t.Errorf("Refused says %q, want kube-scheduler's anti-affinity reason and that it stays", e.Message)
			}
		}
	}
	if moved != 1 || refused != 1 {
		t.Errorf("history %v: want one Moved, then one Refused", history)
	}
	eventually(t, 10*time.Second, "a WorkerRefused Event", func() (bool, error) {
		var evs corev1.EventList
		if err := k8s.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "WorkerRefused" && e.InvolvedObject.Name == "second" {
				return true, nil
			}
		}
		return false, fmt.Errorf("no WorkerRefused event among %d", len(evs.Items))
	})
	waitState(t, first, v1alpha1.PipelineSucceeded, 30*time.Second)
	waitState(t, second, v1alpha1.PipelineSucceeded, 30*time.Second)
	if h := get(t, second).Status.Phases[0].History; len(h) > len(history)+1 {
		t.Errorf("the history grew from %d to %d entries while it waited: %v", len(history), len(h), h)
	}
}
