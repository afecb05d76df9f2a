package sim

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// queueScenario: two teams' queues of 4 GPUs each in one cohort, on a
// cluster of 8. Team A's eight pipelines (1-GPU train, then a 2-hour
// 1-GPU validate) arrive at once and borrow team B's idle quota; team
// B's 4-GPU pipeline arrives at 30m. %s is team B's reclaimWithinCohort.
const queueScenario = `
name: queues
cluster:
  nodePools:
  - name: gpu
    count: 2
    allocatable: {nvidia.com/gpu: "4", cpu: "64", pods: "110"}
queues:
- metadata: {name: team-a}
  spec:
    cohort: research
    resources:
    - {name: nvidia.com/gpu, nominalQuota: 4}
- metadata: {name: team-b}
  spec:
    cohort: research
    resources:
    - {name: nvidia.com/gpu, nominalQuota: "4"}
    preemption: {reclaimWithinCohort: %s}
workload:
%s- arrival: 30m
  runtimes: {train: 1h}
  training:
    metadata: {name: b, namespace: team-b}
    spec:
      queueName: team-b
      phases:
      - name: train
        gang: {min: 4}
        template:
          spec:
            containers:
            - name: worker
              resources:
                requests: {nvidia.com/gpu: "1"}
                limits: {nvidia.com/gpu: "1"}
`

// teamA is two of team A's pipelines whose train phase runs for train.
const teamA = `- count: 2
  runtimes: {train: %s, validate: 2h}
  training:
    metadata: {name: a-%s, namespace: team-a}
    spec:
      queueName: team-a
      phases:
      - name: train
        gang: {min: 1}
        template:
          spec:
            containers:
            - name: worker
              resources:
                requests: {nvidia.com/gpu: "1"}
                limits: {nvidia.com/gpu: "1"}
      - name: validate
        dependsOn: [train]
        gang: {min: 1}
        template:
          spec:
            containers:
            - name: worker
              resources:
                requests: {nvidia.com/gpu: "1"}
                limits: {nvidia.com/gpu: "1"}
`

func queueScenarioWith(reclaim string) string {
	var a strings.Builder
	for _, train := range []string{"1h", "1h10m", "1h20m", "1h30m"} {
		fmt.Fprintf(&a, teamA, train, strings.ReplaceAll(train, "m", ""))
	}
	return fmt.Sprintf(queueScenario, reclaim, a.String())
}

// TestQueueScenario: team A borrows team B's idle quota at once (all
// eight trains start at 0); team B's gang then waits for its nominal
// quota. Without reclaim every GPU a train frees goes to team A's next
// phase, on borrowed quota, and team B waits until four free at once
// after the validates; with reclaimWithinCohort team A's next phases are
// held at the phase boundary and team B starts as soon as four trains
// have ended.
func TestQueueScenario(t *testing.T) {
	for _, tc := range []struct {
		reclaim string
		// wantWait is team B's wait for its gang.
		wantWait time.Duration
	}{
		{"Never", 2*time.Hour + 40*time.Minute}, // 4 validates end at 3h10m
		{"Any", 40 * time.Minute},               // 4 trains end at 1h10m
	} {
		t.Run(tc.reclaim, func(t *testing.T) {
			sc, err := LoadScenario([]byte(queueScenarioWith(tc.reclaim)))
			if err != nil {
				t.Fatal(err)
			}
			r := run(t, sc, PolicyPhasegang)
			got := map[string]PipelineResult{}
			for _, pr := range r.Pipelines {
				if pr.State != "Succeeded" {
					t.Errorf("%s: %s, want Succeeded", pr.Name, pr.State)
				}
				got[pr.Name] = pr
			}
			for name, pr := range got {
				if strings.HasPrefix(name, "team-a/") && pr.Queueing > 40*time.Minute+2*time.Hour {
					t.Errorf("%s queued %v", name, pr.Queueing)
				}
			}
			// All of team A's trains start at once: 4 nominal + 4 borrowed.
			trains := 0
			for _, iv := range r.Intervals {
				if iv.Phase == "train" && iv.Start == 0 {
					trains++
				}
			}
			if trains != 8 {
				t.Errorf("%d trains started at 0, want 8 (team A borrowing team B's idle quota)", trains)
			}
			if b := got["team-b/b"]; b.Queueing != tc.wantWait {
				t.Errorf("team B's gang waited %v, want %v", b.Queueing, tc.wantWait)
			}
			if peak := peakGPUs(r); peak > 8 {
				t.Errorf("ran %v GPUs at once on 8", peak)
			}
		})
	}
}

