//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// Two teams' queues of 4 GPUs each in one cohort, on 8 GPUs. Team A's two
// 4-worker pipelines run on all 8, borrowing team B's idle 4. Team B
// submits: past B's 2-second reclaimGracePeriod the engine preempts one of
// A's gangs whole (the younger), B's gang runs, and A's preempted gang
// queues again as the same attempt and runs once B's ends. At every
// sampled instant each Running phase holds its whole gang and the bound
// pods fit the 8 GPUs.
func TestPreemptionReclaimsBorrowedGangs(t *testing.T) {
	ns := namespace(t)
	sfx := ns[strings.LastIndex(ns, "-")+1:]
	qa, qb, cohort := "team-a-"+sfx, "team-b-"+sfx, "research-"+sfx
	nodes(t, "pool-preempt", 2, 4)
	createQueue(t, wrappers.MakeQueue(qa).Cohort(cohort).Nominal("nvidia.com/gpu", "4").Obj())
	createQueue(t, wrappers.MakeQueue(qb).Cohort(cohort).Nominal("nvidia.com/gpu", "4").
		Reclaim(v1alpha1.PreemptAny).ReclaimGrace(2*time.Second).Obj())

	a1 := create(t, wrappers.NewPT(ns, "team-a-1").Queue(qa).Phase("train", 4).PodTemplate(worker("pool-preempt", 1, 25, "")).Obj())
	waitState(t, a1, v1alpha1.PipelineRunning, 20*time.Second)
	a2 := create(t, wrappers.NewPT(ns, "team-a-2").Queue(qa).Phase("train", 4).PodTemplate(worker("pool-preempt", 1, 25, "")).Obj())
	waitState(t, a2, v1alpha1.PipelineRunning, 20*time.Second)

	submitted := time.Now()
	b := create(t, wrappers.NewPT(ns, "team-b").Queue(qb).Phase("train", 4).PodTemplate(worker("pool-preempt", 1, 5, "")).Obj())
	sampleWholeGangs(t, ns, 8, 90*time.Second, func() bool {
		return get(t, a1).Status.State == v1alpha1.PipelineSucceeded &&
			get(t, a2).Status.State == v1alpha1.PipelineSucceeded &&
			get(t, b).Status.State == v1alpha1.PipelineSucceeded
	})

	// The younger of A's gangs was preempted whole, once, and ran again
	// as the same attempt; the older ran undisturbed.
	victim := get(t, a2).Status.Phases[0]
	var preempted *v1alpha1.PhaseEvent
	for i, h := range victim.History {
		if h.Type == v1alpha1.PhaseEventPreempted {
			preempted = &victim.History[i]
		}
	}
	if preempted == nil {
		t.Fatalf("team-a-2's gang was not preempted: %+v", victim.History)
	}
	if !strings.Contains(preempted.Message, "queue "+qb+" reclaims") || !strings.Contains(preempted.Message, cohort) {
		t.Errorf("the Preempted record does not name the reclaiming queue and cohort: %q", preempted.Message)
	}
	if victim.Attempt != 0 {
		t.Errorf("the preempted gang ran as attempt %d, want the same attempt 0 (a preemption spends no retry)", victim.Attempt)
	}
	after := preempted.Time.Sub(submitted)
	t.Logf("team-a-2 preempted %v after team B submitted", after)
	if after > 15*time.Second {
		t.Errorf("preempted %v after team B submitted, want within the 2s grace plus a scheduling cycle or two", after)
	}
	for _, h := range get(t, a1).Status.Phases[0].History {
		if h.Type == v1alpha1.PhaseEventPreempted {
			t.Errorf("team-a-1 (the older gang) was preempted too: %+v", h)
		}
	}
	eventuallyEvent(t, ns, "Preempted", "queue "+qb+" reclaims")
	if reserved := get(t, b).Status.Phases[0].History; len(reserved) == 0 || reserved[0].Workers != 4 {
		t.Errorf("team B's gang was not reserved whole: %+v", reserved)
	}
	// The controller's /metrics counts the preemption against team A's
	// queue, and shows both queues' quota and, once the next cycle has
	// seen the last phase end, nothing in use.
	eventually(t, 10*time.Second, "the per-queue metrics", func() (bool, error) {
		body := scrape(t)
		for _, want := range []string{
			fmt.Sprintf(`phasegang_tenantqueue_preempted_gangs_total{queue=%q} 1`, qa),
			fmt.Sprintf(`phasegang_tenantqueue_nominal{queue=%q,resource="nvidia.com/gpu"} 4`, qb),
			fmt.Sprintf(`phasegang_tenantqueue_used{queue=%q,resource="nvidia.com/gpu"} 0`, qa),
		} {
			if !strings.Contains(body, want) {
				return false, fmt.Errorf("/metrics lacks %s", want)
			}
		}
		return true, nil
	})
}

