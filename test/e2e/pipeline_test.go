//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// (a) train → validate → test reaches Succeeded; each phase's pods run on
// its reserved nodes; no two phases hold GPUs at once; validate's output
// flows into test's when.
func TestTrainValidateTest(t *testing.T) {
	ns := namespace(t)
	nodes(t, "pool-a", 2, 8)
	pt := create(t, wrappers.NewPT(ns, "pipeline").
		Phase("train", 8).PodTemplate(worker("pool-a", 1, 3, "")).
		Phase("validate", 2).PodTemplate(worker("pool-a", 1, 2, `{"accuracy": 0.93}`)).DependsOn("train").
		With(func(p *v1alpha1.Phase) { p.Outputs = []string{"accuracy"} }).
		Phase("test", 1).PodTemplate(worker("pool-a", 1, 1, "")).DependsOn("validate").
		With(func(p *v1alpha1.Phase) { p.When = "float(phases.validate.outputs.accuracy) >= 0.9" }).Obj())
	// Watch reservations while it runs: never two phases at once. Watch
	// the pipeline's Service too: which workers it publishes.
	stop := make(chan struct{})
	overlap := make(chan string, 1)
	published := map[string]bool{} // hostnames in the Service's EndpointSlices
	var publishedMu sync.Mutex
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			var slices discoveryv1.EndpointSliceList
			if k8s.List(context.Background(), &slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: "pipeline"}) == nil {
				publishedMu.Lock()
				for _, sl := range slices.Items {
					for _, e := range sl.Endpoints {
						if e.Hostname != nil {
							published[*e.Hostname] = true
						}
					}
				}
				publishedMu.Unlock()
			}
			var cur v1alpha1.PhasedTraining
			if k8s.Get(context.Background(), client.ObjectKeyFromObject(pt), &cur) != nil {
				continue
			}
			var holding []string
			for _, p := range cur.Status.Phases {
				if len(p.Assignments) > 0 && p.State.Reserved() {
					holding = append(holding, p.Name)
				}
			}
			if len(holding) > 1 {
				select {
				case overlap <- strings.Join(holding, ","):
				default:
				}
			}
		}
	}()
	done := waitState(t, pt, v1alpha1.PipelineSucceeded, 90*time.Second)
	close(stop)
	select {
	case o := <-overlap:
		t.Errorf("phases %s held GPUs at the same time", o)
	default:
	}
	byName := map[string]v1alpha1.PhaseStatus{}
	for _, p := range done.Status.Phases {
		byName[p.Name] = p
	}
	if got := byName["validate"].Outputs["accuracy"]; got != "0.93" {
		t.Errorf("validate outputs = %v, want accuracy 0.93", byName["validate"].Outputs)
	}
	if byName["test"].State != v1alpha1.PhaseSucceeded {
		t.Errorf("test phase %s, want Succeeded (its when reads validate's output)", byName["test"].State)
	}
	// Phase ends before the next is reserved.
	order := []string{"train", "validate", "test"}
	for i := 1; i < len(order); i++ {
		prev, next := byName[order[i-1]], byName[order[i]]
		if prev.EndTime == nil || next.ReservedTime == nil || next.ReservedTime.Before(prev.EndTime) {
			t.Errorf("%s reserved at %v before %s ended at %v", order[i], next.ReservedTime, order[i-1], prev.EndTime)
		}
	}
	// Every worker pod ran on the node its phase reserved for it.
	for _, p := range pods(t, ns, nil) {
		ps := byName[p.Labels["phasegang.dev/phase"]]
		idx := p.Labels["phasegang.dev/worker-index"]
		var i int
		fmt.Sscan(idx, &i)
		if i >= len(ps.Assignments) || p.Spec.NodeName != ps.Assignments[i] {
			t.Errorf("pod %s ran on %s, reserved %v", p.Name, p.Spec.NodeName, ps.Assignments)
		}
		if p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("pod %s is %s", p.Name, p.Status.Phase)
		}
	}
	if n := len(pods(t, ns, nil)); n != 11 {
		t.Errorf("%d worker pods, want 8 + 2 + 1", n)
	}
	// Peers find each other through the Service: the 8 train and 2
	// validate workers were published under their hostnames; the single
	// test worker has no peer and is left out.
	publishedMu.Lock()
	defer publishedMu.Unlock()
	for _, h := range []string{"train-0", "train-7", "validate-0", "validate-1"} {
		if !published[h] {
			t.Errorf("worker %s never appeared in the pipeline's Service (saw %v)", h, published)
		}
	}
	if published["test-0"] {
		t.Errorf("the single test worker was published in the Service (saw %v)", published)
	}
	// phasegang writes the Service's one EndpointSlice (the Service has no
	// selector, so kube-controller-manager keeps no Endpoints or slices of
	// its own), and the ended workers have left it.
	var slices discoveryv1.EndpointSliceList
	if err := k8s.List(context.Background(), &slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: "pipeline"}); err != nil {
		t.Fatal(err)
	}
	if len(slices.Items) != 1 || slices.Items[0].Labels[discoveryv1.LabelManagedBy] != "phasegang.dev" || len(slices.Items[0].Endpoints) != 0 {
		t.Errorf("the Service's EndpointSlices: want one, phasegang's, empty after the run; got %s", describeSlices(slices.Items))
	}
	var ep corev1.Endpoints //nolint:staticcheck // checking that none is kept
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "pipeline"}, &ep); !apierrors.IsNotFound(err) {
		t.Errorf("the Service has an Endpoints object (%v): it should have no selector", err)
	}
}