// TestQueueScenarioPreempts: with a reclaimGracePeriod of 5m, team B's
// gang preempts four of team A's borrowing trains at 35m (the simulator
// wakes for it: nothing else happens then) under every policy that holds
// quota: phasegang's and per-phase-rigid's gangs, whole-job's held gangs
// (the running phase stops and the pipeline queues for a new hold) and
// per-pod's pods. Everything still finishes, never over 8 GPUs, and the
// per-queue figures tell it: team B waited exactly its grace period, and
// team A lost the four trains' 35 minutes.
func TestQueueScenarioPreempts(t *testing.T) {
	sc := queueScenarioWith("Any, reclaimGracePeriod: 5m")
	for _, policy := range Policies {
		t.Run(string(policy), func(t *testing.T) {
			s, err := LoadScenario([]byte(sc))
			if err != nil {
				t.Fatal(err)
			}
			r := run(t, s, policy)
			for _, pr := range r.Pipelines {
				if pr.State != "Succeeded" {
					t.Errorf("%s: %s (%s), want Succeeded", pr.Name, pr.State, pr.Message)
				}
			}
			if peak := peakGPUs(r); peak > 8 {
				t.Errorf("ran %v GPUs at once on 8", peak)
			}
			f := r.Fairness
			if f == nil || len(f.Queues) != 2 {
				t.Fatalf("fairness %+v, want two queues", f)
			}
			a, b := f.Queues[0], f.Queues[1]
			if b.WaitMax != (5 * time.Minute).Seconds() {
				t.Errorf("team B's longest wait %vs, want its grace period 300s", b.WaitMax)
			}
			if a.Preempted != 4 || b.Preempted != 0 {
				t.Errorf("preempted A %d, B %d; want 4 of team A's trains", a.Preempted, b.Preempted)
			}
			if want := 4 * 35.0 / 60; math.Abs(a.PreemptedGPUh-want) > 1e-9 || f.PreemptedGPUh != a.PreemptedGPUh {
				t.Errorf("team A lost %v GPU-hours (total %v), want %v", a.PreemptedGPUh, f.PreemptedGPUh, want)
			}
			// B is entitled to its 4 GPUs from 30m to its end at 1h35m
			// and holds them from 35m.
			if want := 60.0 / 65; math.Abs(b.Share-want) > 1e-9 {
				t.Errorf("team B's share %v, want %v", b.Share, want)
			}
			if f.Jain <= 0.5 || f.Jain > 1 {
				t.Errorf("Jain's index %v, want in (0.5, 1]", f.Jain)
			}
		})
	}
}

func TestQueueScenarioValidation(t *testing.T) {
	bad := strings.Replace(queueScenarioWith("Never"), "queueName: team-b", "queueName: team-c", 1)
	bad = strings.Replace(bad, `- {name: nvidia.com/gpu, nominalQuota: 4}`, `- {name: nvidia.com/gpu, nominalQuota: 4, lendingLimit: 5}`, 1)
	_, err := LoadScenario([]byte(bad))
	for _, want := range []string{
		`workload[4].training.spec.queueName: no queue "team-c" in queues`,
		"queues[0].spec.resources[0].lendingLimit: Invalid value: \"5\": lendingLimit must not exceed nominalQuota",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to say %q", err, want)
		}
	}
}
