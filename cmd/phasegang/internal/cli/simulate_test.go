package cli

import (
	"encoding/json"
	"github.com/phasegang/phasegang/sim"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSimulate(t *testing.T) {
	seed, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "examples", "simulate", "seed-deadlock.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	scenario := func(name, from, to string) string {
		if !strings.Contains(string(seed), from) {
			t.Fatalf("the seed scenario has no %q", from)
		}
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(seed), from, to)), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	teams, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "sim", "testdata", "philly-teams.csv"))
	if err != nil {
		t.Fatal(err)
	}
	noGPUs := scenario("no-gpus", `nvidia.com/gpu: "8", `, "")
	noPods := scenario("no-pods", `, pods: "110"`, "")
	selector := scenario("selector", "        template: &worker\n          spec:\n", "        template: &worker\n          spec:\n            nodeSelector: {gpu: h100}\n")
	for name, tc := range map[string]struct {
		args       []string
		wantCode   int
		wantStdout []string // lines containing these, in this order
		wantStderr []string
	}{
		"built-in, every policy": {
			args: []string{"simulate", "--compare"},
			wantStdout: []string{
				"scenario seed-deadlock: 12 pipelines on 16 GPUs",
				"queued avg  queued p99  idle GPU·h",
				"phasegang     12/12", "per-pod      2/12", "whole-job     12/12", "per-phase-rigid     12/12", "strict-fifo     12/12",
				"per-pod: 10 of 12 pipelines did not finish (3 deadlocked, 7 unfinished):",
				"  ml/burst-0  Deadlocked  holds 6 workers",
				"  ml/job-8    Unfinished  ",
			},
		},
		"suite, a passing workload": {
			args: []string{"simulate", "--suite", "--suite-workloads", "tiresias-60"},
			wantStdout: []string{
				"policy suite: 1 workloads; phasegang ÷ the best baseline per metric; verdict: the targets of docs/simulator.md#policy-suite",
				"workload     pipelines  GPUs  makespan  LB      makespan/LB  JCT avg/LB  makespan ÷ best    JCT avg ÷ best  JCT p99 ÷ best     verdict",
				"tiresias-60  60         16    54m33s    54m31s  1.001        1.023       1.001 (whole-job)  0.981 (rigid)   1.001 (whole-job)  ok",
			},
		},
		"suite under sub-linear scaling": {
			args: []string{"simulate", "--suite", "--suite-workloads", "elastic-heavy", "--efficiency-per-doubling", "0.9"},
			wantStdout: []string{
				"scaling: efficiency 0.90 per doubling of an elastic phase's workers",
				"elastic-heavy  30         32    10h35m    9h04m  1.168        4.136       0.784 (per-pod)  0.833 (whole-job)  0.684 (rigid)   ok",
			},
		},
		"scaling efficiency out of range": {
			args: []string{"simulate", "--efficiency-per-doubling", "1.5"}, wantCode: 1,
			wantStderr: []string{"phasegang: --efficiency-per-doubling: scaling.efficiencyPerDoubling: 1.5 is not in [0.5, 1] (1 is linear scaling; below 0.5 more workers would run a phase slower)"},
		},
		"suite with a resize cost": {
			args: []string{"simulate", "--suite", "--suite-workloads", "tiresias-60", "--resize-cost", "2m"}, wantCode: 1,
			wantStdout: []string{
				"scaling: efficiency 1.00 per doubling of an elastic phase's workers; 2m0s lost per resize",
				"tiresias-60  60         16    54m31s    54m31s  1.000        1.841       1.000 (whole-job)  1.767 (rigid)   1.000 (whole-job)  FAIL: dominated by whole-job (JCT avg +72.3%)",
			},
			wantStderr: []string{"phasegang: policy suite: 1 of 1 workloads fail: tiresias-60 (dominated by whole-job (JCT avg +72.3%))"},
		},
		"negative resize cost": {
			args: []string{"simulate", "--resize-cost", "-1m"}, wantCode: 1,
			wantStderr: []string{"phasegang: --resize-cost: scaling.resizeCost: -1m0s is negative"},
		},
		"suite, a failing workload": {
			args: []string{"simulate", "--suite", "--suite-workloads", "tiresias-60, seed", "--efficiency-per-doubling", "0.9"}, wantCode: 1,
			wantStdout: []string{"tiresias-60", "seed         12         16    3h50m     3h18m   1.162        1.561       0.733 (whole-job)  0.662 (rigid)   0.570 (whole-job)  FAIL: makespan 1.162 × LB, above 1.10"},
			wantStderr: []string{"phasegang: policy suite: 1 of 2 workloads fail: seed (makespan 1.162 × LB, above 1.10)"},
		},
		"suite, an unknown workload": {
			args: []string{"simulate", "--suite", "--suite-workloads", "nope"}, wantCode: 1,
			wantStderr: []string{`--suite-workloads: no workload "nope" (want some of seed, tiresias-60, philly-day51,`},
		},
		"suite with a scenario": {
			args: []string{"simulate", "--suite", "--compare"}, wantCode: 1,
			wantStderr: []string{"--suite runs its own workloads under every policy"},
		},
		"a trace shared by two teams' queues": {
			args: []string{"simulate", "--trace", teams, "--clip", "24h", "--teams", "2", "--reclaim-grace", "0s", "--queue-chart", filepath.Join(dir, "queues.svg")},
			wantStdout: []string{
				"scenario philly-teams.csv: 1623 pipelines on 136 GPUs",
				"per queue (share: GPUs held ÷ entitled while the queue had demand",
				"  team-6c71a0  phasegang       68          2275.0      2290.2  100.7%     70           0       94.7%",
				"  team-ee9e8c  phasegang       68          4155.4      4130.9   99.4%     65           0       91.9%",
				"phasegang: Jain's index 1.000 over the queues' shares, 15.1 GPU-hours lost to preemption",
			},
			wantStderr: []string{"trace cluster: 17 nodes × 8 GPUs"},
		},
		"teams out of range": {
			args: []string{"simulate", "--trace", teams, "--teams", "-1"}, wantCode: 1,
			wantStderr: []string{"--teams -1: want a number of teams >= 1"},
		},
		"no GPUs": {
			args: []string{"simulate", noGPUs}, wantCode: 1,
			wantStderr: []string{
				"phasegang: " + noGPUs + ": no pipeline can run on this cluster (2 nodes, 0 GPUs)",
				"  workload[0] ml/job (9 pipelines), phase train: each worker needs 1 nvidia.com/gpu, and no node has that resource",
				"  workload[1] ml/burst (3 pipelines), phase train: ",
			},
		},
		"no pods resource": {
			args: []string{"simulate", "--compare", noPods}, wantCode: 1,
			wantStderr: []string{"no pipeline can run", "phase train: each worker needs 1 pods, and no node has that resource"},
		},
		"a nodeSelector no node matches": {
			args: []string{"simulate", selector}, wantCode: 1,
			wantStderr: []string{"no pipeline can run", "phase train: no node matches the worker's constraints"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := run(t, "", tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, strings.Join(stdout, "\n"), strings.Join(stderr, "\n"))
			}
			inOrder(t, "stdout", stdout, tc.wantStdout)
			inOrder(t, "stderr", stderr, tc.wantStderr)
		})
	}
	if svg, err := os.ReadFile(filepath.Join(dir, "queues.svg")); err != nil || !strings.Contains(string(svg), "team-ee9e8c") {
		t.Errorf("--queue-chart wrote no chart of the queues (%v)", err)
	}
}