func describeSlices(items []discoveryv1.EndpointSlice) string {
	var out []string
	for _, sl := range items {
		out = append(out, fmt.Sprintf("%s (managed by %q, %d endpoints)", sl.Name, sl.Labels[discoveryv1.LabelManagedBy], len(sl.Endpoints)))
	}
	return fmt.Sprintf("%d: %v", len(items), out)
}

// (b) The seed scenario: 6 pipelines of 8 one-GPU workers on 2 nodes × 4
// GPUs all finish, and no gang is ever held partially. The same 48 pods
// without phasegang stall holding partial gangs.
func TestSeedScenario(t *testing.T) {
	ns := namespace(t)
	nodes(t, "pool-b", 2, 4)
	var pts []*v1alpha1.PhasedTraining
	for i := range 6 {
		pts = append(pts, create(t, wrappers.NewPT(ns, fmt.Sprintf("job-%d", i)).Phase("train", 8).PodTemplate(worker("pool-b", 1, 2, "")).Obj()))
	}
	// Sample: every Running phase holds a full gang, and the bound pods
	// never exceed the 8 GPUs.
	deadline := time.Now().Add(120 * time.Second)
	for {
		var list v1alpha1.PhasedTrainingList
		if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		succeeded := 0
		for _, pt := range list.Items {
			if pt.Status.State == v1alpha1.PipelineSucceeded {
				succeeded++
			}
			for _, p := range pt.Status.Phases {
				if p.State.Reserved() && len(p.Assignments) != 8 {
					t.Fatalf("%s holds a partial gang: %d of 8 workers reserved", pt.Name, len(p.Assignments))
				}
			}
		}
		bound := 0
		for _, p := range pods(t, ns, nil) {
			if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				bound++
			}
		}
		if bound > 8 {
			t.Fatalf("%d pods hold GPUs, the nodes have 8", bound)
		}
		if succeeded == len(pts) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of 6 pipelines finished in time", succeeded)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Without phasegang: 48 plain pods, the jobs' controllers creating
	// their pods concurrently (interleaved), each pod "waiting for its
	// peers" forever (no run time: it never ends on its own).
	plain := namespace(t)
	nodes(t, "pool-b-plain", 2, 4)
	for w := range 8 {
		for j := range 6 {
			tmpl := worker("pool-b-plain", 1, 0, "")
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: plain, Name: fmt.Sprintf("job-%d-worker-%d", j, w),
					Labels: map[string]string{"job": fmt.Sprint(j)}},
				Spec: tmpl.Spec,
			}
			if err := k8s.Create(context.Background(), pod); err != nil {
				t.Fatal(err)
			}
		}
	}
	var running map[string]int
	eventually(t, 60*time.Second, "the default scheduler to fill the 8 GPUs", func() (bool, error) {
		running = map[string]int{}
		n := 0
		for _, p := range pods(t, plain, nil) {
			if p.Status.Phase == corev1.PodRunning {
				running[p.Labels["job"]]++
				n++
			}
		}
		return n == 8, fmt.Errorf("%d running", n)
	})
	time.Sleep(5 * time.Second) // a bounded wait: nothing changes
	complete := 0
	for _, n := range running {
		if n == 8 {
			complete++
		}
	}
	if complete != 0 || len(running) < 2 {
		t.Fatalf("want a partial-hold stall (8 GPUs spread over several jobs, none complete), got %v", running)
	}
	t.Logf("without phasegang: the 8 GPUs are held by %d jobs %v, none of which has its 8 workers: every job waits forever", len(running), running)
}

