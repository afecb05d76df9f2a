package controllers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/internal/wrappers"
)

func TestNotYetSeenHoldsBackRecreationUntilTheCacheCatchesUp(t *testing.T) {
	var r Reconciler
	key := types.NamespacedName{Namespace: "ml", Name: "job"}
	t0 := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	workers := func(names ...string) []driver.Worker {
		var ws []driver.Worker
		for _, n := range names {
			ws = append(ws, driver.Worker{Pod: n})
		}
		return ws
	}
	pods := func(names ...string) []corev1.Pod {
		var ps []corev1.Pod
		for _, n := range names {
			ps = append(ps, wrappers.MakePod("ml", n, "", corev1.PodPending, ""))
		}
		return ps
	}
	names := func(ws []driver.Worker) []string {
		var out []string
		for _, w := range ws {
			out = append(out, w.Pod)
		}
		return out
	}
	r.expectCreated(key, []string{"job-train-0", "job-train-1"}, t0)
	// The cache shows job-train-0 only: job-train-1 is not created again,
	// job-train-2 (never created) is.
	got := names(r.notYetSeen(key, pods("job-train-0"), workers("job-train-1", "job-train-2"), t0.Add(time.Second)))
	if len(got) != 1 || got[0] != "job-train-2" {
		t.Errorf("created pods not yet in the cache: to create %v, want [job-train-2]", got)
	}
	// Seen once, a pod is forgotten: if it goes, it is created again.
	r.expectCreated(key, []string{"job-train-1"}, t0)
	r.notYetSeen(key, pods("job-train-1"), nil, t0.Add(time.Second))
	if got := names(r.notYetSeen(key, nil, workers("job-train-1"), t0.Add(2*time.Second))); len(got) != 1 {
		t.Errorf("a pod the cache showed and then lost: to create %v, want it", got)
	}
	// Never seen, it is created again once createExpiry has passed.
	r.expectCreated(key, []string{"job-test-0"}, t0)
	if got := names(r.notYetSeen(key, nil, workers("job-test-0"), t0.Add(createExpiry))); len(got) != 1 {
		t.Errorf("after createExpiry: to create %v, want job-test-0", got)
	}
}
