package main

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pod is a plain-run pod of phase phase that ran from start to end
// seconds after t0 (end 0: still running).
func pod(t0 time.Time, phase string, start, end int) corev1.Pod {
	st := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(time.Duration(start) * time.Second))}}
	if end > 0 {
		st = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			StartedAt:  metav1.NewTime(t0.Add(time.Duration(start) * time.Second)),
			FinishedAt: metav1.NewTime(t0.Add(time.Duration(end) * time.Second))}}
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pipeline": "7", "phase": phase}},
		Status:     corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{State: st}}},
	}
}

func TestPhaseLatencies(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	pods := []corev1.Pod{
		// train: queued at t0 (the pipeline's start), last worker Running at 3 s.
		pod(t0, "0", 2, 10), pod(t0, "0", 3, 12),
		// validate: queued when train's last worker ended (12 s), Running at 16 s.
		pod(t0, "1", 16, 20),
		// test: one of two workers has not started, so not measured.
		pod(t0, "2", 25, 0), {ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pipeline": "7", "phase": "2"}}},
	}
	got := phaseLatencies(pods, plainPhaseKey, func(string) time.Time { return t0 })
	slices.Sort(got)
	if want := []float64{3, 4}; !slices.Equal(got, want) {
		t.Errorf("phaseLatencies = %v, want %v (train 3 s, validate 4 s, test not measured)", got, want)
	}
}
