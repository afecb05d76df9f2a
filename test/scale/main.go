// Command scale is phasegang's scale benchmark on the local control plane
// (test/cluster): N kwok nodes × 8 GPUs, P pipelines × 3 phases of mixed
// gang sizes, against the same number of plain pods scheduled by
// kube-scheduler alone. It prints a table; it is a benchmark, not a test.
//
//	test/cluster/up.sh --nodes 0 --dir /tmp/pg && source /tmp/pg/env
//	go run ./test/scale -nodes 1000 -pipelines 500
//
// With -write-cost N it measures one PhasedTraining status write against
// one pod status patch instead (writecost.go).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/controllers"
	"github.com/phasegang/phasegang/driver"
)

var (
	nodeCount     = flag.Int("nodes", 1000, "kwok nodes to create")
	gpus          = flag.Int("gpus", 8, "GPUs per node")
	pipelines     = flag.Int("pipelines", 500, "pipelines (3 phases each)")
	runSecs       = flag.Int("run-seconds", 5, "how long each worker runs")
	binary        = flag.String("phasegang", "", "phasegang binary (default: go build ./cmd/phasegang)")
	keep          = flag.Bool("keep", false, "keep the nodes afterwards")
	shaped        = flag.Bool("plain-shaped", false, "give the first plain run's pods a phasegang worker's shape (hostname, subdomain, environment, pinned to a node) and skip the other runs: separates what the pods are from what the controller does")
	workers       = flag.Int("workers", 0, "the controller's --workers (0: its default)")
	cpuProf       = flag.String("cpuprofile", "", "write a CPU profile of the controller over -profile-window, taken from the start of the phasegang run, to this file")
	apiProf       = flag.String("apiserver-profile", "", "write a CPU profile of kube-apiserver over -profile-window, taken from the start of the phasegang run, to this file (needs test/cluster/up.sh --profiling)")
	writeCost     = flag.Int("write-cost", 0, "measure kube-apiserver's CPU per write instead (N writes each of a pod status patch and of PhasedTraining status writes; creates no nodes) and print a table")
	profileWindow = flag.Duration("profile-window", 60*time.Second, "how long -cpuprofile and -apiserver-profile sample (whole seconds)")
)

