package driver

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

func TestQuotaResource(t *testing.T) {
	cases := map[corev1.ResourceName]engine.ResourceName{
		"requests.nvidia.com/gpu":  "nvidia.com/gpu",
		"requests.cpu":             "cpu",
		"cpu":                      "cpu",
		"memory":                   "memory",
		"requests.hugepages-2Mi":   "hugepages-2Mi",
		"limits.cpu":               "limits.cpu",
		"limits.memory":            "limits.memory",
		"pods":                     "pods",
		"count/pods":               "count/pods",
		"services":                 "",
		"requests.storage":         "",
		"count/deployments.apps":   "",
		"persistentvolumeclaims":   "",
		"requests.kubernetes.io/x": "",
	}
	for in, want := range cases {
		got, ok := QuotaResource(in)
		if ok != (want != "") || got != want {
			t.Errorf("%s: %q %v, want %q", in, got, ok, want)
		}
	}
}

func gpuPod(ns, name string, phase corev1.PodPhase, gpus string) corev1.Pod {
	return wrappers.MakePod(ns, name, "n1", phase, "1", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse(gpus)
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(gpus)}
	})
}

func TestQuotas(t *testing.T) {
	now := wrappers.T0
	gone := metav1.NewTime(now.Add(-time.Minute))
	grace := int64(30)
	pods := []corev1.Pod{
		gpuPod("ml", "other", corev1.PodRunning, "1"),       // another workload's
		gpuPod("ml", "job-train-0", corev1.PodRunning, "1"), // a granted worker's
		gpuPod("ml", "done", corev1.PodSucceeded, "2"),      // finished: count/pods only
		gpuPod("ml", "stuck", corev1.PodRunning, "4"),       // past its deletion grace period
		gpuPod("elsewhere", "x", corev1.PodRunning, "8"),
	}
	pods[3].DeletionTimestamp, pods[3].DeletionGracePeriodSeconds = &gone, &grace
	covered := func(ns, name string) bool { return ns == "ml" && name == "job-train-0" }
	cases := map[string]struct {
		rq   corev1.ResourceQuota
		want []engine.Quota
	}{
		"status.used lags the pods: the pods count, the covered one is the grant's": {
			rq: wrappers.MakeQuota("ml", "gpu-quota").Hard("requests.nvidia.com/gpu", "8").Hard("count/pods", "10").Hard("services", "2").
				StatusHard("requests.nvidia.com/gpu", "8").StatusHard("count/pods", "10").Obj(),
			want: []engine.Quota{{Namespace: "ml", Name: "gpu-quota",
				Hard: engine.ResourceList{"nvidia.com/gpu": 8000, "count/pods": 10000},
				Used: engine.ResourceList{"nvidia.com/gpu": 1000, "count/pods": 3000}}},
		},
		"status.used ahead of the cache stands": {
			rq: wrappers.MakeQuota("ml", "q").Hard("requests.nvidia.com/gpu", "8").Used("requests.nvidia.com/gpu", "6").Obj(),
			want: []engine.Quota{{Namespace: "ml", Name: "q",
				Hard: engine.ResourceList{"nvidia.com/gpu": 8000}, Used: engine.ResourceList{"nvidia.com/gpu": 5000}}},
		},
		"a raise counts once the quota controller has synced it, a cut at once": {
			rq: wrappers.MakeQuota("ml", "q").Hard("requests.nvidia.com/gpu", "8").StatusHard("requests.nvidia.com/gpu", "4").
				Hard("cpu", "10").StatusHard("cpu", "20").Hard("requests.cpu", "16").Obj(),
			want: []engine.Quota{{Namespace: "ml", Name: "q",
				Hard: engine.ResourceList{"nvidia.com/gpu": 4000, "cpu": 10000}, Used: engine.ResourceList{"nvidia.com/gpu": 1000, "cpu": 1000}}},
		},
		"scopes: a PriorityClass quota the pods do not select": {
			rq: wrappers.MakeQuota("ml", "high").Hard("requests.nvidia.com/gpu", "8").PriorityClassIn("high").Obj(),
			want: []engine.Quota{{Namespace: "ml", Name: "high", Hard: engine.ResourceList{"nvidia.com/gpu": 8000}, Used: engine.ResourceList{},
				Scopes: []corev1.ScopedResourceSelectorRequirement{{ScopeName: "PriorityClass", Operator: "In", Values: []string{"high"}}}}},
		},
		"a quota of nothing pods use is left out": {
			rq: wrappers.MakeQuota("ml", "svc").Hard("services", "2").Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Quotas([]corev1.ResourceQuota{tc.rq}, pods, covered, now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
