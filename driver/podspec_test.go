package driver

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/phasegang/phasegang/engine"
)

const gpu = engine.ResourceName("nvidia.com/gpu")

func TestWorkerFootprintCountsWholePod(t *testing.T) {
	q := func(s string) corev1.ResourceList {
		return corev1.ResourceList{"cpu": resource.MustParse(s)}
	}
	always := corev1.ContainerRestartPolicyAlways
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "init", Resources: corev1.ResourceRequirements{Requests: q("3")}},
			{Name: "sidecar", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: q("500m")}},
		},
		Containers: []corev1.Container{{Name: "worker", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			"cpu": resource.MustParse("2"), "nvidia.com/gpu": resource.MustParse("1"), "memory": resource.MustParse("16Gi"),
		}}}},
		Overhead: q("100m"),
	}
	got := WorkerFootprint(spec)
	// cpu: max(init 3, which runs before the sidecar starts; sidecar 0.5 +
	// worker 2) + overhead 0.1 = 3.1.
	want := engine.ResourceList{"cpu": 3100, "memory": 16 << 30 * 1000, gpu: 1000, "pods": 1000}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("footprint (-want +got):\n%s", diff)
	}
	if s := engine.FormatResources(got); s != "{cpu: 3100m, memory: 16Gi, nvidia.com/gpu: 1, pods: 1}" {
		t.Errorf("FormatResources = %q", s)
	}
}

func TestWorkerFootprintDefaultsRequestsToLimits(t *testing.T) {
	spec := &corev1.PodSpec{Containers: []corev1.Container{{Name: "worker", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"cpu": resource.MustParse("1")},
		Limits:   corev1.ResourceList{"cpu": resource.MustParse("2"), "nvidia.com/gpu": resource.MustParse("2"), "memory": resource.MustParse("1Gi")},
	}}}}
	got := WorkerFootprint(spec)
	// The request wins where given (cpu); a limit alone is the request.
	want := engine.ResourceList{"cpu": 1000, "memory": 1 << 30 * 1000, gpu: 2000, "pods": 1000}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("footprint (-want +got):\n%s", diff)
	}
	if _, ok := spec.Containers[0].Resources.Requests["nvidia.com/gpu"]; ok {
		t.Error("WorkerFootprint changed the caller's spec")
	}
}

func TestWorkerFootprintFastPathMatchesKubeScheduler(t *testing.T) {
	rl := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	for _, spec := range []*corev1.PodSpec{
		{Containers: []corev1.Container{{Name: "a"}}},
		{Containers: []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "0")}}}},
		{Containers: []corev1.Container{
			{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1500m"), Limits: rl("cpu", "2", "nvidia.com/gpu", "1")}},
			{Name: "b", Resources: corev1.ResourceRequirements{Limits: rl("memory", "1Gi", "nvidia.com/gpu", "2")}},
			{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "250m", "ephemeral-storage", "1Gi")}},
		}},
	} {
		if !plainContainers(spec) {
			t.Fatalf("spec is not plain: %+v", spec)
		}
		if diff := cmp.Diff(podFootprint(spec), WorkerFootprint(spec)); diff != "" {
			t.Errorf("fast path differs from kube-scheduler's accounting (-general +fast):\n%s", diff)
		}
		if diff := cmp.Diff(podLimitsGeneral(spec), podLimits(spec), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("fast limits differ from quota admission's (-general +fast):\n%s", diff)
		}
	}
}

func TestHostPortsOf(t *testing.T) {
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "proxy", Ports: []corev1.ContainerPort{{ContainerPort: 15000, HostPort: 15000}}}},
		Containers: []corev1.Container{{Name: "w", Ports: []corev1.ContainerPort{
			{ContainerPort: 29500},
			{ContainerPort: 8080, HostPort: 8080},
			{ContainerPort: 53, HostPort: 5353, Protocol: corev1.ProtocolUDP, HostIP: "10.0.0.1"},
		}}},
	}
	want := []engine.HostPort{{Protocol: "TCP", Port: 15000, HostIP: "0.0.0.0"}, {Protocol: "TCP", Port: 8080, HostIP: "0.0.0.0"}, {Protocol: "UDP", Port: 5353, HostIP: "10.0.0.1"}}
	if diff := cmp.Diff(want, HostPortsOf(spec)); diff != "" {
		t.Errorf("host ports (-want +got):\n%s", diff)
	}
}

func TestQuotaFactsOf(t *testing.T) {
	deadline := int64(60)
	spec := &corev1.PodSpec{
		PriorityClassName:     "high",
		ActiveDeadlineSeconds: &deadline,
		Containers: []corev1.Container{{Name: "w", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "cpu": resource.MustParse("2")},
		}}},
	}
	f := QuotaFactsOf(spec)
	if !f.Terminating || f.BestEffort || f.PriorityClassName != "high" || f.Limits["cpu"] != 2000 || f.Limits[gpu] != 1000 {
		t.Errorf("facts %+v", f)
	}
	gpuOnly := &corev1.PodSpec{Containers: []corev1.Container{{Name: "w", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
	}}}}
	if f := QuotaFactsOf(gpuOnly); !f.BestEffort || f.Terminating {
		t.Errorf("a GPU-only pod is BestEffort (QoS reads cpu and memory only): %+v", f)
	}
}