// (c) Elastic: min 2, desired 8 with 3 GPUs free starts with 3, grows as
// GPUs free, and gives back surplus when an older pipeline's gang needs it.
func TestElastic(t *testing.T) {
	ns := namespace(t)
	nodes(t, "pool-c", 1, 8)
	nodes(t, "pool-c-prep", 1, 8)
	// The older pipeline: a short prep phase elsewhere, then a 4-GPU train
	// on the elastic gang's node.
	old := create(t, wrappers.NewPT(ns, "old").
		Phase("prep", 1).PodTemplate(worker("pool-c-prep", 1, 20, "")).
		Phase("train", 4).PodTemplate(worker("pool-c", 1, 25, "")).DependsOn("prep").Obj())
	time.Sleep(1100 * time.Millisecond) // a strictly younger creation time
	blocker := create(t, wrappers.NewPT(ns, "blocker").Phase("train", 5).PodTemplate(worker("pool-c", 1, 8, "")).Obj())
	eventually(t, 30*time.Second, "blocker running", func() (bool, error) {
		return get(t, blocker).Status.State == v1alpha1.PipelineRunning, nil
	})
	time.Sleep(1100 * time.Millisecond)
	elastic := create(t, wrappers.NewPT(ns, "elastic").Phase("train", 2).Desired(8).PodTemplate(worker("pool-c", 1, 40, "")).Obj())

	granted := func() int {
		for _, p := range get(t, elastic).Status.Phases {
			if p.Name == "train" && p.State.Reserved() {
				return len(p.Assignments)
			}
		}
		return 0
	}
	eventually(t, 30*time.Second, "elastic to start", func() (bool, error) { return granted() > 0, nil })
	if g := granted(); g != 3 {
		t.Fatalf("elastic started with %d workers, want the 3 free GPUs", g)
	}
	eventually(t, 60*time.Second, "elastic to grow to 8 after the blocker ends", func() (bool, error) {
		return granted() == 8, fmt.Errorf("granted %d", granted())
	})
	eventually(t, 60*time.Second, "elastic to shrink to 4 for the older pipeline's train", func() (bool, error) {
		return granted() == 4, fmt.Errorf("granted %d", granted())
	})
	// While the older train runs (25 s), the surplus pods are gone:
	// deleted highest index first, workers 0..3 keep running.
	eventually(t, 20*time.Second, "the surplus pods 4..7 to be deleted", func() (bool, error) {
		var left []string
		for _, p := range pods(t, ns, map[string]string{"phasegang.dev/pipeline": "elastic"}) {
			var i int
			fmt.Sscan(p.Labels["phasegang.dev/worker-index"], &i)
			if i >= 4 && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				left = append(left, p.Name)
			}
		}
		return len(left) == 0, fmt.Errorf("still running: %v", left)
	})
	if g := granted(); g != 4 {
		t.Errorf("elastic holds %d workers while the older train runs, want 4", g)
	}
	waitState(t, old, v1alpha1.PipelineSucceeded, 60*time.Second)
	waitState(t, elastic, v1alpha1.PipelineSucceeded, 120*time.Second)
}

