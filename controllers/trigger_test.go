package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

func TestRelevantUpdate(t *testing.T) {
	node := &corev1.Node{Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}
	heartbeat := node.DeepCopy()
	heartbeat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	shrunk := node.DeepCopy()
	shrunk.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("4")
	tainted := node.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}

	pod := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}
	bound := pod.DeepCopy()
	bound.Spec.NodeName = "n1"
	running := bound.DeepCopy()
	running.Status.Phase = corev1.PodRunning
	done := running.DeepCopy()
	done.Status.Phase = corev1.PodSucceeded

	pt := &v1alpha1.PhasedTraining{Status: v1alpha1.PhasedTrainingStatus{Phases: []v1alpha1.PhaseStatus{{Name: "train", State: v1alpha1.PhaseQueued}}}}
	waiting := pt.DeepCopy()
	waiting.Status.Phases[0].WaitingFor = "needs 8"
	ended := pt.DeepCopy()
	ended.Status.Phases[0].State = v1alpha1.PhaseSucceeded

	tq := &v1alpha1.TenantQueue{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	tqStatus := tq.DeepCopy()
	tqStatus.Status.Resources = []v1alpha1.QueueResourceUsage{{Name: "nvidia.com/gpu", Used: resource.MustParse("4")}}
	tqSpec := tq.DeepCopy()
	tqSpec.Generation = 2

	cases := map[string]struct {
		old, new any
		want     bool
	}{
		"node heartbeat":           {node, heartbeat, false},
		"node allocatable changed": {node, shrunk, true},
		"node tainted":             {node, tainted, true},
		"pod bound":                {pod, bound, true},
		"pod went Running":         {bound, running, false},
		"pod ended":                {running, done, true},
		"only waitingFor changed":  {pt, waiting, false},
		"a phase ended":            {pt, ended, true},
		"queue status written":     {tq, tqStatus, false},
		"queue spec changed":       {tq, tqSpec, true},
	}
	for name, tc := range cases {
		if got := relevantUpdate(tc.old, tc.new); got != tc.want {
			t.Errorf("%s: relevantUpdate = %v, want %v", name, got, tc.want)
		}
	}
}
