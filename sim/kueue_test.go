package sim

import (
	"testing"
	"time"
)

// kueueScenario: one node of 8 GPUs; a (t = 0) trains 8 GPUs for 10m then
// validates on 1 for 10m; b (t = 1m) trains 8 for 10m; c (t = 2m) runs
// one 4-GPU worker for 5m.
const kueueScenario = `
name: kueue-order
cluster:
  nodePools:
  - {name: gpu, count: 1, allocatable: {nvidia.com/gpu: "8", cpu: "64", pods: "110"}}
workload:
- arrival: 0s
  runtimes: {train: 10m, validate: 10m}
  training: &a
    apiVersion: phasegang.dev/v1alpha1
    kind: PhasedTraining
    metadata: {name: a}
    spec:
      phases:
      - name: train
        gang: {min: 8}
        template: {spec: {containers: [{name: w, image: x, resources: {requests: {nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}}]}}
      - name: validate
        dependsOn: [train]
        gang: {min: 1}
        template: {spec: {containers: [{name: w, image: x, resources: {requests: {nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}}]}}
- arrival: 1m
  runtimes: {train: 10m}
  training:
    apiVersion: phasegang.dev/v1alpha1
    kind: PhasedTraining
    metadata: {name: b}
    spec:
      phases:
      - name: train
        gang: {min: 8}
        template: {spec: {containers: [{name: w, image: x, resources: {requests: {nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}}]}}
- arrival: 2m
  runtimes: {train: 5m}
  training:
    apiVersion: phasegang.dev/v1alpha1
    kind: PhasedTraining
    metadata: {name: c}
    spec:
      phases:
      - name: train
        gang: {min: 1}
        template: {spec: {containers: [{name: w, image: x, resources: {requests: {nvidia.com/gpu: "4"}, limits: {nvidia.com/gpu: "4"}}}]}}
`

// The kueue policy queues each phase's Workload at its own creation: a's
// validate, created when a's train ends at 10m, queues behind b's train
// (created at 1m) and c (2m), where phasegang keeps a's age for it. And
// BestEffortFIFO passes a Workload that does not fit: with b's 8 GPUs
// admitted at 10m, nothing else fits until 20m; then a's validate (1 GPU)
// and c (4) are admitted together, c first by creation.
func TestKueueQueuesEachPhaseAtItsOwnCreation(t *testing.T) {
	sc, err := LoadScenario([]byte(kueueScenario))
	if err != nil {
		t.Fatal(err)
	}
	finish := func(p Policy) map[string]time.Duration {
		out := map[string]time.Duration{}
		for _, r := range run(t, sc, p).Pipelines {
			out[r.Name] = r.Finish
		}
		return out
	}
	k, pg := finish(PolicyKueue), finish(PolicyPhasegang)
	// kueue: a train 0–10m; b 10–20m; c and a's validate from 20m.
	if want := map[string]time.Duration{"default/a": 30 * time.Minute, "default/b": 20 * time.Minute, "default/c": 25 * time.Minute}; !equalFinish(k, want) {
		t.Errorf("kueue finishes %v, want %v", k, want)
	}
	// phasegang: a's validate keeps a's age and starts at 10m beside c
	// (4 + 1 GPUs); b's 8 wait for both.
	if pg["default/a"] != 20*time.Minute {
		t.Errorf("phasegang finishes a at %v, want 20m (its validate keeps the pipeline's age)", pg["default/a"])
	}
}

func equalFinish(got, want map[string]time.Duration) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
