//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// spec.podTTLSecondsAfterFinished: the finished pipeline's pods are kept
// until the TTL ran out, then deleted; the PhasedTraining and its status
// stay. A pipeline without it keeps its pods.
func TestPodTTLAfterFinished(t *testing.T) {
	ns := namespace(t)
	pool := "pool-ttl"
	nodes(t, pool, 1, 4)
	ttl := int32(3)
	withTTL := create(t, wrappers.NewPT(ns, "ttl").PodTTL(ttl).Phase("train", 2).PodTemplate(worker(pool, 1, 1, "")).Obj())
	kept := create(t, wrappers.NewPT(ns, "kept").Phase("train", 2).PodTemplate(worker(pool, 1, 1, "")).Obj())
	waitState(t, withTTL, v1alpha1.PipelineSucceeded, 30*time.Second)
	done := time.Now()
	waitState(t, kept, v1alpha1.PipelineSucceeded, 30*time.Second)
	count := func(pipeline string) int {
		n := 0
		for _, p := range pods(t, ns, map[string]string{"phasegang.dev/pipeline": pipeline}) {
			if p.DeletionTimestamp == nil {
				n++
			}
		}
		return n
	}
	if n := count("ttl"); n != 2 && time.Since(done) < time.Duration(ttl)*time.Second {
		t.Errorf("%d pods of ttl right after it finished, want its 2 until the TTL runs out", n)
	}
	eventually(t, 20*time.Second, "the ttl pipeline's pods deleted", func() (bool, error) {
		n := count("ttl")
		return n == 0, fmt.Errorf("%d pods left", n)
	})
	if since := time.Since(done); since < time.Duration(ttl)*time.Second-time.Second {
		t.Errorf("pods deleted %v after the end, before the %ds TTL", since, ttl)
	}
	if got := get(t, withTTL); got.Status.State != v1alpha1.PipelineSucceeded {
		t.Errorf("after the pods went: %s", describe(got))
	}
	if n := count("kept"); n != 2 {
		t.Errorf("the pipeline without a TTL has %d pods, want its 2", n)
	}
}