// (d) The controller is SIGKILLed mid-phase and restarted: no duplicate
// pods, no lost or doubled reservation, the pipeline finishes.
func TestControllerRestart(t *testing.T) {
	ns := namespace(t)
	nodes(t, "pool-d", 2, 4)
	pt := create(t, wrappers.NewPT(ns, "survivor").
		Phase("train", 8).PodTemplate(worker("pool-d", 1, 12, "")).
		Phase("test", 2).PodTemplate(worker("pool-d", 1, 2, "")).DependsOn("train").Obj())
	var before []string
	eventually(t, 30*time.Second, "train's 8 pods running", func() (bool, error) {
		n := 0
		for _, p := range pods(t, ns, nil) {
			if p.Status.Phase == corev1.PodRunning {
				n++
			}
		}
		if ps := get(t, pt).Status.Phases; len(ps) > 0 {
			before = ps[0].Assignments
		}
		return n == 8 && len(before) == 8, nil
	})
	controller.kill()
	time.Sleep(2 * time.Second)
	controller = startController()
	time.Sleep(3 * time.Second)
	after := get(t, pt)
	if got := after.Status.Phases[0].Assignments; strings.Join(got, ",") != strings.Join(before, ",") {
		t.Errorf("reservation changed across the restart: %v → %v", before, got)
	}
	done := waitState(t, pt, v1alpha1.PipelineSucceeded, 90*time.Second)
	names := map[string]int{}
	for _, p := range pods(t, ns, nil) {
		names[p.Name]++
	}
	if len(names) != 10 {
		t.Errorf("%d pods, want 8 + 2 (no duplicates): %v", len(names), names)
	}
	if done.Status.Phases[0].Attempt != 0 {
		t.Errorf("train was retried (attempt %d): the restart must not cost an attempt", done.Status.Phases[0].Attempt)
	}
}

// (e) A node is deleted mid-phase: the gang is released and reserved
// again elsewhere; the pipeline finishes.
func TestNodeDeleted(t *testing.T) {
	ns := namespace(t)
	nodes(t, "pool-e", 3, 4)
	pt := create(t, wrappers.NewPT(ns, "moving").Phase("train", 4).PodTemplate(worker("pool-e", 1, 15, "")).Obj())
	var first string
	eventually(t, 30*time.Second, "train reserved", func() (bool, error) {
		ps := get(t, pt).Status.Phases
		if len(ps) == 0 || len(ps[0].Assignments) == 0 {
			return false, nil
		}
		first = ps[0].Assignments[0]
		return true, nil
	})
	if err := k8s.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: first}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "train reserved again on another node", func() (bool, error) {
		phases := get(t, pt).Status.Phases
		if len(phases) == 0 {
			return false, nil
		}
		ps := phases[0]
		return len(ps.Assignments) == 4 && ps.Assignments[0] != first, fmt.Errorf("%+v", ps.Assignments)
	})
	done := waitState(t, pt, v1alpha1.PipelineSucceeded, 90*time.Second)
	for _, a := range done.Status.Phases[0].Assignments {
		if a == first {
			t.Errorf("the finished gang still names the deleted node %s", first)
		}
	}
}

