//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// Host ports are a per-node constraint the engine honours, as
// kube-scheduler's NodePorts filter does: on two nodes, a 2-worker gang
// whose workers bind one host port each runs one worker per node and
// succeeds (before, the engine packed both on one node and kube-scheduler
// bound them one at a time), and a 4-worker one can never fit: it is
// Infeasible at once, saying why.
func TestHostPortGangs(t *testing.T) {
	ns := namespace(t)
	pool := nodes(t, "pool-port", 2, 8)
	withPort := func() corev1.PodTemplateSpec {
		tmpl := worker("pool-port", 1, 2, "")
		tmpl.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9100, HostPort: 9100}}
		return tmpl
	}
	four := create(t, wrappers.NewPT(ns, "four").Phase("train", 4).PodTemplate(withPort()).Obj())
	two := create(t, wrappers.NewPT(ns, "two").Phase("train", 2).PodTemplate(withPort()).Obj())

	var msg string
	eventually(t, 20*time.Second, "the 4-worker gang Infeasible", func() (bool, error) {
		cur := get(t, four)
		c := meta.FindStatusCondition(cur.Status.Conditions, string(v1alpha1.ConditionInfeasible))
		if c == nil || c.Status != metav1.ConditionTrue {
			return false, fmt.Errorf("%s", describe(cur))
		}
		msg = c.Message
		return cur.Status.State == v1alpha1.PipelineInfeasible, nil
	})
	if want := "needs 4 workers at once, each binding host port TCP/9100, so at most one per node, but 2 of the 2 matching nodes"; !strings.Contains(msg, want) {
		t.Errorf("Infeasible says %q, want it to contain %q", msg, want)
	}
	t.Logf("Infeasible: %s", msg)

	done := waitState(t, two, v1alpha1.PipelineSucceeded, 60*time.Second)
	if got := done.Status.Phases[0].Reservation; got[pool[0]] != 1 || got[pool[1]] != 1 {
		t.Errorf("reservation %v, want one worker on each of %v", got, pool)
	}
	for _, p := range pods(t, ns, map[string]string{"phasegang.dev/pipeline": "two"}) {
		if p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("pod %s is %s, want Succeeded", p.Name, p.Status.Phase)
		}
	}
	if ps := pods(t, ns, map[string]string{"phasegang.dev/pipeline": "four"}); len(ps) != 0 {
		t.Errorf("the Infeasible pipeline has %d pods", len(ps))
	}
}

// Required pod anti-affinity between a gang's own workers (one per node)
// is honoured, not refused: on two nodes a 2-worker gang runs one worker
// per node and succeeds, and a 3-worker one is Infeasible at once.
func TestOneWorkerPerNodeGangs(t *testing.T) {
	ns := namespace(t)
	pool := nodes(t, "pool-spread", 2, 8)
	spread := func(app string) corev1.PodTemplateSpec {
		tmpl := worker("pool-spread", 1, 2, "")
		tmpl.Labels = map[string]string{"app": app}
		tmpl.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			}},
		}}
		return tmpl
	}
	three := create(t, wrappers.NewPT(ns, "three").Phase("train", 3).PodTemplate(spread("three")).Obj())
	two := create(t, wrappers.NewPT(ns, "two").Phase("train", 2).PodTemplate(spread("two")).Obj())

	var msg string
	eventually(t, 20*time.Second, "the 3-worker gang Infeasible", func() (bool, error) {
		cur := get(t, three)
		c := meta.FindStatusCondition(cur.Status.Conditions, string(v1alpha1.ConditionInfeasible))
		if c == nil || c.Status != metav1.ConditionTrue {
			return false, fmt.Errorf("%s", describe(cur))
		}
		msg = c.Message
		return true, nil
	})
	if want := "its required pod anti-affinity (kubernetes.io/hostname) allows at most one per node"; !strings.Contains(msg, want) {
		t.Errorf("Infeasible says %q, want it to contain %q", msg, want)
	}
	t.Logf("Infeasible: %s", msg)
	done := waitState(t, two, v1alpha1.PipelineSucceeded, 60*time.Second)
	if got := done.Status.Phases[0].Reservation; got[pool[0]] != 1 || got[pool[1]] != 1 {
		t.Errorf("reservation %v, want one worker on each of %v", got, pool)
	}
}
