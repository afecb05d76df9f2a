//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
)

// The real-node tier (TestReal*): `make e2e-real` starts test/cluster with
// one real node (up.sh --nodes 0 --real-nodes 1) and runs these tests only.
// Its pods run test/realnode/trainer in containerd; the tests assert on
// what the processes printed (read through kube-apiserver and the kubelet,
// as `kubectl logs` does) and on the files they wrote to the pipelines'
// hostPath directory, which is on this machine.

// realNode skips the test on a cluster without a real node and returns the
// node's name and its GPUs.
func realNode(t *testing.T) (string, int) {
	t.Helper()
	name := os.Getenv("PHASEGANG_REAL_NODE")
	if name == "" {
		t.Skip("no real node: run `make e2e-real` (up.sh --real-nodes 1)")
	}
	var gpus int
	fmt.Sscan(os.Getenv("PHASEGANG_REAL_NODE_GPUS"), &gpus)
	return name, gpus
}

// realDir is a directory on the real node (this machine) that the test's
// pods mount at /data: checkpoints and SIGTERM markers.
func realDir(t *testing.T, ns, name string) string {
	t.Helper()
	d := filepath.Join(os.Getenv("PHASEGANG_REAL_NODE_DIR"), "data", ns, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// trainer is a worker template running the trainer image on the real node
// with gpus GPUs, TRAINER_DIR=/data on dataDir, and env.
func trainer(gpus int, dataDir string, env map[string]string) corev1.PodTemplateSpec {
	var vars []corev1.EnvVar
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		vars = append(vars, corev1.EnvVar{Name: k, Value: env[k]})
	}
	vars = append(vars, corev1.EnvVar{Name: "TRAINER_DIR", Value: "/data"})
	grace := int64(10)
	gpu := *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: &grace,
		NodeSelector:                  map[string]string{"phasegang.dev/real-node": "true"},
		Containers: []corev1.Container{{
			Name: "trainer", Image: "phasegang.test/trainer:dev", ImagePullPolicy: corev1.PullNever,
			Env:          vars,
			Ports:        []corev1.ContainerPort{{Name: "rendezvous", ContainerPort: 29500}},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"nvidia.com/gpu": gpu, "cpu": resource.MustParse("10m"), "memory": resource.MustParse("16Mi")},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": gpu},
			},
		}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: dataDir, Type: new(corev1.HostPathDirectoryOrCreate)}}}},
	}}
}

var clientset = func() func() *kubernetes.Clientset {
	var cs *kubernetes.Clientset
	return func() *kubernetes.Clientset {
		if cs == nil {
			cfg, err := config.GetConfig()
			if err != nil {
				panic(err)
			}
			cs = kubernetes.NewForConfigOrDie(cfg)
		}
		return cs
	}
}()

// podLog is what the pod's container printed, through the kubelet.
func podLog(t *testing.T, ns, pod string) string {
	t.Helper()
	log, err := tryPodLog(ns, pod)
	if err != nil {
		t.Fatal(err)
	}
	return log
}

func tryPodLog(ns, pod string) (string, error) {
	b, err := clientset().CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(context.Background())
	if err != nil {
		return "", fmt.Errorf("logs of %s/%s: %w", ns, pod, err)
	}
	return string(b), nil
}

// gangLogs are the logs of the pods with these labels, by pod name.
func gangLogs(t *testing.T, ns string, labels map[string]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range pods(t, ns, labels) {
		out[p.Name] = podLog(t, ns, p.Name)
	}
	return out
}

// startedLogs are the logs of those pods whose container has started
// (a pod still in ContainerCreating has none yet).
func startedLogs(t *testing.T, ns string, labels map[string]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range pods(t, ns, labels) {
		if log, err := tryPodLog(ns, p.Name); err == nil {
			out[p.Name] = log
		}
	}
	return out
}

// runningInterval is when a pod's container ran, from the kubelet's status.
func runningInterval(p corev1.Pod) (from, to time.Time, ok bool) {
	for _, cs := range p.Status.ContainerStatuses {
		if term := cs.State.Terminated; term != nil {
			return term.StartedAt.Time, term.FinishedAt.Time, true
		}
	}
	return time.Time{}, time.Time{}, false
}

// markers are the SIGTERM markers the trainer wrote in dir.
func markers(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "sigterm-*"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	sort.Strings(m)
	return m
}

func ptLabels(pt string, phase string) map[string]string {
	l := map[string]string{"phasegang.dev/pipeline": pt}
	if phase != "" {
		l["phasegang.dev/phase"] = phase
	}
	return l
}
