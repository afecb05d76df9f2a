package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

func TestPodUpdatePriority(t *testing.T) {
	pod := func(phase corev1.PodPhase, node string, deleting bool) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	unschedulable := pod(corev1.PodPending, "", false)
	unschedulable.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: "Unschedulable", Message: `0/2 nodes are available: persistentvolumeclaim "ckpt" not found.`}}
	tests := map[string]struct {
		old, new *corev1.Pod
		want     int
		act      bool
	}{
		"unschedulable (the status quotes why)": {pod(corev1.PodPending, "", false), unschedulable, priorityLow, true},
		"bound by kube-scheduler":               {pod(corev1.PodPending, "", false), pod(corev1.PodPending, "n1", false), 0, false},
		"went Running":                          {pod(corev1.PodPending, "n1", false), pod(corev1.PodRunning, "n1", false), priorityLow, true},
		"succeeded":                             {pod(corev1.PodRunning, "n1", false), pod(corev1.PodSucceeded, "n1", false), priorityCritical, true},
		"failed before running":                 {pod(corev1.PodPending, "n1", false), pod(corev1.PodFailed, "n1", false), priorityCritical, true},
		"deletion started":                      {pod(corev1.PodRunning, "n1", false), pod(corev1.PodRunning, "n1", true), priorityNormal, true},
		"status rewrite of an ended pod":        {pod(corev1.PodSucceeded, "n1", false), pod(corev1.PodSucceeded, "n1", false), 0, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, act := podUpdatePriority(tc.old, tc.new)
			if act != tc.act || (act && got != tc.want) {
				t.Errorf("podUpdatePriority = %d, %v; want %d, %v", got, act, tc.want, tc.act)
			}
		})
	}
}

func TestPTUpdatePriority(t *testing.T) {
	queued := v1alpha1.PhaseStatus{Name: "train", State: v1alpha1.PhaseQueued}
	granted := wrappers.Running("train", "n1", "n2")
	grown := wrappers.Running("train", "n1", "n2", "n3")
	counted := wrappers.Running("train", "n1", "n2")
	counted.Workers.Running = 2
	ended := counted
	ended.State = v1alpha1.PhaseSucceeded
	pt := func(rv string, ps ...v1alpha1.PhaseStatus) *v1alpha1.PhasedTraining {
		o := wrappers.MakePT("job").Phase("train", 2).Status(ps...).Obj()
		o.ResourceVersion = rv
		return o
	}
	tests := map[string]struct {
		old, new *v1alpha1.PhasedTraining
		want     int
	}{
		"resync":                   {pt("1", queued), pt("1", queued), priorityLow},
		"first status (own write)": {pt("1"), pt("2", queued), priorityLow},
		"granted":                  {pt("1", queued), pt("2", granted), priorityCritical},
		"grown":                    {pt("1", granted), pt("2", grown), priorityCritical},
		"counts only (own write)":  {pt("1", granted), pt("2", counted), priorityLow},
		"phase ended":              {pt("1", counted), pt("2", ended), priorityCritical},
		"spec edited":              {pt("1", granted), withGeneration(pt("2", granted), 2), priorityNormal},
		"deletion started":         {pt("1", granted), deleting(pt("2", granted)), priorityNormal},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ptUpdatePriority(tc.old, tc.new); got != tc.want {
				t.Errorf("ptUpdatePriority = %d, want %d", got, tc.want)
			}
		})
	}
}

func withGeneration(pt *v1alpha1.PhasedTraining, g int64) *v1alpha1.PhasedTraining {
	pt.Generation = g
	return pt
}

func deleting(pt *v1alpha1.PhasedTraining) *v1alpha1.PhasedTraining {
	pt.DeletionTimestamp = &metav1.Time{}
	return pt
}

func TestControllerKey(t *testing.T) {
	owned := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job-train-0", OwnerReferences: []metav1.OwnerReference{
		*metav1.NewControllerRef(wrappers.MakePT("job").Obj(), v1alpha1.GroupVersion.WithKind(v1alpha1.Kind))}}}
	if key, ok := controllerKey(owned); !ok || key.NamespacedName != (types.NamespacedName{Namespace: "ns", Name: "job"}) {
		t.Errorf("controllerKey(owned) = %v, %v", key, ok)
	}
	foreign := owned.DeepCopy()
	foreign.OwnerReferences[0].Kind = "Job"
	foreign.OwnerReferences[0].APIVersion = "batch/v1"
	if _, ok := controllerKey(foreign); ok {
		t.Errorf("a Job's pod must not enqueue a PhasedTraining")
	}
	if _, ok := controllerKey(&corev1.Pod{}); ok {
		t.Errorf("an unowned pod must not enqueue anything")
	}
}