// inOrder checks that each of want is in a line of got, in order.
func inOrder(t *testing.T, what string, got, want []string) {
	t.Helper()
	i := 0
	for _, w := range want {
		j := slices.IndexFunc(got[i:], func(l string) bool { return strings.Contains(l, w) })
		if j < 0 {
			t.Errorf("%s: no line contains %q (after line %d):\n%s", what, w, i, strings.Join(got, "\n"))
			return
		}
		i += j + 1
	}
	if len(want) == 0 && len(got) > 0 {
		t.Errorf("%s: want nothing, got:\n%s", what, strings.Join(got, "\n"))
	}
}

// -o json writes a never-ending run's makespan (and utilization) as null.
func TestSimulateJSON(t *testing.T) {
	code, stdout, stderr := run(t, "", "simulate", "--compare", "-o", "json")
	if code != 0 || len(stderr) > 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	var results []struct {
		Policy  string
		Metrics map[string]any
	}
	if err := json.Unmarshal([]byte(strings.Join(stdout, "\n")), &results); err != nil {
		t.Fatal(err)
	}
	if len(results) != len(sim.Policies) {
		t.Fatalf("%d results, want %d", len(results), len(sim.Policies))
	}
	for _, r := range results {
		mk, ok := r.Metrics["makespanSeconds"]
		if !ok {
			t.Errorf("%s: no makespanSeconds", r.Policy)
			continue
		}
		if r.Policy == "per-pod" {
			if mk != nil || r.Metrics["gpuUtilization"] != nil {
				t.Errorf("per-pod: makespanSeconds %v, gpuUtilization %v, want null for a run that never ends", mk, r.Metrics["gpuUtilization"])
			}
		} else if v, ok := mk.(float64); !ok || v <= 0 {
			t.Errorf("%s: makespanSeconds %v, want seconds", r.Policy, mk)
		}
	}
}