var (
	k8s     client.Client
	restCfg *rest.Config
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

// trainSizes cycles through mixed gang sizes; validate uses max(1, g/4)
// and test 1, as the simulator's trace pipelines do.
var trainSizes = []int32{1, 2, 4, 8, 16, 4, 2, 8}

func run() error {
	ctx := context.Background()
	if *profileWindow < time.Second {
		return fmt.Errorf("-profile-window %v: pprof samples whole seconds, want at least 1s", *profileWindow)
	}
	cfg, err := config.GetConfig()
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	restCfg = cfg
	k8s, err = client.New(cfg, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		return err
	}
	// -write-cost runs no controller.
	if *binary == "" && *writeCost == 0 {
		dir, _ := os.MkdirTemp("", "phasegang-scale-")
		*binary = filepath.Join(dir, "phasegang")
		b := exec.Command("go", "build", "-o", *binary, "./cmd/phasegang")
		b.Stdout, b.Stderr = os.Stderr, os.Stderr
		if err := b.Run(); err != nil {
			return fmt.Errorf("building phasegang: %w", err)
		}
	}
	if name := filepath.Base(*binary); *binary != "" && !slices.Contains(components, name) {
		components[len(components)-1] = name[:min(len(name), 15)]
	}
	apply := exec.Command("kubectl", "apply", "--server-side", "-f", "config/crd/bases")
	apply.Stdout, apply.Stderr = os.Stderr, os.Stderr
	if err := apply.Run(); err != nil {
		return fmt.Errorf("installing the CRD (run from the repository root): %w", err)
	}
	for i := 0; ; i++ {
		var list v1alpha1.PhasedTrainingList
		if err := k8s.List(ctx, &list); err == nil {
			break
		} else if i > 200 {
			return fmt.Errorf("the PhasedTraining API is not served: %w", err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err := sweep(ctx); err != nil {
		return err
	}
	if *writeCost > 0 {
		return writeCostRun(ctx, *writeCost)
	}
	fmt.Fprintf(os.Stderr, "creating %d nodes × %d GPUs...\n", *nodeCount, *gpus)
	if err := createNodes(ctx); err != nil {
		return err
	}
	if !*keep {
		defer deleteNodes(context.Background())
	}

	var trainPods int
	for i := range *pipelines {
		trainPods += int(trainSizes[i%len(trainSizes)])
	}
	fmt.Fprintf(os.Stderr, "plain: %d pods created directly...\n", trainPods)
	plain, err := plainRun(ctx, trainPods)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "plain: %.1f pods/s\n", plain.podsPerSec)
	if *shaped {
		printUsage([]string{"plain"}, []usage{plain.used})
		return nil
	}
	fmt.Fprintf(os.Stderr, "plain, 3 phases: %d pipelines driven through their phases with plain pods...\n", *pipelines)
	plain3, err := plainPhasesRun(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "plain, 3 phases: %.1f pods/s\n", plain3.podsPerSec)
	fmt.Fprintf(os.Stderr, "phasegang: %d pipelines...\n", *pipelines)
	pg, err := phasegangRun(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("\nscale benchmark: %d kwok nodes × %d GPUs, %d pipelines × 3 phases (train gangs %v, validate max(1,g/4), test 1), workers run %ds\n\n",
		*nodeCount, *gpus, *pipelines, trainSizes, *runSecs)
	fmt.Printf("%-34s %12s %12s\n", "", "plain pods", "phasegang")
	fmt.Printf("%-34s %12d %12d\n", "pods (first wave: every train gang)", plain.pods, pg.trainPods)
	fmt.Printf("%-34s %12.1f %12.1f\n", "pods/s, creation to Running", plain.podsPerSec, pg.podsPerSec)
	fmt.Printf("%-34s %12.2f %12.2f\n", "p50 pod latency to Running (s)", plain.p50, pg.p50)
	fmt.Printf("%-34s %12.2f %12.2f\n", "p99 pod latency to Running (s)", plain.p99, pg.p99)
	fmt.Printf("%-34s %12d %12d\n", "other pods bound meanwhile", 0, pg.firstWaveLater)
	fmt.Printf("\nratio phasegang/plain (pods/s): %.2f (target >= 0.9)\n", pg.podsPerSec/plain.podsPerSec)
	fmt.Printf("\n%-34s %12s %12s\n", "whole run (3 phases)", "plain pods", "phasegang")
	fmt.Printf("%-34s %12d %12d\n", "pods", plain3.pods, pg.whole.pods)
	fmt.Printf("%-34s %12.1f %12.1f\n", "pods/s, creation to Running", plain3.podsPerSec, pg.whole.podsPerSec)
	fmt.Printf("%-34s %12.2f %12.2f\n", "p50 pod latency to Running (s)", plain3.p50, pg.whole.p50)
	fmt.Printf("%-34s %12.2f %12.2f\n", "p99 pod latency to Running (s)", plain3.p99, pg.whole.p99)
	fmt.Printf("%-34s %12.1f %12.1f\n", "every pipeline ended (s)", plain3.total.Seconds(), pg.total.Seconds())
	fmt.Printf("\nratio phasegang/plain, whole run (pods/s): %.2f\n", pg.whole.podsPerSec/plain3.podsPerSec)
	fmt.Printf("all %d pipelines succeeded in %.1fs; %d pods in all\n", *pipelines, pg.total.Seconds(), pg.allPods)
	fmt.Printf("controller: CPU %.1fs (user+sys), peak RSS %d MiB, %.1f API requests per pipeline (%d in all)\n",
		pg.cpu.Seconds(), pg.rssMiB, float64(pg.requests)/float64(*pipelines), pg.requests)
	printUsage([]string{"plain", "plain, 3 ph.", "phasegang"}, []usage{plain.used, plain3.used, pg.used})
	printCost(plain3, pg)
	return nil
}

func createNodes(ctx context.Context) error {
	return parallel(*nodeCount, 32, func(i int) error {
		name := fmt.Sprintf("scale-%04d", i)
		rl := corev1.ResourceList{
			"cpu": resource.MustParse("128"), "memory": resource.MustParse("1Ti"), "pods": resource.MustParse("110"),
			"nvidia.com/gpu": *resource.NewQuantity(int64(*gpus), resource.DecimalSI),
		}
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name,
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
				Labels:      map[string]string{"kubernetes.io/hostname": name, "pool": "scale", "type": "kwok"}},
			Status: corev1.NodeStatus{Allocatable: rl, Capacity: rl},
		}
		if err := k8s.Create(ctx, n); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
}

func deleteNodes(ctx context.Context) {
	_ = parallel(*nodeCount, 32, func(i int) error {
		return client.IgnoreNotFound(k8s.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("scale-%04d", i)}}))
	})
}

func parallel(n, width int, f func(i int) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, width)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

func workerSpec(seconds int) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"phasegang.dev/sim-run-seconds": strconv.Itoa(seconds)}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"pool": "scale"},
			Containers: []corev1.Container{{Name: "worker", Image: "trainer:scale",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "cpu": resource.MustParse("1")},
					Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}},
		},
	}
}