// scrape returns the controller's /metrics text.
func scrape(t *testing.T) string {
	t.Helper()
	resp, err := http.Get("http://" + controller.metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// One queue of 4 GPUs with withinQueue LowerPriority: a priority-0
// pipeline holds the queue's quota with a long phase; a priority-100
// pipeline arrives and, past the 2-second grace, the low one is preempted
// whole, the urgent one runs, and the low one reruns as the same attempt.
func TestPreemptionWithinQueue(t *testing.T) {
	ns := namespace(t)
	sfx := ns[strings.LastIndex(ns, "-")+1:]
	q := "team-" + sfx
	nodes(t, "pool-within", 1, 8)
	createQueue(t, wrappers.MakeQueue(q).Nominal("nvidia.com/gpu", "4").
		WithinQueue(v1alpha1.PreemptLowerPriority).ReclaimGrace(2*time.Second).Obj())
	urgentClass := priorityClass(t, "e2e-urgent-"+sfx, 100)

	low := create(t, wrappers.NewPT(ns, "low").Queue(q).Phase("train", 4).PodTemplate(worker("pool-within", 1, 20, "")).Obj())
	waitState(t, low, v1alpha1.PipelineRunning, 20*time.Second)
	urgent := create(t, wrappers.NewPT(ns, "urgent").Queue(q).PriorityClass(urgentClass).Phase("train", 4).PodTemplate(worker("pool-within", 1, 3, "")).Obj())
	sampleWholeGangs(t, ns, 8, 90*time.Second, func() bool {
		return get(t, low).Status.State == v1alpha1.PipelineSucceeded && get(t, urgent).Status.State == v1alpha1.PipelineSucceeded
	})
	victim := get(t, low).Status.Phases[0]
	i := slices.IndexFunc(victim.History, func(h v1alpha1.PhaseEvent) bool { return h.Type == v1alpha1.PhaseEventPreempted })
	if i < 0 {
		t.Fatalf("the low-priority gang was not preempted: %+v", victim.History)
	}
	if want := "preempted within queue " + q + " (withinQueue LowerPriority) for " + ns + "/urgent/train, priority 100 over its 0"; !strings.HasPrefix(victim.History[i].Message, want) {
		t.Errorf("Preempted record %q, want it to start %q", victim.History[i].Message, want)
	}
	if victim.Attempt != 0 {
		t.Errorf("the preempted gang ran as attempt %d, want the same attempt 0", victim.Attempt)
	}
	// The urgent gang started before the low one finished its rerun.
	up, lp := get(t, urgent).Status.Phases[0], victim
	if up.StartTime == nil || lp.StartTime == nil || !up.StartTime.Before(lp.StartTime) {
		t.Errorf("the urgent gang started at %v, the low one's rerun at %v: want the urgent first", up.StartTime, lp.StartTime)
	}
	body := scrape(t)
	if want := fmt.Sprintf(`phasegang_tenantqueue_preempted_gangs_total{queue=%q} 1`, q); !strings.Contains(body, want) {
		t.Errorf("/metrics lacks %s", want)
	}
}

// Two queues of 4 GPUs in one cohort on 8, the first with withinQueue
// LowerPriority: its priority-0 gang holds 2 of its 4, the other queue's
// 6-GPU gang borrows the other 2, and the cohort is full. A priority-100
// gang of 4 arrives in the first queue: it fits within its nominal quota
// only once its queue's low gang is gone, and then needs the borrowed 2
// back too. Past the 2-second grace both are preempted in one step (as
// Kueue does), the urgent gang runs first, and both victims rerun as the
// same attempt. Taken apart, neither preemption would fire.
func TestPreemptionWithinQueueAndCohortTogether(t *testing.T) {
	ns := namespace(t)
	sfx := ns[strings.LastIndex(ns, "-")+1:]
	qa, qb, cohort := "team-a-"+sfx, "team-b-"+sfx, "joint-"+sfx
	nodes(t, "pool-joint", 1, 8)
	createQueue(t, wrappers.MakeQueue(qa).Cohort(cohort).Nominal("nvidia.com/gpu", "4").
		WithinQueue(v1alpha1.PreemptLowerPriority).Reclaim(v1alpha1.PreemptAny).ReclaimGrace(2*time.Second).Obj())
	createQueue(t, wrappers.MakeQueue(qb).Cohort(cohort).Nominal("nvidia.com/gpu", "4").Obj())
	urgentClass := priorityClass(t, "e2e-joint-"+sfx, 100)

	low := create(t, wrappers.NewPT(ns, "low").Queue(qa).Phase("train", 2).PodTemplate(worker("pool-joint", 1, 25, "")).Obj())
	waitState(t, low, v1alpha1.PipelineRunning, 20*time.Second)
	borrower := create(t, wrappers.NewPT(ns, "borrower").Queue(qb).Phase("train", 6).PodTemplate(worker("pool-joint", 1, 25, "")).Obj())
	waitState(t, borrower, v1alpha1.PipelineRunning, 20*time.Second)
	urgent := create(t, wrappers.NewPT(ns, "urgent").Queue(qa).PriorityClass(urgentClass).Phase("train", 4).PodTemplate(worker("pool-joint", 1, 3, "")).Obj())
	sampleWholeGangs(t, ns, 8, 120*time.Second, func() bool {
		for _, pt := range []*v1alpha1.PhasedTraining{low, borrower, urgent} {
			if get(t, pt).Status.State != v1alpha1.PipelineSucceeded {
				return false
			}
		}
		return true
	})

	preempted := func(pt *v1alpha1.PhasedTraining) (v1alpha1.PhaseStatus, string) {
		ph := get(t, pt).Status.Phases[0]
		for _, h := range ph.History {
			if h.Type == v1alpha1.PhaseEventPreempted {
				return ph, h.Message
			}
		}
		t.Fatalf("%s's gang was not preempted: %+v", pt.Name, ph.History)
		return ph, ""
	}
	lowPhase, lowWhy := preempted(low)
	if want := "preempted within queue " + qa + " (withinQueue LowerPriority) for " + ns + "/urgent/train"; !strings.HasPrefix(lowWhy, want) {
		t.Errorf("low's Preempted record %q, want it to start %q", lowWhy, want)
	}
	borrowerPhase, borrowerWhy := preempted(borrower)
	if !strings.Contains(borrowerWhy, "queue "+qa+" reclaims") || !strings.Contains(borrowerWhy, cohort) {
		t.Errorf("the borrower's Preempted record does not name the reclaiming queue and cohort: %q", borrowerWhy)
	}
	for name, ph := range map[string]v1alpha1.PhaseStatus{"low": lowPhase, "borrower": borrowerPhase} {
		if ph.Attempt != 0 {
			t.Errorf("%s's preempted gang ran as attempt %d, want the same attempt 0", name, ph.Attempt)
		}
	}
	// The urgent gang started no later than low's rerun (which may start
	// beside it at once, borrowing the other queue's quota the preemption
	// freed; the times are whole seconds).
	up := get(t, urgent).Status.Phases[0]
	if up.StartTime == nil || lowPhase.StartTime == nil || lowPhase.StartTime.Before(up.StartTime) {
		t.Errorf("the urgent gang started at %v, low's rerun at %v: want the urgent first", up.StartTime, lowPhase.StartTime)
	}
}

// sampleWholeGangs polls until done or the timeout, failing if a Running
// phase ever holds less than its whole gang or the bound, unfinished
// worker pods ask for more than gpus GPUs.
func sampleWholeGangs(t *testing.T, ns string, gpus int, timeout time.Duration, done func() bool) {
	t.Helper()
	for end := time.Now().Add(timeout); ; time.Sleep(300 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not finished within %v", timeout)
		}
		var list v1alpha1.PhasedTrainingList
		if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, pt := range list.Items {
			for _, p := range pt.Status.Phases {
				if p.State.Reserved() && int32(len(p.Assignments)) < p.Workers.Min {
					t.Fatalf("%s phase %s is %s holding a partial gang: %d workers assigned, min %d", pt.Name, p.Name, p.State, len(p.Assignments), p.Workers.Min)
				}
			}
		}
		if used := boundGPUs(t, ns); used > gpus {
			t.Fatalf("bound worker pods hold %d GPUs, more than the %d the nodes have", used, gpus)
		}
		if done() {
			return
		}
	}
}

// boundGPUs sums the GPUs of worker pods bound to a node and not finished.
func boundGPUs(t *testing.T, ns string) int {
	t.Helper()
	n := 0
	for _, p := range pods(t, ns, map[string]string{"phasegang.dev/managed": "true"}) {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, c := range p.Spec.Containers {
			q := c.Resources.Requests["nvidia.com/gpu"]
			n += int(q.Value())
		}
	}
	return n
}

// `phasegang queue` on the cluster: a lender's gang within its reclaim
// grace period is listed first in its queue, waiting for it, and the
// borrower's younger gang is named as the one a preemption takes next;
// nothing is preempted (the grace is an hour).
func TestQueueCommand(t *testing.T) {
	ns := namespace(t)
	sfx := ns[strings.LastIndex(ns, "-")+1:]
	qa, qb, cohort := "team-a-"+sfx, "team-b-"+sfx, "research-"+sfx
	nodes(t, "pool-qcmd", 2, 4)
	createQueue(t, wrappers.MakeQueue(qa).Cohort(cohort).Nominal("nvidia.com/gpu", "4").Obj())
	createQueue(t, wrappers.MakeQueue(qb).Cohort(cohort).Nominal("nvidia.com/gpu", "4").
		Reclaim(v1alpha1.PreemptAny).ReclaimGrace(time.Hour).Obj())
	a1 := create(t, wrappers.NewPT(ns, "team-a-1").Queue(qa).Phase("train", 4).PodTemplate(worker("pool-qcmd", 1, 120, "")).Obj())
	waitState(t, a1, v1alpha1.PipelineRunning, 20*time.Second)
	a2 := create(t, wrappers.NewPT(ns, "team-a-2").Queue(qa).Phase("train", 4).PodTemplate(worker("pool-qcmd", 1, 120, "")).Obj())
	waitState(t, a2, v1alpha1.PipelineRunning, 20*time.Second)
	b := create(t, wrappers.NewPT(ns, "team-b").Queue(qb).Phase("train", 4).PodTemplate(worker("pool-qcmd", 1, 5, "")).Obj())
	eventually(t, 20*time.Second, "team B's gang to wait for its queue", func() (bool, error) {
		cur := get(t, b)
		return len(cur.Status.Phases) > 0 && strings.HasPrefix(cur.Status.Phases[0].WaitingFor, "queue "), fmt.Errorf("%s", describe(cur))
	})

	out, err := exec.Command(binary, "queue", qb).CombinedOutput()
	if err != nil {
		t.Fatalf("phasegang queue %s: %v\n%s", qb, err, out)
	}
	t.Logf("phasegang queue %s:\n%s", qb, out)
	lines := strings.Split(string(out), "\n")
	waiting := ""
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 3 && f[0] == qb && f[2] == ns+"/team-b" {
			waiting = l
			if f[1] != "1" {
				t.Errorf("team B's gang is at position %s, want 1: %q", f[1], l)
			}
		}
	}
	if !strings.Contains(waiting, "queue "+qb) {
		t.Errorf("team B's gang is not listed as waiting for its queue:\n%s", out)
	}
	next := fmt.Sprintf("  %s/team-a-2 train (queue %s) for %s/team-b train (queue %s)", ns, qa, ns, qb)
	if !strings.Contains(string(out), "Preempted next, if every waiting lender's reclaim grace period ended now:\n"+next) {
		t.Errorf("want %q named as preempted next:\n%s", next, out)
	}
	if strings.Contains(string(out), "Preempted by this cycle") {
		t.Errorf("within an hour's grace nothing is preempted now:\n%s", out)
	}
	// --namespace narrows to one namespace's gangs: another namespace has none.
	out, err = exec.Command(binary, "queue", "--namespace", "no-such-namespace").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "(no gang waits)") {
		t.Errorf("phasegang queue --namespace no-such-namespace: %v\n%s", err, out)
	}
	for _, p := range get(t, a2).Status.Phases[0].History {
		if p.Type == v1alpha1.PhaseEventPreempted {
			t.Errorf("team-a-2 was preempted within the grace period: %+v", p)
		}
	}
}
