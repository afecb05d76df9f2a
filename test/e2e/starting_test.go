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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// A gang whose pods cannot start (they mount a PersistentVolumeClaim that
// does not exist) is reserved but not Running: the pipeline is Starting,
// and the phase's waitingFor and the Starting condition quote
// kube-scheduler's reason. (The local cluster has no storage provisioner,
// so a claim created later would not bind either: the test checks what the
// status says, then deletes the pipeline.)
func TestMissingVolumeIsStartingNotRunning(t *testing.T) {
	ns := namespace(t)
	nodes(t, "pool-start", 1, 8)
	tmpl := worker("pool-start", 1, 2, "")
	tmpl.Spec.Volumes = []corev1.Volume{{Name: "ckpt", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "no-such-claim"}}}}
	tmpl.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "ckpt", MountPath: "/ckpt"}}
	pt := makePT(ns, "train").phase("train", 2, 2, tmpl).create(t)

	var msg, waiting string
	eventually(t, 30*time.Second, "Starting with kube-scheduler's reason", func() (bool, error) {
		cur := get(t, pt)
		if cur.Status.State != v1alpha1.PipelineStarting {
			return false, fmt.Errorf("state %s: %s", cur.Status.State, describe(cur))
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, string(v1alpha1.ConditionStarting))
		if c == nil || c.Status != metav1.ConditionTrue || len(cur.Status.Phases) == 0 {
			return false, fmt.Errorf("no Starting condition: %s", describe(cur))
		}
		msg, waiting = c.Message, cur.Status.Phases[0].WaitingFor
		return strings.Contains(waiting, `persistentvolumeclaim "no-such-claim" not found`), fmt.Errorf("waitingFor %q", waiting)
	})
	if !strings.Contains(msg, "train: 0 of 2 workers running") || !strings.Contains(msg, waiting) {
		t.Errorf("Starting says %q, want the workers running and %q", msg, waiting)
	}
	// It never claims to run while its pods are Pending.
	for range 10 {
		if cur := get(t, pt); cur.Status.State == v1alpha1.PipelineRunning {
			t.Fatalf("Running while its pods cannot start: %s", describe(cur))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("Starting: %s", msg)
	if err := k8s.Delete(context.Background(), pt); err != nil {
		t.Fatal(err)
	}
}
