//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// createQuota creates a ResourceQuota and waits until kube-controller-manager
// has synced its status (the API server admits pods against status.hard).
func createQuota(t *testing.T, ns, name string, gpus int) {
	t.Helper()
	rq := wrappers.MakeQuota(ns, name).Hard("requests.nvidia.com/gpu", fmt.Sprint(gpus)).Obj()
	if err := k8s.Create(context.Background(), &rq); err != nil {
		t.Fatal(err)
	}
	waitQuotaSynced(t, ns, name, gpus)
}

// setQuota sets the quota's GPU limit and waits until its status follows.
func setQuota(t *testing.T, ns, name string, gpus int) {
	t.Helper()
	var rq corev1.ResourceQuota
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rq); err != nil {
		t.Fatal(err)
	}
	rq.Spec.Hard["requests.nvidia.com/gpu"] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	if err := k8s.Update(context.Background(), &rq); err != nil {
		t.Fatal(err)
	}
	waitQuotaSynced(t, ns, name, gpus)
}

func waitQuotaSynced(t *testing.T, ns, name string, gpus int) {
	t.Helper()
	eventually(t, 20*time.Second, "quota "+name+" synced", func() (bool, error) {
		var rq corev1.ResourceQuota
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rq); err != nil {
			return false, err
		}
		h, ok := rq.Status.Hard["requests.nvidia.com/gpu"]
		return ok && h.Value() == int64(gpus) && rq.Status.Used != nil, nil
	})
}

// holdNoPods polls for d and fails at once if the namespace has a worker pod.
func holdNoPods(t *testing.T, ns string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if ps := pods(t, ns, map[string]string{"phasegang.dev/managed": "true"}); len(ps) > 0 {
			t.Fatalf("worker pod %s was created while the quota did not admit the gang", ps[0].Name)
		}
	}
}

// runsWhole waits for the pipeline to succeed and checks that it ran
// exactly its gang's 8 pods: no creation was refused.
func runsWhole(t *testing.T, pt *v1alpha1.PhasedTraining, ns string) {
	t.Helper()
	done := waitState(t, pt, v1alpha1.PipelineSucceeded, 60*time.Second)
	ps := pods(t, ns, map[string]string{"phasegang.dev/managed": "true"})
	if len(ps) != 8 {
		t.Errorf("%d worker pods, want the gang's 8", len(ps))
	}
	for _, p := range ps {
		if p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("pod %s is %s", p.Name, p.Status.Phase)
		}
	}
	if h := done.Status.Phases[0].History; len(h) == 0 || h[0].Type != v1alpha1.PhaseEventReserved || h[0].Workers != 8 {
		t.Errorf("the gang was not reserved whole at once: %+v", h)
	}
}

// (a) Another workload uses 4 of the namespace's 8 quota GPUs: an
// 8-worker gang waits, saying so with the numbers, and no pod of it is
// created (without quota-aware grants, 4 would run and 4 be refused).
// Raised to 12, the quota admits it and it runs whole.
func TestQuotaWaitsThenRunsWhole(t *testing.T) {
	ns := namespace(t)
	names := nodes(t, "pool-quota", 2, 8)
	createQuota(t, ns, "gpu-quota", 8)
	other := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-workload"},
		Spec: corev1.PodSpec{
			NodeName:    names[0],
			Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "c", Image: "other:1", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")},
			}}},
		},
	}
	if err := k8s.Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	pt := create(t, wrappers.NewPT(ns, "train").Phase("train", 8).PodTemplate(worker("pool-quota", 1, 2, "")).Obj())
	want := fmt.Sprintf("namespace %s's quota gpu-quota allows 4 more nvidia.com/gpu; the gang needs 8", ns)
	eventually(t, 20*time.Second, "the gang to wait for the quota", func() (bool, error) {
		cur := get(t, pt)
		if len(cur.Status.Phases) == 0 {
			return false, nil
		}
		return cur.Status.Phases[0].WaitingFor == want, fmt.Errorf("%s", describe(cur))
	})
	holdNoPods(t, ns, 10*time.Second)
	cur := get(t, pt)
	if cur.Status.State != v1alpha1.PipelineQueued {
		t.Errorf("state %s while waiting for quota, want Queued: %s", cur.Status.State, describe(cur))
	}
	if c := meta.FindStatusCondition(cur.Status.Conditions, string(v1alpha1.ConditionQueued)); c == nil || !strings.Contains(c.Message, want) {
		t.Errorf("condition Queued %+v does not say %q", c, want)
	}
	setQuota(t, ns, "gpu-quota", 12)
	runsWhole(t, pt, ns)
}

// (b) A gang whose workers need more than the quota's hard limit is
// Infeasible at once, naming the namespace, the quota and the numbers,
// and creates nothing; once the quota is raised it runs whole.
func TestQuotaInfeasible(t *testing.T) {
	ns := namespace(t)
	nodes(t, "pool-quota-inf", 1, 8)
	createQuota(t, ns, "gpu-quota", 4)
	pt := create(t, wrappers.NewPT(ns, "train").Phase("train", 8).PodTemplate(worker("pool-quota-inf", 1, 2, "")).Obj())
	want := fmt.Sprintf("phase train can never fit: namespace %s's quota gpu-quota allows at most 4 nvidia.com/gpu (its hard limit); the gang needs 8 at once", ns)
	eventually(t, 20*time.Second, "condition Infeasible naming the quota", func() (bool, error) {
		cur := get(t, pt)
		c := meta.FindStatusCondition(cur.Status.Conditions, string(v1alpha1.ConditionInfeasible))
		if c == nil || c.Status != metav1.ConditionTrue {
			return false, fmt.Errorf("%s", describe(cur))
		}
		return cur.Status.State == v1alpha1.PipelineInfeasible && c.Message == want, fmt.Errorf("message %q", c.Message)
	})
	holdNoPods(t, ns, 3*time.Second)
	setQuota(t, ns, "gpu-quota", 8)
	runsWhole(t, pt, ns)
}

// (c) A quota that makes the API server refuse the template's pods (here
// a quota on limits.memory: containers must then set a memory limit,
// unless a LimitRange defaults one) is found by the pod check at arrival:
// the pipeline is Invalid with the API server's words at the phase's
// template, and no pod is created.
func TestQuotaRefusedPodIsInvalid(t *testing.T) {
	ns := namespace(t)
	nodes(t, "pool-quota-ev", 1, 8)
	rq := wrappers.MakeQuota(ns, "mem").Hard("limits.memory", "1Gi").Obj()
	if err := k8s.Create(context.Background(), &rq); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "quota mem synced", func() (bool, error) {
		var cur corev1.ResourceQuota
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(&rq), &cur)
		return err == nil && cur.Status.Hard != nil, err
	})
	pt := create(t, wrappers.NewPT(ns, "train").Phase("train", 1).PodTemplate(worker("pool-quota-ev", 1, 2, "")).Obj())
	var msg string
	eventually(t, 30*time.Second, "condition Invalid with the API server's reason", func() (bool, error) {
		cur := get(t, pt)
		c := meta.FindStatusCondition(cur.Status.Conditions, string(v1alpha1.ConditionInvalid))
		if c == nil || c.Status != metav1.ConditionTrue {
			return false, fmt.Errorf("%s", describe(cur))
		}
		msg = c.Message
		return cur.Status.State == v1alpha1.PipelineInvalid, nil
	})
	for _, want := range []string{"spec.phases[0].template", "limits.memory"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Invalid says %q, want it to contain %q", msg, want)
		}
	}
	holdNoPods(t, ns, 2*time.Second)
}