type result struct {
	whole                    *result // phasegang: every pod of every phase
	pods, trainPods, allPods int
	podsPerSec, p50, p99     float64
	total                    time.Duration
	cpu                      time.Duration
	rssMiB                   int64
	requests                 int
	used                     usage // what the cluster spent, from start to the measured end
	// firstWaveLater: phasegang's pods of later phases that kube-scheduler
	// bound before the last train pod ran.
	firstWaveLater int
	// phases measured, and their latency from queueing to all workers
	// Running (phaseLatencies), in seconds.
	phases             int
	phaseP50, phaseP99 float64
}

// cleanup removes a run's namespace and waits until its pods are gone, so
// that no run shares the cluster with another's teardown. Pods are deleted
// at once (grace period 0): waiting for kwok to play every graceful
// deletion took longer than the runs themselves.
func cleanup(ns string) {
	ctx := context.Background()
	_ = k8s.DeleteAllOf(ctx, &v1alpha1.PhasedTraining{}, client.InNamespace(ns))
	_ = k8s.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
	_ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	for range 600 {
		var list corev1.PodList
		if err := k8s.List(ctx, &list, client.InNamespace(ns)); err == nil && len(list.Items) == 0 {
			return
		}
		_ = k8s.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
		time.Sleep(time.Second)
	}
	fmt.Fprintf(os.Stderr, "scale: namespace %s still has pods after 10 minutes\n", ns)
}

// sweep cleans up what earlier runs left behind (an interrupted run).
func sweep(ctx context.Context) error {
	var nss corev1.NamespaceList
	if err := k8s.List(ctx, &nss); err != nil {
		return err
	}
	for _, ns := range nss.Items {
		if strings.HasPrefix(ns.Name, "scale-plain") || strings.HasPrefix(ns.Name, "scale-pg-") {
			fmt.Fprintf(os.Stderr, "removing %s, left by an earlier run...\n", ns.Name)
			cleanup(ns.Name)
		}
	}
	return nil
}

func namespaceFor(name string) (string, error) {
	ns := fmt.Sprintf("%s-%d", name, time.Now().Unix())
	return ns, k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
}

// plainRun creates n pods directly (what a per-pod system does) and
// measures creation → Running.
func plainRun(ctx context.Context, n int) (result, error) {
	ns, err := namespaceFor("scale-plain")
	if err != nil {
		return result{}, err
	}
	// The next run must not share the cluster with this one's teardown.
	defer cleanup(ns)
	before := snapshot(ctx, restCfg)
	start := time.Now()
	err = parallel(n, 64, func(i int) error {
		// The same worker as a train gang's: it runs runSecs and ends, so
		// kwok (the nodes' kubelets) does the same work per pod in both runs.
		t := workerSpec(*runSecs)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("plain-%05d", i), Annotations: t.Annotations, Labels: map[string]string{"bench": "plain"}}, Spec: t.Spec}
		if *shaped {
			if err := shapeLikeWorker(p, i); err != nil {
				return err
			}
		}
		return k8s.Create(ctx, p)
	})
	if err != nil {
		return result{}, err
	}
	fmt.Fprintf(os.Stderr, "  %d pods created in %.1fs\n", n, time.Since(start).Seconds())
	lat, last, err := waitRunning(ctx, ns, map[string]string{"bench": "plain"}, n, 10*time.Minute)
	if err != nil {
		return result{}, err
	}
	r := result{pods: n, podsPerSec: float64(n) / last.Sub(start).Seconds(), used: snapshot(ctx, restCfg).since(before)}
	r.p50, r.p99 = quantile(lat, 0.5), quantile(lat, 0.99)
	return r, nil
}