// (f) Every invalid example is rejected at admission (CRD schema or CEL)
// or marked Invalid by the controller, with the field path in the message.
func TestInvalidSpecsRejected(t *testing.T) {
	ns := namespace(t)
	files, _ := filepath.Glob(filepath.Join(repoRoot, "examples/invalid/*.yaml"))
	if len(files) == 0 {
		t.Fatal("no invalid examples")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want := ""
			for _, line := range strings.Split(string(data), "\n") {
				if s, ok := strings.CutPrefix(line, "# expect:"); ok {
					want = strings.TrimSpace(s)
				}
			}
			if strings.Contains(want, " kind ") {
				t.Skip("a stream mixing kinds is refused by `phasegang validate`; kubectl creates each document on its own by design")
			}
			pts, err := v1alpha1.Decode(data)
			if err != nil || len(pts) == 0 {
				// Not a well-formed PhasedTraining (an unknown field, another
				// kind): send the bytes as a user would, with kubectl, and
				// expect the API server (strict field validation) to refuse.
				cmd := exec.Command("kubectl", "create", "-n", ns, "-f", "-")
				cmd.Stdin = strings.NewReader(regexp.MustCompile(`(?m)^(\s*)namespace: .*$`).ReplaceAllString(string(data), "${1}namespace: "+ns))
				out, kerr := cmd.CombinedOutput()
				if kerr == nil {
					t.Fatalf("kubectl create accepted it: %s", out)
				}
				if _, field, ok := strings.Cut(want, "unknown field "); ok && !strings.Contains(string(out), field) {
					t.Errorf("kubectl says %q, want it to name %s", out, field)
				}
				t.Logf("rejected by the API server: %s", strings.TrimSpace(string(out)))
				return
			}
			pt := pts[0]
			pt.Namespace = ns
			err = k8s.Create(context.Background(), &pt)
			if err != nil {
				if !strings.Contains(err.Error(), "spec.") {
					t.Errorf("rejected without a field path: %v", err)
				}
				t.Logf("rejected at admission: %v", err)
				return
			}
			var msg string
			eventually(t, 20*time.Second, "condition Invalid", func() (bool, error) {
				cur := get(t, &pt)
				c := meta.FindStatusCondition(cur.Status.Conditions, string(v1alpha1.ConditionInvalid))
				if c == nil || c.Status != metav1.ConditionTrue {
					return false, nil
				}
				msg = c.Message
				return cur.Status.State == v1alpha1.PipelineInvalid, nil
			})
			if want != "" && !strings.Contains(msg, want) {
				t.Errorf("Invalid message %q does not contain %q", msg, want)
			}
			if !strings.Contains(msg, "spec.") {
				t.Errorf("Invalid message %q names no field", msg)
			}
			if n := len(pods(t, ns, map[string]string{"phasegang.dev/pipeline": pt.Name})); n != 0 {
				t.Errorf("an invalid pipeline got %d pods", n)
			}
			t.Logf("marked Invalid: %s", msg)
		})
	}
}

// (g) A gang that can never fit is marked Infeasible at once, with numbers.
func TestInfeasible(t *testing.T) {
	ns := namespace(t)
	nodes(t, "pool-g", 1, 8)
	pt := create(t, wrappers.NewPT(ns, "huge").Phase("train", 1).PodTemplate(worker("pool-g", 16, 5, "")).Obj())
	var msg string
	eventually(t, 20*time.Second, "condition Infeasible", func() (bool, error) {
		cur := get(t, pt)
		c := meta.FindStatusCondition(cur.Status.Conditions, string(v1alpha1.ConditionInfeasible))
		if c == nil || c.Status != metav1.ConditionTrue {
			return false, nil
		}
		msg = c.Message
		return cur.Status.State == v1alpha1.PipelineInfeasible, nil
	})
	for _, want := range []string{"16", "8", "nvidia.com/gpu"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Infeasible message %q lacks %q", msg, want)
		}
	}
	t.Logf("Infeasible: %s", msg)
}

var _ = sort.Strings
