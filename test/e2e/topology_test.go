//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// Topology-aware placement (docs/topology.md) on kwok nodes labelled with
// a block and racks; the controller runs with --topology-levels
// example.com/block,example.com/rack,kubernetes.io/hostname (harness).

const rackLevel = "example.com/rack"

// racks makes one pool of racks in one block: rack <pool>-r<i> has
// sizes[i] nodes of gpus[i] GPUs, named <pool>-r<i>-<j>. It returns each
// node's rack.
func racks(t *testing.T, pool string, sizes, gpus []int) map[string]string {
	t.Helper()
	rackOf := map[string]string{}
	for i := range sizes {
		rack := fmt.Sprintf("%s-r%d", pool, i)
		for _, n := range labelledNodes(t, pool, rack, map[string]string{"example.com/block": pool + "-b0", rackLevel: rack}, sizes[i], gpus[i]) {
			rackOf[n] = rack
		}
	}
	return rackOf
}

// occupy binds a pod phasegang does not manage to node, taking gpus GPUs
// there until it is deleted, and waits until it runs.
func occupy(t *testing.T, ns, name, node string, gpus int) *corev1.Pod {
	t.Helper()
	q := *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "c", Image: "other:e2e", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"nvidia.com/gpu": q}, Limits: corev1.ResourceList{"nvidia.com/gpu": q},
			}}},
		},
	}
	if err := k8s.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "pod "+name+" running", func() (bool, error) {
		var cur corev1.Pod
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), &cur); err != nil {
			return false, err
		}
		return cur.Status.Phase == corev1.PodRunning, fmt.Errorf("phase %s", cur.Status.Phase)
	})
	return p
}

// settle gives the controller's caches a moment to see pods just created
// (its resync is 1s), so the next gang is placed around them.
func settle() { time.Sleep(2 * time.Second) }

func free(t *testing.T, pods ...*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if err := k8s.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
}

