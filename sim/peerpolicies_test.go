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

// The kueue policy as Kueue v0.17.0 behaves: b (8 GPUs) and c, which do
// not fit while a's train runs, are parked; when a's train ends at 10m,
// a's validate, created then, is tried at once and admitted, and the
// parked Workloads are tried again one requeue batch (1 s) later: c fits
// beside the validate, b (8) does not and waits for both. Under
// phasegang b, queued for 9 minutes, is still within its starvation
// bound, so c backfills beside a's validate at 10m as well, and b goes
// at 20m.
func TestKueueParksWhatDoesNotFitUntilTheNextRequeue(t *testing.T) {
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
	const batch = time.Second
	want := map[Policy]map[string]time.Duration{
		PolicyKueue:     {"default/a": 20 * time.Minute, "default/c": 15*time.Minute + batch, "default/b": 30*time.Minute + batch},
		PolicyPhasegang: {"default/a": 20 * time.Minute, "default/c": 15 * time.Minute, "default/b": 30 * time.Minute},
	}
	for p, w := range want {
		if got := finish(p); !equalFinish(got, w) {
			t.Errorf("%s finishes %v, want %v", p, got, w)
		}
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

// The volcano policy runs each phase as a rigid gang ordered by its own
// creation: when a's train ends at 10m, b's train (created at 1m) takes
// the whole node before a's validate (created at 10m) or c (2m, 4 GPUs,
// which does not fit beside b); both go at 20m.
func TestVolcanoOrdersPhasesByTheirOwnCreation(t *testing.T) {
	sc, err := LoadScenario([]byte(kueueScenario))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]time.Duration{}
	for _, r := range run(t, sc, PolicyVolcano).Pipelines {
		got[r.Name] = r.Finish
	}
	if want := map[string]time.Duration{"default/a": 30 * time.Minute, "default/b": 20 * time.Minute, "default/c": 25 * time.Minute}; !equalFinish(got, want) {
		t.Errorf("volcano finishes %v, want %v", got, want)
	}
}
