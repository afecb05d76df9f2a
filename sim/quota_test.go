package sim

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"time"
)

// quotaScenario: two 4-worker one-GPU pipelines on a cluster of 8 GPUs
// in namespace ml, whose quota admits 4 GPUs; and one 8-worker pipeline,
// which the quota could never admit.
const quotaScenario = `
name: quota
cluster:
  nodePools:
  - name: gpu
    count: 1
    allocatable: {nvidia.com/gpu: "8", cpu: "64", pods: "110"}
quotas:
- metadata: {name: gpu-quota, namespace: ml}
  spec:
    hard: {requests.nvidia.com/gpu: "4", services: "1"}
workload:
- count: 2
  runtimes: {train: 1h}
  training:
    metadata: {name: small, namespace: ml}
    spec:
      phases:
      - name: train
        gang: {min: 4}
        template:
          spec:
            containers:
            - name: worker
              resources:
                requests: {nvidia.com/gpu: "1", cpu: "1"}
                limits: {nvidia.com/gpu: "1"}
- runtimes: {train: 1h}
  training:
    metadata: {name: big, namespace: ml}
    spec:
      phases:
      - name: train
        gang: {min: 8}
        template:
          spec:
            containers:
            - name: worker
              resources:
                requests: {nvidia.com/gpu: "1", cpu: "1"}
                limits: {nvidia.com/gpu: "1"}
`

func TestQuotaScenario(t *testing.T) {
	sc, err := LoadScenario([]byte(quotaScenario))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Policy{PolicyPhasegang, PolicyPerPod} {
		t.Run(string(p), func(t *testing.T) {
			r := run(t, sc, p)
			got := map[string]PipelineResult{}
			for _, pr := range r.Pipelines {
				got[pr.Name] = pr
			}
			big := got["ml/big"]
			if p == PolicyPerPod {
				// Pod by pod, the quota splits the gangs: each holds part
				// of the quota and waits for the rest forever.
				for name, pr := range got {
					if pr.State != StateDeadlocked {
						t.Errorf("per-pod %s: %s, want Deadlocked", name, pr.State)
					}
				}
			}
			if p == PolicyPhasegang {
				if big.State != StateInfeasible || !strings.Contains(big.Message, "namespace ml's quota gpu-quota allows at most 4 nvidia.com/gpu (its hard limit); the gang needs 8 at once") {
					t.Errorf("big: %s %q, want Infeasible naming the quota", big.State, big.Message)
				}
				// The quota admits one small gang at a time: one after the other.
				a, b := got["ml/small-0"], got["ml/small-1"]
				if a.State != "Succeeded" || b.State != "Succeeded" || a.Finish != time.Hour || b.Finish != 2*time.Hour {
					t.Errorf("small gangs: %+v, %+v; want one after the other within the quota", a, b)
				}
			}
			// Never more than the quota's 4 GPUs at once, whatever the policy.
			if peak := peakGPUs(r); peak > 4 {
				t.Errorf("%s ran %v GPUs at once in namespace ml, quota 4", p, peak)
			}
		})
	}
}

func peakGPUs(r *Result) float64 {
	type edge struct {
		at time.Duration
		d  float64
	}
	var es []edge
	for _, iv := range r.Intervals {
		es = append(es, edge{iv.Start, iv.GPUs}, edge{iv.End, -iv.GPUs})
	}
	// Ends before starts at the same instant.
	slices.SortFunc(es, func(a, b edge) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.d, b.d)) })
	var cur, peak float64
	for _, e := range es {
		cur += e.d
		peak = max(peak, cur)
	}
	return peak
}

func TestQuotaScenarioValidation(t *testing.T) {
	bad := strings.Replace(quotaScenario, `hard: {requests.nvidia.com/gpu: "4", services: "1"}`, `hard: {services: "1"}
    scopes: [Bogus]`, 1)
	_, err := LoadScenario([]byte(bad))
	for _, want := range []string{"quotas[0].spec.hard: no resource that limits pods", `quotas[0].spec: unknown scope "Bogus"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to say %q", err, want)
		}
	}
}