// phaseSizes are pipeline i's gang sizes: train, validate, test.
func phaseSizes(i int) [3]int32 {
	g := trainSizes[i%len(trainSizes)]
	return [3]int32{g, max(1, g/4), 1}
}

// plainPhasesRun drives the same pipelines through the same three phases
// with plain pods and no phasegang: a phase's pods are created directly
// once every pod of the pipeline's previous phase has ended, as a workflow
// engine or a user's script would, and kube-scheduler places each pod on
// its own. Both sides then create, start and end the same pods with the
// same dependencies; what differs is who decides.
func plainPhasesRun(ctx context.Context) (result, error) {
	ns, err := namespaceFor("scale-plain3")
	if err != nil {
		return result{}, err
	}
	defer cleanup(ns)
	create := func(i, phase int) error {
		n := int(phaseSizes(i)[phase])
		return parallel(n, 16, func(w int) error {
			t := workerSpec(*runSecs)
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("plain-%04d-%d-%d", i, phase, w), Annotations: t.Annotations,
				Labels: map[string]string{"bench": "plain3", "pipeline": strconv.Itoa(i), "phase": strconv.Itoa(phase)}}, Spec: t.Spec}
			if err := k8s.Create(ctx, p); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			return nil
		})
	}
	before := snapshot(ctx, restCfg)
	start := time.Now()
	phase := make([]int, *pipelines) // the phase whose pods exist; 3: done
	if err := parallel(*pipelines, 32, func(i int) error { return create(i, 0) }); err != nil {
		return result{}, err
	}
	deadline := time.Now().Add(20 * time.Minute)
	for {
		var list corev1.PodList
		if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return result{}, err
		}
		ended := make([][3]int32, *pipelines)
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodFailed {
				return result{}, fmt.Errorf("plain pod %s failed", p.Name)
			}
			if p.Status.Phase == corev1.PodSucceeded {
				i, _ := strconv.Atoi(p.Labels["pipeline"])
				k, _ := strconv.Atoi(p.Labels["phase"])
				ended[i][k]++
			}
		}
		var next []int
		done := 0
		for i := range *pipelines {
			if phase[i] < 3 && ended[i][phase[i]] == phaseSizes(i)[phase[i]] {
				phase[i]++
				if phase[i] < 3 {
					next = append(next, i)
				}
			}
			if phase[i] == 3 {
				done++
			}
		}
		if err := parallel(len(next), 32, func(j int) error { return create(next[j], phase[next[j]]) }); err != nil {
			return result{}, err
		}
		if done == *pipelines {
			r := *wholeRun(list.Items, start)
			r.phaseLatency(list.Items, plainPhaseKey, func(string) time.Time { return start })
			r.total = time.Since(start)
			r.used = snapshot(ctx, restCfg).since(before)
			return r, nil
		}
		if time.Now().After(deadline) {
			return result{}, fmt.Errorf("only %d of %d plain pipelines ended within 20 minutes", done, *pipelines)
		}
		time.Sleep(time.Second)
	}
}

// wholeRun is pods/s from start to the last pod's Running, over every pod.
func wholeRun(pods []corev1.Pod, start time.Time) *result {
	m := measure(pods)
	r := &result{pods: len(m.latency)}
	if len(m.latency) > 0 {
		r.podsPerSec = float64(len(m.latency)) / m.last.Sub(start).Seconds()
		r.p50, r.p99 = quantile(m.latency, 0.5), quantile(m.latency, 0.99)
	}
	return r
}

// podTimes are the started pods' latencies, in seconds: creation →
// Running, and split at the binding where the pod records it; last is when
// the last of them got Running.
type podTimes struct {
	latency, toBound, toRun []float64
	last                    time.Time
}

func measure(pods []corev1.Pod) podTimes {
	var m podTimes
	for i := range pods {
		p := &pods[i]
		started := runningSince(p)
		if started.IsZero() {
			continue
		}
		m.latency = append(m.latency, started.Sub(p.CreationTimestamp.Time).Seconds())
		if started.After(m.last) {
			m.last = started
		}
		if b := boundAt(p); !b.IsZero() {
			m.toBound = append(m.toBound, b.Sub(p.CreationTimestamp.Time).Seconds())
			m.toRun = append(m.toRun, started.Sub(b).Seconds())
		}
	}
	return m
}

