package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// Write cost
//
// The cost report puts most of phasegang's CPU above plain pods in
// kube-apiserver, and most of that in PhasedTraining status writes. The
// -write-cost mode measures one such write against the write every pod
// gets anyway (a pod status patch), on the same kube-apiserver in one run,
// so the ratio does not depend on the machine: it tells whether a smaller
// status or a different verb would pay, or only fewer writes.

// writeCase is one kind of write to obj, repeated n times.
type writeCase struct {
	name  string
	obj   client.Object
	write func(ctx context.Context, i int) error
}

// writeCostRun prints kube-apiserver's CPU per write for each case.
func writeCostRun(ctx context.Context, n int) error {
	ns, err := namespaceFor("scale-pg-writecost")
	if err != nil {
		return err
	}
	defer cleanup(ns)
	pod, pt, err := writeCostObjects(ctx, ns)
	if err != nil {
		return err
	}
	cases := []writeCase{
		{name: "pods/status, strategic merge patch", obj: pod, write: func(ctx context.Context, i int) error {
			patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"False","message":"write %d"}]}}`, i)
			return k8s.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, []byte(patch)))
		}},
		{name: "phasedtrainings/status, update", obj: pt, write: func(ctx context.Context, i int) error {
			pt.Status.Conditions[0].Message = fmt.Sprintf("validate: 2 of 2 workers running (write %d)", i)
			return k8s.Status().Update(ctx, pt)
		}},
		{name: "phasedtrainings/status, merge patch", obj: pt, write: func(ctx context.Context, i int) error {
			patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Running","status":"True","reason":"GangRunning","message":"validate: 2 of 2 workers running (patch %d)","lastTransitionTime":%q}]}}`,
				i, pt.Status.Conditions[0].LastTransitionTime.UTC().Format(time.RFC3339))
			return k8s.Status().Patch(ctx, pt, client.RawPatch(types.MergePatchType, []byte(patch)))
		}},
	}
	spent, err := measureWrites(ctx, cases, n)
	if err != nil {
		return err
	}
	fmt.Printf("\nkube-apiserver CPU per write, %d writes of each kind, one at a time, the kinds taking turns in %d rounds\n\n", n, writeRounds)
	fmt.Printf("%-38s %14s %20s %14s\n", "write", "CPU ms/write", "÷ pod status patch", "object bytes")
	base := float64(spent[0].Microseconds()) / 1e3 / float64(n) // the pod status patch
	for k, c := range cases {
		ms := float64(spent[k].Microseconds()) / 1e3 / float64(n)
		fmt.Printf("%-38s %14.2f %19.2f× %14d\n", c.name, ms, ms/base, storedSize(ctx, c.obj))
	}
	fmt.Fprintf(os.Stderr, "(CPU from /proc at USER_HZ resolution: 10 ms per round, %d rounds to a row)\n", writeRounds)
	return nil
}

// writeRounds is how many turns the kinds of write take: kube-apiserver's
// cost per write drifts as it runs (its heap grows, garbage collection
// comes and goes), and in turns the drift falls on every kind alike
// instead of on whichever ran last.
const writeRounds = 10

// measureWrites runs n writes of each case, the cases taking turns, and
// returns kube-apiserver's CPU time spent in each case's writes. The CPU
// comes from /proc alone: snapshot's /metrics scrape would be
// kube-apiserver work inside the measured windows.
func measureWrites(ctx context.Context, cases []writeCase, n int) ([]time.Duration, error) {
	spent := make([]time.Duration, len(cases))
	for r := range writeRounds {
		for k, c := range cases {
			before := componentCPU()["kube-apiserver"]
			for i := r * n / writeRounds; i < (r+1)*n/writeRounds; i++ {
				if err := c.write(ctx, i); err != nil {
					return nil, fmt.Errorf("%s: %w", c.name, err)
				}
			}
			spent[k] += componentCPU()["kube-apiserver"] - before
		}
	}
	return spent, nil
}

// writeCostObjects creates the pod (unscheduled: no node matches it, so
// nothing else writes it) and a three-phase PhasedTraining whose status
// is what the controller stores mid-run: train ended on 8 workers,
// validate running on 2, test pending. No controller runs, so nothing
// else writes the PhasedTraining either.
func writeCostObjects(ctx context.Context, ns string) (*corev1.Pod, *v1alpha1.PhasedTraining, error) {
	tmpl := workerSpec(*runSecs)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "write-cost"}, Spec: tmpl.Spec}
	if err := k8s.Create(ctx, pod); err != nil {
		return nil, nil, err
	}
	pt := &v1alpha1.PhasedTraining{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "write-cost"},
		Spec: v1alpha1.PhasedTrainingSpec{Phases: []v1alpha1.Phase{
			{Name: "train", Gang: v1alpha1.Gang{Min: 8}, Template: tmpl},
			{Name: "validate", DependsOn: []string{"train"}, Gang: v1alpha1.Gang{Min: 2}, Template: tmpl},
			{Name: "test", DependsOn: []string{"validate"}, Gang: v1alpha1.Gang{Min: 1}, Template: tmpl},
		}}}
	if err := k8s.Create(ctx, pt); err != nil {
		return nil, nil, err
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	phase := func(name string, workers int, st v1alpha1.PhaseState) v1alpha1.PhaseStatus {
		ps := v1alpha1.PhaseStatus{Name: name, State: st, QueuedTime: &now}
		if workers == 0 {
			return ps
		}
		ps.ReservedTime, ps.StartTime = &now, &now
		ps.Reservation = map[string]int32{}
		for i := range workers {
			node := "scale-" + strconv.Itoa(17+i/4)
			ps.Assignments = append(ps.Assignments, node)
			ps.Reservation[node]++
		}
		ps.History = []v1alpha1.PhaseEvent{{Time: now, Type: v1alpha1.PhaseEventReserved, Workers: int32(workers)}}
		return ps
	}
	pt.Status = v1alpha1.PhasedTrainingStatus{
		State: v1alpha1.PipelineRunning,
		Phases: []v1alpha1.PhaseStatus{
			phase("train", 8, v1alpha1.PhaseSucceeded),
			phase("validate", 2, v1alpha1.PhaseRunning),
			phase("test", 0, v1alpha1.PhasePending),
		},
		Conditions: []metav1.Condition{
			{Type: "Running", Status: metav1.ConditionTrue, Reason: "GangRunning", Message: "validate: 2 of 2 workers running", LastTransitionTime: now},
		},
	}
	return pod, pt, k8s.Status().Update(ctx, pt)
}

// storedSize is the object's size as kube-apiserver serves it (JSON,
// managed fields included).
func storedSize(ctx context.Context, obj client.Object) int {
	var raw []byte
	err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	if err == nil {
		raw, err = json.Marshal(obj)
	}
	if err != nil {
		return 0
	}
	return len(raw)
}