// racksOf are the racks (sorted, each once) of the nodes phase's worker
// pods of pipeline pt ran on, and how many pods there were.
func racksOf(t *testing.T, pt *v1alpha1.PhasedTraining, phase string, rackOf map[string]string) ([]string, int) {
	t.Helper()
	ps := pods(t, pt.Namespace, map[string]string{"phasegang.dev/pipeline": pt.Name, "phasegang.dev/phase": phase})
	var out []string
	for _, p := range ps {
		r, ok := rackOf[p.Spec.NodeName]
		if !ok {
			t.Errorf("pod %s on %q, not a node of the test's racks", p.Name, p.Spec.NodeName)
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out, len(ps)
}

func wantRacks(t *testing.T, pt *v1alpha1.PhasedTraining, phase string, rackOf map[string]string, workers int, want ...string) {
	t.Helper()
	got, n := racksOf(t, pt, phase, rackOf)
	if n != workers {
		t.Errorf("%s %s ran %d worker pods, want %d", pt.Name, phase, n, workers)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s %s ran in racks %v, want %v", pt.Name, phase, got, want)
	}
}

func reservedWhole(t *testing.T, ps v1alpha1.PhaseStatus, workers int32) {
	t.Helper()
	if h := ps.History; len(h) == 0 || h[0].Type != v1alpha1.PhaseEventReserved || h[0].Workers != workers {
		t.Errorf("phase %s was not reserved whole (%d) at once: %+v", ps.Name, workers, h)
	}
}

func phaseStatus(pt *v1alpha1.PhasedTraining, name string) v1alpha1.PhaseStatus {
	for _, p := range pt.Status.Phases {
		if p.Name == name {
			return p
		}
	}
	return v1alpha1.PhaseStatus{}
}

// waitWaitingFor waits until phase of pt waits saying substr, and returns
// its waitingFor.
func waitWaitingFor(t *testing.T, pt *v1alpha1.PhasedTraining, phase, substr string) string {
	t.Helper()
	var msg string
	eventually(t, 30*time.Second, fmt.Sprintf("%s %s waiting for %q", pt.Name, phase, substr), func() (bool, error) {
		cur := get(t, pt)
		msg = phaseStatus(cur, phase).WaitingFor
		return strings.Contains(msg, substr), fmt.Errorf("%s", describe(cur))
	})
	return msg
}

// holdNoPhasePods fails at once if phase of pt gets a worker pod within d.
func holdNoPhasePods(t *testing.T, pt *v1alpha1.PhasedTraining, phase string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if ps := pods(t, pt.Namespace, map[string]string{"phasegang.dev/pipeline": pt.Name, "phasegang.dev/phase": phase}); len(ps) > 0 {
			t.Fatalf("worker pod %s was created on %s while no rack had room for the whole gang", ps[0].Name, ps[0].Spec.NodeName)
		}
	}
}

// required: rack. Two racks of 2 × 4 GPUs, other pods using 2 in rack 0
// and 4 in rack 1: 10 GPUs are free, enough for the 8-worker gang across
// racks (its waitingFor says 8 fit now), but no rack has 8. The gang waits (its waitingFor and `phasegang
// queue` say which level is short and the best rack's room) and no pod of
// it is created; when rack 1 frees, it runs whole there, its status naming
// each worker's domain (block/rack/host).
func TestTopologyRequiredWaitsForARack(t *testing.T) {
	ns := namespace(t)
	pool := "pool-topo-req"
	rackOf := racks(t, pool, []int{2, 2}, []int{4, 4})
	r0, r1 := pool+"-r0", pool+"-r1"
	occupy(t, ns, "other-0", r0+"-0", 1)
	occupy(t, ns, "other-1", r0+"-1", 1)
	b2 := occupy(t, ns, "other-2", r1+"-0", 2)
	b3 := occupy(t, ns, "other-3", r1+"-1", 2)
	settle()
	pt := create(t, wrappers.NewPT(ns, "train").Phase("train", 8).PodTemplate(worker(pool, 1, 3, "")).
		Topology(v1alpha1.PhaseTopology{Required: rackLevel}).Obj())
	want := fmt.Sprintf("no %s has room for all 8 workers now; the best, %s, has room for 6", rackLevel, r0)
	msg := waitWaitingFor(t, pt, "train", want)
	if !strings.Contains(msg, "8 fit now across 4 nodes") {
		t.Errorf("waitingFor %q: want it to say that the gang would fit across racks", msg)
	}
	holdNoPhasePods(t, pt, "train", 8*time.Second)
	if cur := get(t, pt); cur.Status.State != v1alpha1.PipelineQueued {
		t.Errorf("state %s while waiting for a rack, want Queued: %s", cur.Status.State, describe(cur))
	}
	out, err := exec.Command(binary, "queue", "--namespace", ns, "--topology-levels", strings.Join(topologyLevels, ",")).CombinedOutput()
	if err != nil {
		t.Fatalf("phasegang queue: %v\n%s", err, out)
	}
	t.Logf("phasegang queue --namespace %s:\n%s", ns, out)
	if !strings.Contains(string(out), ns+"/train") || !strings.Contains(string(out), want) {
		t.Errorf("phasegang queue does not show the gang waiting for a rack (%q):\n%s", want, out)
	}

	free(t, b2, b3)
	done := waitState(t, pt, v1alpha1.PipelineSucceeded, 60*time.Second)
	wantRacks(t, pt, "train", rackOf, 8, r1)
	reservedWhole(t, phaseStatus(done, "train"), 8)
	// Each worker's domain is in the status, beside its node.
	ps := phaseStatus(done, "train")
	if len(ps.Domains) != len(ps.Assignments) {
		t.Fatalf("status domains %v beside assignments %v", ps.Domains, ps.Assignments)
	}
	for w, node := range ps.Assignments {
		if want := pool + "-b0/" + r1 + "/" + node; ps.Domains[w] != want {
			t.Errorf("worker %d on %s: domain %q, want %q", w, node, ps.Domains[w], want)
		}
	}
}

// preferred: rack. Rack 0 has 3 nodes of 4 GPUs, racks 1 and 2 one node
// of 8 each. Packed onto the fewest nodes (no topology), 20 workers take
// the two 8-GPU nodes and one of rack 0: three racks. Preferred rack, 20
// workers span the fewest racks (rack 0 and one 8-GPU rack: two), and 12
// workers, which rack 0 holds (in 3 nodes, where the fewest nodes would
// be 2 in 2 racks), span one.
func TestTopologyPreferredSpansFewestRacks(t *testing.T) {
	ns := namespace(t)
	pool := "pool-topo-pref"
	rackOf := racks(t, pool, []int{3, 1, 1}, []int{4, 8, 8})
	r0, r1, r2 := pool+"-r0", pool+"-r1", pool+"-r2"
	run := func(name string, workers int32, topo *v1alpha1.PhaseTopology) *v1alpha1.PhasedTraining {
		b := wrappers.NewPT(ns, name).Phase("train", workers).PodTemplate(worker(pool, 1, 2, ""))
		if topo != nil {
			b.Topology(*topo)
		}
		pt := create(t, b.Obj())
		done := waitState(t, pt, v1alpha1.PipelineSucceeded, 60*time.Second)
		reservedWhole(t, phaseStatus(done, "train"), workers)
		return pt
	}
	// The control: without topology, fewest nodes.
	blind := run("blind-20", 20, nil)
	if got, _ := racksOf(t, blind, "train", rackOf); len(got) != 3 {
		t.Errorf("without topology, 20 workers ran in racks %v; the test expects fewest-nodes packing to span all 3", got)
	}
	pref := run("preferred-20", 20, &v1alpha1.PhaseTopology{Preferred: rackLevel})
	got, n := racksOf(t, pref, "train", rackOf)
	if n != 20 || len(got) != 2 || got[0] != r0 || (got[1] != r1 && got[1] != r2) {
		t.Errorf("preferred rack: 20 workers (%d pods) ran in racks %v, want %s and one of %s, %s", n, got, r0, r1, r2)
	}
	one := run("preferred-12", 12, &v1alpha1.PhaseTopology{Preferred: rackLevel})
	wantRacks(t, one, "train", rackOf, 12, r0)
}

// sameDomainAs: validate goes into the rack where train ran.
func TestTopologySameDomainAs(t *testing.T) {
	// Rack 0 has 2 nodes of 4 GPUs, rack 1 one node of 2. Train (8,
	// required rack) runs in rack 0; validate (2, preferred rack,
	// sameDomainAs train) follows it there, although rack 1 fits 2
	// exactly (best fit): test (2, preferred rack, no sameDomainAs)
	// shows that it goes to rack 1.
	t.Run("fits", func(t *testing.T) {
		ns := namespace(t)
		pool := "pool-topo-near"
		rackOf := racks(t, pool, []int{2, 1}, []int{4, 2})
		r0, r1 := pool+"-r0", pool+"-r1"
		pt := create(t, wrappers.NewPT(ns, "pipeline").
			Phase("train", 8).PodTemplate(worker(pool, 1, 2, "")).Topology(v1alpha1.PhaseTopology{Required: rackLevel}).
			Phase("validate", 2).PodTemplate(worker(pool, 1, 1, "")).DependsOn("train").
			Topology(v1alpha1.PhaseTopology{Preferred: rackLevel, SameDomainAs: "train"}).
			Phase("test", 2).PodTemplate(worker(pool, 1, 1, "")).DependsOn("validate").
			Topology(v1alpha1.PhaseTopology{Preferred: rackLevel}).Obj())
		waitState(t, pt, v1alpha1.PipelineSucceeded, 90*time.Second)
		wantRacks(t, pt, "train", rackOf, 8, r0)
		wantRacks(t, pt, "validate", rackOf, 2, r0)
		wantRacks(t, pt, "test", rackOf, 2, r1)
	})

	// Rack 0 has 2 nodes of 4 GPUs, 4 of them used by another pod; rack 1
	// one node of 8. Train (4, required rack) runs in rack 0 (best fit).
	// Validate needs 6: rack 0 has 4.
	layout := func(t *testing.T, pool string) (string, map[string]string, *corev1.Pod) {
		ns := namespace(t)
		rackOf := racks(t, pool, []int{2, 1}, []int{4, 8})
		other := occupy(t, ns, "other", pool+"-r0-0", 4)
		settle()
		return ns, rackOf, other
	}
	pipeline := func(ns, pool string, validate v1alpha1.PhaseTopology) *v1alpha1.PhasedTraining {
		return create(t, wrappers.NewPT(ns, "pipeline").
			Phase("train", 4).PodTemplate(worker(pool, 1, 2, "")).Topology(v1alpha1.PhaseTopology{Required: rackLevel}).
			Phase("validate", 6).PodTemplate(worker(pool, 1, 2, "")).DependsOn("train").Topology(validate).Obj())
	}

	// preferred: validate goes elsewhere (rack 1).
	t.Run("preferred elsewhere", func(t *testing.T) {
		pool := "pool-topo-else"
		ns, rackOf, _ := layout(t, pool)
		pt := pipeline(ns, pool, v1alpha1.PhaseTopology{Preferred: rackLevel, SameDomainAs: "train"})
		done := waitState(t, pt, v1alpha1.PipelineSucceeded, 90*time.Second)
		wantRacks(t, pt, "train", rackOf, 4, pool+"-r0")
		wantRacks(t, pt, "validate", rackOf, 6, pool+"-r1")
		reservedWhole(t, phaseStatus(done, "validate"), 6)
	})

	// required: validate waits for rack 0, saying so, although rack 1
	// holds it; when the other pod ends it runs whole in rack 0.
	t.Run("required waits", func(t *testing.T) {
		pool := "pool-topo-wait"
		ns, rackOf, other := layout(t, pool)
		r0 := pool + "-r0"
		pt := pipeline(ns, pool, v1alpha1.PhaseTopology{Required: rackLevel, SameDomainAs: "train"})
		want := fmt.Sprintf("%s %s (where its earlier phase ran) has room for 4 of its 6 workers now", rackLevel, r0)
		waitWaitingFor(t, pt, "validate", want)
		holdNoPhasePods(t, pt, "validate", 6*time.Second)
		free(t, other)
		done := waitState(t, pt, v1alpha1.PipelineSucceeded, 60*time.Second)
		wantRacks(t, pt, "train", rackOf, 4, r0)
		wantRacks(t, pt, "validate", rackOf, 6, r0)
		reservedWhole(t, phaseStatus(done, "validate"), 6)
	})
}
