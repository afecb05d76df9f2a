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

// A gang whose pods cannot start (they mount a PersistentVolumeClaim that
// does not exist) is reserved but not Running: the pipeline is Starting,
// and the phase's waitingFor and the Starting condition quote
// kube-scheduler's reason. Its startTimeout then releases and requeues it
// (with backoff) until startBackoffLimit is spent, and the attempt fails
// with the reason it waited for, instead of holding and releasing the
// nodes forever.
func TestMissingVolumeIsStartingNotRunning(t *testing.T) {
	ns := namespace(t)
	nodes(t, "pool-start", 1, 8)
	tmpl := worker("pool-start", 1, 2, "")
	tmpl.Spec.Volumes = []corev1.Volume{{Name: "ckpt", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "no-such-claim"}}}}
	tmpl.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "ckpt", MountPath: "/ckpt"}}
	pt := create(t, wrappers.NewPT(ns, "train").Phase("train", 2).PodTemplate(tmpl).With(func(p *v1alpha1.Phase) {
		p.StartTimeout = &metav1.Duration{Duration: 3 * time.Second}
		p.StartBackoffLimit = new(int32(1))
	}).Obj())

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
		// The phase says what its pipeline says: Starting, not Running.
		if ps := cur.Status.Phases[0].State; ps != v1alpha1.PhaseStarting {
			return false, fmt.Errorf("phase state %s while the pipeline is Starting: %s", ps, describe(cur))
		}
		msg, waiting = c.Message, cur.Status.Phases[0].WaitingFor
		return strings.Contains(waiting, `persistentvolumeclaim "no-such-claim" not found`), fmt.Errorf("waitingFor %q", waiting)
	})
	if !strings.Contains(msg, "train: 0 of 2 workers running") || !strings.Contains(msg, waiting) {
		t.Errorf("Starting says %q, want the workers running and %q", msg, waiting)
	}
	// kube-scheduler's message can repeat its reason; the status says it once.
	if strings.Contains(msg, "not found. not found") {
		t.Errorf("Starting repeats kube-scheduler's reason: %q", msg)
	}
	t.Logf("Starting: %s", msg)
	// It never claims to run while its pods are Pending; after one start
	// timeout, a 10 s backoff and a second one, the attempt fails.
	failed := failsNeverRunning(t, pt, 45*time.Second, "its pods cannot start")
	ps := failed.Status.Phases[0]
	if !strings.Contains(ps.Message, "did not start after 2 tries (spec.phases[0].startBackoffLimit: 1)") || !strings.Contains(ps.Message, `persistentvolumeclaim "no-such-claim" not found`) {
		t.Errorf("phase says %q, want the start failures and kube-scheduler's reason", ps.Message)
	}
	if c := meta.FindStatusCondition(failed.Status.Conditions, string(v1alpha1.ConditionFailed)); c == nil || c.Reason != v1alpha1.ReasonStartFailed {
		t.Errorf("Failed condition %+v, want reason %s", c, v1alpha1.ReasonStartFailed)
	}
	// An ended pipeline does not start: Failed is its one True condition,
	// so kubectl get -o wide's Reason (the first True one's) is StartFailed.
	for _, c := range failed.Status.Conditions {
		if c.Status == metav1.ConditionTrue && c.Type != string(v1alpha1.ConditionFailed) {
			t.Errorf("condition %s is True beside Failed: %+v", c.Type, c)
		}
	}
	if n := len(pods(t, ns, map[string]string{"phasegang.dev/managed": "true"})); n != 0 {
		// Pending pods of a failed phase are deleted (kept only once finished).
		eventually(t, 10*time.Second, "the failed gang's pods deleted", func() (bool, error) {
			n = len(pods(t, ns, map[string]string{"phasegang.dev/managed": "true"}))
			return n == 0, fmt.Errorf("%d pods left", n)
		})
	}
	t.Logf("Failed: %s", ps.Message)
}