// shapeLikeWorker gives plain pod i the shape of a phasegang worker: the
// pod the controller would build (driver.WorkerPod: hostname and
// subdomain, the distributed-training environment, a required node
// affinity pinning it to one node) for worker i%8 of an 8-worker train
// gang, with nodes filled one after the other as phasegang's packing fills
// them. It has no owner: no PhasedTraining exists, and the garbage
// collector would delete a pod whose owner is missing.
func shapeLikeWorker(p *corev1.Pod, i int) error {
	pt := &v1alpha1.PhasedTraining{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: fmt.Sprintf("p-%04d", i/8)},
		Spec:       v1alpha1.PhasedTrainingSpec{Phases: []v1alpha1.Phase{{Name: "train", Gang: v1alpha1.Gang{Min: 8}, Template: workerSpec(*runSecs)}}},
	}
	node := fmt.Sprintf("scale-%04d", (i / *gpus)%*nodeCount)
	ps := &v1alpha1.PhaseStatus{Name: "train", State: v1alpha1.PhaseRunning, Assignments: slices.Repeat([]string{node}, 8)}
	w, err := driver.WorkerPod(pt, ps, int32(i%8), node, 8)
	if err != nil {
		return err
	}
	p.Spec = w.Spec
	return nil
}

// waitRunning waits until n pods matching labels have run, and returns
// each pod's creation → Running latency and when the last one got there.
func waitRunning(ctx context.Context, ns string, labels map[string]string, n int, timeout time.Duration) ([]float64, time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		var list corev1.PodList
		if err := k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
			return nil, time.Time{}, err
		}
		m := measure(list.Items)
		if len(m.latency) >= n {
			fmt.Fprintf(os.Stderr, "  created → bound p50 %.0fs p99 %.0fs; bound → Running p50 %.0fs p99 %.0fs (1 s resolution)\n",
				quantile(m.toBound, 0.5), quantile(m.toBound, 0.99), quantile(m.toRun, 0.5), quantile(m.toRun, 0.99))
			return m.latency, m.last, nil
		}
		if time.Now().After(deadline) {
			return nil, time.Time{}, fmt.Errorf("only %d of %d pods ran within %v", len(m.latency), n, timeout)
		}
		time.Sleep(time.Second)
	}
}

// waitPipelinesEnded watches the namespace's PhasedTrainings until n have
// succeeded; one that fails is an error.
func waitPipelinesEnded(ctx context.Context, ns string, n int, timeout time.Duration) error {
	wc, err := client.NewWithWatch(restCfg, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	succeeded := map[string]bool{}
	for {
		var list v1alpha1.PhasedTrainingList
		if err := wc.List(ctx, &list, client.InNamespace(ns)); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("only %d of %d pipelines succeeded within %v", len(succeeded), n, timeout)
			}
			return err
		}
		see := func(pt *v1alpha1.PhasedTraining) error {
			switch pt.Status.State {
			case v1alpha1.PipelineSucceeded:
				succeeded[pt.Name] = true
			case v1alpha1.PipelineFailed:
				return fmt.Errorf("%s failed: %v", pt.Name, pt.Status.Conditions)
			}
			return nil
		}
		for i := range list.Items {
			if err := see(&list.Items[i]); err != nil {
				return err
			}
		}
		if len(succeeded) >= n {
			return nil
		}
		w, err := wc.Watch(ctx, &v1alpha1.PhasedTrainingList{}, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
		if err != nil {
			return err
		}
		for ev := range w.ResultChan() {
			if pt, ok := ev.Object.(*v1alpha1.PhasedTraining); ok {
				if err := see(pt); err != nil {
					w.Stop()
					return err
				}
			}
			if len(succeeded) >= n {
				w.Stop()
				return nil
			}
		}
		// The watch ended (a timeout, an expired version): list again.
		if ctx.Err() != nil {
			return fmt.Errorf("only %d of %d pipelines succeeded within %v", len(succeeded), n, timeout)
		}
	}
}

// boundAt is when kube-scheduler bound the pod (its PodScheduled condition).
func boundAt(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// runningSince is when the pod's container started (kwok stamps it).
func runningSince(p *corev1.Pod) time.Time {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil {
			return cs.State.Running.StartedAt.Time
		}
		if cs.State.Terminated != nil {
			return cs.State.Terminated.StartedAt.Time
		}
	}
	return time.Time{}
}

func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[max(0, min(len(s)-1, int(math.Ceil(q*float64(len(s))))-1))]
}

