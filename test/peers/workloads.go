package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// phaseSpec is one phase of a pipeline: a gang of workers, each holding
// gpus GPUs and running seconds (kwok's phasegang.dev/sim-run-seconds).
type phaseSpec struct {
	name    string
	workers int32
	gpus    int64
	seconds int
}

// pipelineSpec is one pipeline: its phases run one after the other, the
// first at arrival (from the start of the run).
type pipelineSpec struct {
	name    string
	arrival time.Duration
	phases  []phaseSpec
}

// workload is a cluster shape and the pipelines that arrive on it.
type workload struct {
	name        string
	nodes       int
	gpusPerNode int
	pipelines   []pipelineSpec
	about       string
}

func (w workload) pods() int {
	n := 0
	for _, p := range w.pipelines {
		for _, ph := range p.phases {
			n += int(ph.workers)
		}
	}
	return n
}

var workloads = map[string]func() workload{
	"seed":  seedWorkload,
	"burst": burstWorkload,
	"frag":  fragWorkload,
	"cost":  costWorkload,
	"ci":    ciWorkload,
}

func workloadNames() string {
	names := make([]string, 0, len(workloads))
	for n := range workloads {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// seedWorkload is the seed scenario (examples/simulate/seed-deadlock.yaml)
// scaled from minutes to seconds, 1 s per 2 min: 12 pipelines of train (8
// one-GPU workers, 15 s) → validate (2, 5 s) → test (1, 5 s) on 2 × 8
// GPUs; nine arrive 8 s apart, three more at once at 35 s. The train is
// rigid (8 workers), as a batch/v1 Job's parallelism is.
func seedWorkload() workload {
	w := workload{name: "seed", nodes: 2, gpusPerNode: 8,
		about: "12 pipelines train 8×1 GPU 15 s → validate 2×1 5 s → test 1×1 5 s; 2 nodes × 8 GPUs; 9 arrive 8 s apart, 3 at once at 35 s"}
	phases := []phaseSpec{{"train", 8, 1, 15}, {"validate", 2, 1, 5}, {"test", 1, 1, 5}}
	for i := range 9 {
		w.pipelines = append(w.pipelines, pipelineSpec{fmt.Sprintf("job-%d", i), time.Duration(i) * 8 * time.Second, phases})
	}
	for i := range 3 {
		w.pipelines = append(w.pipelines, pipelineSpec{fmt.Sprintf("burst-%d", i), 35 * time.Second, phases})
	}
	return w
}

// burstWorkload is the wave burst (sim/testdata/suite/wave-burst.yaml)
// scaled to 8 nodes × 8 GPUs: 5 waves, one per second, each wave's trains
// (n workers of 8 GPUs, 20 s) filling the 8 nodes exactly, then validate
// and test (1 one-GPU worker, 4 s each).
func burstWorkload() workload {
	w := workload{name: "burst", nodes: 8, gpusPerNode: 8,
		about: "17 pipelines in 5 waves 1 s apart, each wave's trains (n whole-node workers, 20 s) filling 8 nodes × 8 GPUs → validate 1×1 GPU 4 s → test 1×1 GPU 4 s"}
	waves := [][]int32{{4, 2, 2}, {2, 2, 2, 1, 1}, {4, 4}, {2, 2, 4}, {1, 1, 2, 4}}
	for wv, trains := range waves {
		for j, n := range trains {
			w.pipelines = append(w.pipelines, pipelineSpec{fmt.Sprintf("w%d-%d-n%d", wv, j, n), time.Duration(wv) * time.Second,
				[]phaseSpec{{"train", n, 8, 20}, {"validate", 1, 1, 4}, {"test", 1, 1, 4}}})
		}
	}
	return w
}

// fragWorkload is fragmentation (sim/testdata/suite/fragmentation.yaml)
// with 2-GPU workers among 1-GPU workers, on 4 nodes × 8 GPUs: big
// pipelines (train 4 workers × 2 GPUs, 20 s → validate 1×1 GPU, 4 s)
// arrive every 8 s, small ones (train 4 × 1 GPU, 8 s → validate 1×1 GPU,
// 3 s) every 2 s.
func fragWorkload() workload {
	w := workload{name: "frag", nodes: 4, gpusPerNode: 8,
		about: "6 big pipelines (train 4×2 GPUs 20 s → validate 1×1 4 s) every 8 s among 24 small ones (train 4×1 GPU 8 s → validate 1×1 3 s) every 2 s from 1 s; 4 nodes × 8 GPUs"}
	for i := range 6 {
		w.pipelines = append(w.pipelines, pipelineSpec{fmt.Sprintf("big-%d", i), time.Duration(i) * 8 * time.Second,
			[]phaseSpec{{"train", 4, 2, 20}, {"validate", 1, 1, 4}}})
	}
	for i := range 24 {
		w.pipelines = append(w.pipelines, pipelineSpec{fmt.Sprintf("small-%d", i), time.Second + time.Duration(i)*2*time.Second,
			[]phaseSpec{{"train", 4, 1, 8}, {"validate", 1, 1, 3}}})
	}
	slices.SortStableFunc(w.pipelines, func(a, b pipelineSpec) int { return int(a.arrival - b.arrival) })
	return w
}

// costWorkload is test/scale's cost run: 100 pipelines × 3 phases of mixed
// gang sizes (train 1,2,4,8,16,4,2,8 one-GPU workers, validate max(1,g/4),
// test 1), all at once, workers running 5 s, on 200 nodes × 8 GPUs.
func costWorkload() workload {
	w := workload{name: "cost", nodes: 200, gpusPerNode: 8,
		about: "100 pipelines at once, train g ∈ {1,2,4,8,16,4,2,8} × 1 GPU → validate max(1,g/4) → test 1, every worker 5 s; 200 nodes × 8 GPUs"}
	sizes := []int32{1, 2, 4, 8, 16, 4, 2, 8}
	for i := range 100 {
		g := sizes[i%len(sizes)]
		w.pipelines = append(w.pipelines, pipelineSpec{fmt.Sprintf("p-%03d", i), 0,
			[]phaseSpec{{"train", g, 1, 5}, {"validate", max(1, g/4), 1, 5}, {"test", 1, 1, 5}}})
	}
	return w
}

// ciWorkload is the small run CI makes of every system (.ci/run): six
// seed-like pipelines on 2 nodes × 4 GPUs, three at once at the start and
// three at once 2 s later, so that plain pods interleave into partial
// gangs while a gang system shows none: train 4 one-GPU workers 5 s →
// validate 2 × 1 GPU 2 s → test 1 × 1 GPU 2 s.
func ciWorkload() workload {
	w := workload{name: "ci", nodes: 2, gpusPerNode: 4,
		about: "6 pipelines train 4×1 GPU 5 s → validate 2×1 2 s → test 1×1 2 s; 2 nodes × 4 GPUs; 3 at once at 0 s, 3 at once at 2 s"}
	phases := []phaseSpec{{"train", 4, 1, 5}, {"validate", 2, 1, 2}, {"test", 1, 1, 2}}
	for i := range 6 {
		w.pipelines = append(w.pipelines, pipelineSpec{fmt.Sprintf("ci-%d", i), time.Duration(i/3) * 2 * time.Second, phases})
	}
	return w
}
