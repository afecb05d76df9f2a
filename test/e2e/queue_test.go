//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// createQueue creates a TenantQueue, deleted after the test. Queues are
// cluster-wide: each test names its own (never "default", which every
// other test's pipelines would go to).
func createQueue(t *testing.T, q v1alpha1.TenantQueue) {
	t.Helper()
	if err := k8s.Create(context.Background(), &q); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), &q) })
}

func getQueue(t *testing.T, name string) v1alpha1.TenantQueue {
	t.Helper()
	var q v1alpha1.TenantQueue
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, &q); err != nil {
		t.Fatal(err)
	}
	return q
}

// Two queues of 4 GPUs each in one cohort. While team B's pipeline holds
// its 4, team A's 8-worker gang waits for its queue (saying so with the
// numbers), and no pod of it is created; once team B's ends, team A
// borrows B's idle quota and its gang runs whole, the queue's status (and
// kubectl get tq) showing the borrowing.
func TestQueueBorrowsFromIdleCohort(t *testing.T) {
	ns := namespace(t)
	sfx := ns[strings.LastIndex(ns, "-")+1:]
	qa, qb, cohort := "team-a-"+sfx, "team-b-"+sfx, "research-"+sfx
	nodes(t, "pool-queue", 2, 8)
	createQueue(t, wrappers.MakeQueue(qa).Cohort(cohort).Nominal("nvidia.com/gpu", "4").Obj())
	createQueue(t, wrappers.MakeQueue(qb).Cohort(cohort).Nominal("nvidia.com/gpu", "4").Obj())

	b := create(t, wrappers.NewPT(ns, "team-b").Queue(qb).Phase("train", 4).PodTemplate(worker("pool-queue", 1, 8, "")).Obj())
	waitState(t, b, v1alpha1.PipelineRunning, 20*time.Second)
	a := create(t, wrappers.NewPT(ns, "team-a").Queue(qa).Phase("train", 8).PodTemplate(worker("pool-queue", 1, 6, "")).Obj())
	want := fmt.Sprintf("queue %s allows 4 more nvidia.com/gpu (nominal 4, 0 in use, with what cohort %s lends now); the gang needs 8", qa, cohort)
	eventually(t, 20*time.Second, "team A's gang to wait for its queue", func() (bool, error) {
		cur := get(t, a)
		return len(cur.Status.Phases) > 0 && cur.Status.Phases[0].WaitingFor == want, fmt.Errorf("%s", describe(cur))
	})
	for _, p := range pods(t, ns, map[string]string{"phasegang.dev/managed": "true"}) {
		if strings.HasPrefix(p.Name, "team-a") {
			t.Fatalf("worker pod %s was created while its queue did not admit the gang", p.Name)
		}
	}

	// Team B's pipeline ends: A borrows B's idle 4 and runs 8 at once.
	waitState(t, b, v1alpha1.PipelineSucceeded, 30*time.Second)
	eventually(t, 20*time.Second, "team A's queue to show 4 borrowed", func() (bool, error) {
		q := getQueue(t, qa)
		borrowed := len(q.Status.Resources) == 1 && q.Status.Resources[0].Name == "nvidia.com/gpu" && q.Status.Resources[0].Borrowed.Value() == 4
		return borrowed && q.Status.AdmittedGangs == 1, fmt.Errorf("status %+v", q.Status)
	})
	out, err := exec.Command("kubectl", "get", "tq", qa, "--no-headers").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "nvidia.com/gpu: 8") || !strings.Contains(string(out), cohort) {
		t.Errorf("kubectl get tq %s: %v\n%s\nwant the cohort and nvidia.com/gpu: 8 used", qa, err, out)
	}
	done := waitState(t, a, v1alpha1.PipelineSucceeded, 60*time.Second)
	if h := done.Status.Phases[0].History; len(h) == 0 || h[0].Type != v1alpha1.PhaseEventReserved || h[0].Workers != 8 {
		t.Errorf("team A's gang was not reserved whole at once: %+v", h)
	}
	if n := len(pods(t, ns, map[string]string{"phasegang.dev/managed": "true", "phasegang.dev/pipeline": "team-a"})); n != 8 {
		t.Errorf("team A ran %d worker pods, want its gang's 8", n)
	}
}