func phasegangRun(ctx context.Context) (result, error) {
	ns, err := namespaceFor("scale-pg")
	if err != nil {
		return result{}, err
	}
	defer cleanup(ns)
	metricsPort := "18089"
	ctl := exec.Command(*binary, "controller", "--metrics-bind-address", "127.0.0.1:"+metricsPort, "--health-probe-bind-address", "0", "--resync", "2s",
		"--pprof-bind-address", "127.0.0.1:18090")
	if *workers > 0 {
		ctl.Args = append(ctl.Args, "--workers", strconv.Itoa(*workers))
	}
	logf, _ := os.CreateTemp("", "phasegang-scale-controller-*.log")
	ctl.Stdout, ctl.Stderr = logf, logf
	if err := ctl.Start(); err != nil {
		return result{}, err
	}
	defer func() {
		_ = ctl.Process.Signal(syscall.SIGTERM)
		_ = ctl.Wait()
		fmt.Fprintf(os.Stderr, "controller log: %s\n", logf.Name())
	}()
	time.Sleep(2 * time.Second)
	baseReq := scrapeRequests(metricsPort)
	before := snapshot(ctx, restCfg)
	start := time.Now()
	// The profiles run for their whole window even when the run ends
	// sooner: the controller stays up until they are written.
	var profiles sync.WaitGroup
	defer profiles.Wait()
	if *cpuProf != "" {
		profiles.Go(func() {
			url := fmt.Sprintf("http://127.0.0.1:18090/debug/pprof/profile?seconds=%d", int(profileWindow.Seconds()))
			if err := fetch(http.DefaultClient, url, *cpuProf); err != nil {
				fmt.Fprintln(os.Stderr, "cpu profile:", err)
			}
		})
	}
	if *apiProf != "" {
		profiles.Go(func() {
			if err := apiserverProfile(*apiProf); err != nil {
				fmt.Fprintln(os.Stderr, "kube-apiserver profile:", err)
			}
		})
	}
	trainPods := 0
	err = parallel(*pipelines, 32, func(i int) error {
		sz := phaseSizes(i)
		g, v := sz[0], sz[1]
		pt := &v1alpha1.PhasedTraining{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p-%04d", i)},
			Spec: v1alpha1.PhasedTrainingSpec{Phases: []v1alpha1.Phase{
				{Name: "train", Gang: v1alpha1.Gang{Min: g}, Template: workerSpec(*runSecs)},
				{Name: "validate", DependsOn: []string{"train"}, Gang: v1alpha1.Gang{Min: v}, Template: workerSpec(*runSecs)},
				{Name: "test", DependsOn: []string{"validate"}, Gang: v1alpha1.Gang{Min: 1}, Template: workerSpec(*runSecs)},
			}}}
		return k8s.Create(ctx, pt)
	})
	if err != nil {
		return result{}, err
	}
	fmt.Fprintf(os.Stderr, "  %d PhasedTrainings created in %.1fs\n", *pipelines, time.Since(start).Seconds())
	for i := range *pipelines {
		trainPods += int(trainSizes[i%len(trainSizes)])
	}
	lat, last, err := waitRunning(ctx, ns, map[string]string{"phasegang.dev/phase": "train"}, trainPods, 10*time.Minute)
	if err != nil {
		return result{}, err
	}
	r := result{trainPods: trainPods, podsPerSec: float64(trainPods) / last.Sub(start).Seconds()}
	var pts v1alpha1.PhasedTrainingList
	if err := k8s.List(ctx, &pts, client.InNamespace(ns)); err == nil {
		var toGrant []float64
		granted, created := map[string]time.Time{}, map[string]time.Time{}
		for _, pt := range pts.Items {
			created[pt.Name] = pt.CreationTimestamp.Time
			for _, ps := range pt.Status.Phases {
				if ps.Name == "train" && ps.ReservedTime != nil {
					toGrant = append(toGrant, ps.ReservedTime.Sub(pt.CreationTimestamp.Time).Seconds())
					granted[pt.Name] = ps.ReservedTime.Time
				}
			}
		}
		fmt.Fprintf(os.Stderr, "  PhasedTraining created → train granted p50 %.0fs p99 %.0fs (%d pipelines)\n",
			quantile(toGrant, 0.5), quantile(toGrant, 0.99), len(toGrant))
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"phasegang.dev/phase": "train"}); err == nil {
			var toCreate []float64
			for _, p := range pods.Items {
				if g, ok := granted[p.Labels["phasegang.dev/pipeline"]]; ok {
					toCreate = append(toCreate, p.CreationTimestamp.Sub(g).Seconds())
				}
			}
			fmt.Fprintf(os.Stderr, "  train granted → pod created p50 %.0fs p99 %.0fs\n", quantile(toCreate, 0.5), quantile(toCreate, 0.99))
			// The first wave ends with its last pod: say where that one's
			// time went (seconds from the start of the run).
			var lastPod *corev1.Pod
			for i := range pods.Items {
				if p := &pods.Items[i]; lastPod == nil || runningSince(p).After(runningSince(lastPod)) {
					lastPod = p
				}
			}
			if lastPod != nil {
				at := func(t time.Time) string {
					if t.IsZero() {
						return "?"
					}
					return fmt.Sprintf("%.0fs", t.Sub(start).Seconds())
				}
				pipeline := lastPod.Labels["phasegang.dev/pipeline"]
				fmt.Fprintf(os.Stderr, "  the last train pod, %s: pipeline created %s, granted %s, pod created %s, bound %s, Running %s\n",
					lastPod.Name, at(created[pipeline]), at(granted[pipeline]), at(lastPod.CreationTimestamp.Time), at(boundAt(lastPod)), at(runningSince(lastPod)))
			}
		}
	}
	r.p50, r.p99 = quantile(lat, 0.5), quantile(lat, 0.99)
	fmt.Fprintf(os.Stderr, "phasegang first wave: %.1f pods/s (p50 %.0fs, p99 %.0fs); waiting for every pipeline to end...\n", r.podsPerSec, r.p50, r.p99)
	// Then every pipeline to the end, watched: polling a list of every
	// PhasedTraining each second would be the benchmark's own cost (a
	// JSON list of custom resources), not phasegang's.
	if err := waitPipelinesEnded(ctx, ns, *pipelines, 15*time.Minute); err != nil {
		return r, err
	}
	r.total = time.Since(start)
	r.used = snapshot(ctx, restCfg).since(before)
	var all corev1.PodList
	_ = k8s.List(ctx, &all, client.InNamespace(ns))
	r.allPods = len(all.Items)
	r.whole = wholeRun(all.Items, start)
	created := map[string]time.Time{}
	var ended v1alpha1.PhasedTrainingList
	_ = k8s.List(ctx, &ended, client.InNamespace(ns))
	for _, pt := range ended.Items {
		created[driver.DNSLabel(pt.Name, 63)] = pt.CreationTimestamp.Time
	}
	r.phaseLatency(all.Items, workerPhaseKey, func(pipeline string) time.Time { return created[pipeline] })
	// kube-scheduler binds every pod, phasegang's too (they arrive pinned
	// to a node), within its client's request budget (50/s by default),
	// and in the first wave it also binds the later phases of the
	// pipelines whose train already ended.
	train, later := 0, 0
	for i := range all.Items {
		p := &all.Items[i]
		if b := boundAt(p); b.IsZero() || b.After(last) {
			continue
		}
		if p.Labels["phasegang.dev/phase"] == "train" {
			train++
		} else {
			later++
		}
	}
	fmt.Fprintf(os.Stderr, "  in the first wave (%.0fs) kube-scheduler bound %d pods: %d train and %d of later phases (%.1f bindings/s)\n",
		last.Sub(start).Seconds(), train+later, train, later, float64(train+later)/last.Sub(start).Seconds())
	r.firstWaveLater = later
	r.requests = scrapeRequests(metricsPort) - baseReq
	r.cpu, r.rssMiB = procStats(ctl.Process.Pid)
	return r, nil
}

// fetch saves url's body to file, requested with hc.
func fetch(hc *http.Client, url, file string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// scrapeRequests sums client-go's rest_client_requests_total from the
// controller's metrics endpoint: the API requests it made.
func scrapeRequests(port string) int {
	resp, err := http.Get("http://127.0.0.1:" + port + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	total := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "rest_client_requests_total{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			total += v
		}
	}
	return int(total)
}

// procStats reads a process's CPU time and peak resident memory.
func procStats(pid int) (time.Duration, int64) {
	var cpu time.Duration
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		cpu = time.Duration(ut+st) * time.Second / 100 // USER_HZ
	}
	var rss int64
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				rss = kb / 1024
			}
		}
	}
	return cpu, rss
}
