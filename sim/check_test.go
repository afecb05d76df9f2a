package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// checkScenario is a two-phase pipeline (train on trainMin one-GPU workers,
// then a one-worker test) on nodes; testSelector, if set, is the test
// phase's nodeSelector.
func checkScenario(t *testing.T, nodes, trainMin, testSelector string) *Scenario {
	t.Helper()
	sel := ""
	if testSelector != "" {
		sel = "\n            nodeSelector: " + testSelector
	}
	data := fmt.Sprintf(`
cluster: {nodePools: [%s]}
workload:
- count: 2
  runtimes: {train: 1h, test: 5m}
  training:
    metadata: {name: p, namespace: ml}
    spec:
      phases:
      - name: train
        gang: {min: %s}
        template: {spec: {containers: [{name: w, image: i, resources: {requests: {nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}}]}}
      - name: test
        dependsOn: [train]
        gang: {min: 1}
        template:
          spec:%s
            containers: [{name: w, image: i, resources: {requests: {nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}}]
`, nodes, trainMin, sel)
	sc, err := LoadScenario([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// A scenario on which no pipeline can ever run is refused before it is
// simulated, saying why; one on which some pipeline can run is not.
func TestCheckRunnable(t *testing.T) {
	const (
		gpuNode   = `{name: gpu, count: 1, allocatable: {nvidia.com/gpu: "8", cpu: "64", pods: "110"}, labels: {gpu: a100}}`
		cpuNode   = `{name: cpu, count: 2, allocatable: {cpu: "64", pods: "110"}}`
		noPods    = `{name: gpu, count: 1, allocatable: {nvidia.com/gpu: "8", cpu: "64"}}`
		twoGPUs   = `{name: gpu, count: 4, allocatable: {nvidia.com/gpu: "2", cpu: "64", pods: "110"}}`
		secondGPU = `{name: big, count: 1, allocatable: {nvidia.com/gpu: "8", pods: "110"}, labels: {gpu: h100}}`
	)
	for name, tc := range map[string]struct {
		nodes, trainMin, testSelector string
		want                          []string // in the error; none: no error
	}{
		"runs":                     {nodes: gpuNode, trainMin: "8"},
		"no GPU on any node":       {nodes: cpuNode, trainMin: "1", want: []string{"2 nodes, 0 GPUs", "workload[0] ml/p (2 pipelines), phase train", "needs 1 nvidia.com/gpu, and no node has that resource"}},
		"no pods resource":         {nodes: noPods, trainMin: "1", want: []string{"phase train", "needs 1 pods, and no node has that resource"}},
		"gang larger than cluster": {nodes: twoGPUs, trainMin: "9", want: []string{"phase train", "needs 9 workers", "the 4 matching nodes hold at most 8"}},
		"a later phase's nodeSelector matches no node": {nodes: gpuNode, trainMin: "1", testSelector: "{gpu: h100}",
			want: []string{"phase test: no node matches the worker's constraints: 1 nodes in the cluster, 1 rejected by nodeSelector"}},
		"the selector matches one pool": {nodes: gpuNode + ", " + secondGPU, trainMin: "1", testSelector: "{gpu: h100}"},
	} {
		t.Run(name, func(t *testing.T) {
			err := CheckRunnable(checkScenario(t, tc.nodes, tc.trainMin, tc.testSelector))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("want an error, got none")
			}
			for _, w := range append(tc.want, "no pipeline can run on this cluster") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// One runnable workload is enough; when none is, each is named once, a
// trace's jobs of one shape together, and a long list is cut.
func TestCheckRunnableNamesWorkloads(t *testing.T) {
	sc := checkScenario(t, `{name: gpu, count: 1, allocatable: {nvidia.com/gpu: "4", pods: "110"}}`, "1", "")
	if err := CheckRunnable(sc); err != nil {
		t.Fatalf("runnable scenario: %v", err)
	}
	var jobs []TraceJob
	for i := range 20 {
		jobs = append(jobs, TraceJob{Duration: time.Hour, GPUs: 18 + i%8}) // 8 shapes: trains of min 9 to 13
	}
	trace := TraceScenario("t.csv", jobs, DefaultTraceOptions(), 1, 8)
	err := CheckRunnable(trace)
	if err == nil {
		t.Fatal("want an error for a trace whose every job is larger than the cluster")
	}
	if got := strings.Count(err.Error(), "\n  jobs like trace/"); got != maxCheckLines {
		t.Errorf("%d workloads named, want %d:\n%v", got, maxCheckLines, err)
	}
	if !strings.Contains(err.Error(), "… and 3 more workloads") {
		t.Errorf("error does not say how many more:\n%v", err)
	}
	// One job that fits makes the trace runnable.
	trace = TraceScenario("t.csv", append(jobs, TraceJob{Duration: time.Hour, GPUs: 2}), DefaultTraceOptions(), 1, 8)
	if err := CheckRunnable(trace); err != nil {
		t.Errorf("a trace with a job that fits: %v", err)
	}
}

// The check reads a phase as the controller does (driver.Request): a gang
// of 4 workers that must each have a node of their own (required
// anti-affinity on their own labels) can never run on 2 nodes, though the
// nodes have GPUs enough. It once built the request by hand without the
// one-per-node rule (nor host ports, nor quota facts), and let the run
// print 0/2 finished.
func TestCheckRunnableOnePerNode(t *testing.T) {
	data := `
cluster: {nodePools: [{name: gpu, count: 2, allocatable: {nvidia.com/gpu: "8", cpu: "64", pods: "110"}}]}
workload:
- count: 2
  runtimes: {train: 1h}
  training:
    metadata: {name: p, namespace: ml}
    spec:
      phases:
      - name: train
        gang: {min: 4}
        template:
          metadata: {labels: {role: spread}}
          spec:
            affinity:
              podAntiAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {role: spread}}}
            containers: [{name: w, image: i, resources: {requests: {nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}}]
`
	sc, err := LoadScenario([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	err = CheckRunnable(sc)
	if err == nil {
		t.Fatal("CheckRunnable accepted a gang of 4 one-per-node workers on 2 nodes")
	}
	if !strings.Contains(err.Error(), "phase train") {
		t.Errorf("the error does not name the phase: %v", err)
	}
	t.Log(err)
}
