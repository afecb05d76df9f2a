// Command peers runs the same pipelines through phasegang and its peers,
// each on a fresh local cluster (test/cluster: a real control plane and
// kwok GPU nodes), one after the other, and prints per system: makespan,
// JCT, time queued, partial-gang seconds, cluster CPU-seconds and API
// writes per pod. It is a benchmark, not a test (issue 32).
//
//	go run ./test/peers -systems plain,kube-gang,phasegang,kueue -workloads seed,burst,frag
//
// (make peers). Run it from the repository root, as root (Kueue's cert
// workaround writes /etc/kueue, removed afterwards).
//
// Systems:
//
//	plain      the harness creates each phase's pods when the previous
//	           phase's pods have ended; kube-scheduler places each pod
//	kube-gang  the same, each phase a PodGroup (Kubernetes' gang API,
//	           scheduling.k8s.io/v1beta1; up.sh --workload-api) with
//	           minCount = gang size
//	phasegang  one PhasedTraining per pipeline, `phasegang controller` as a process
//	kueue      Kueue v0.17.0 (test/peers/build-kueue.sh) out of cluster; each
//	           phase a batch/v1 Job (parallelism = completions = gang size)
//	           in a LocalQueue, the next created when the previous completes
//	volcano    Volcano v1.15.1 (test/peers/build-volcano.sh, from its source:
//	           -volcano-src DIR; not in the default -systems) out of cluster;
//	           each phase a batch.volcano.sh Job of one task (replicas =
//	           minAvailable = gang size), the next created when the previous
//	           is Completed
//
// CPU is counted per process id of this cluster's components (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kwok, and the
// system's own processes), writes from kube-apiserver's
// apiserver_request_total, both diffed around the run; the harness itself
// (the load generator and driver) is not counted.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/phasegang/phasegang/controllers"
)

var (
	systemsFlag   = flag.String("systems", "plain,kube-gang,phasegang,kueue", "systems to run, in order: plain, kube-gang, phasegang, kueue, volcano (not by default: needs -volcano-src)")
	workloadsFlag = flag.String("workloads", "seed,burst,frag", "workloads to run: "+workloadNames())
	timeout       = flag.Duration("timeout", 15*time.Minute, "longest a run may take")
	keepLogs      = flag.Bool("keep-logs", false, "keep each cluster's logs and the systems' logs")
	phasegangBin  = flag.String("phasegang", "", "phasegang binary (default: go build ./cmd/phasegang)")
	kueueHome     = flag.String("kueue", "", "Kueue's cache dir (bin/kueue, crd/, webhook/; default: run test/peers/build-kueue.sh)")
	modelsOnly    = flag.Bool("models-only", false, "start no cluster: print the simulator's models of the systems (phasegang, kueue) on the workloads")
	volcanoHome   = flag.String("volcano", "", "Volcano's cache dir (bin/vc-scheduler, bin/vc-controller-manager, crd/, crd-jobflow/, volcano-scheduler.conf; default: run test/peers/build-volcano.sh on -volcano-src)")
	volcanoSrc    = flag.String("volcano-src", os.Getenv("PHASEGANG_VOLCANO_SRC"), "Volcano's source tree, tag v1.15.1 (env PHASEGANG_VOLCANO_SRC); needed for -systems volcano unless -volcano is given")
	volcanoV      = flag.Int("volcano-v", 0, "klog verbosity of vc-scheduler and vc-controller-manager (the chart: 3 and 4)")
)

// allSystems are the systems the harness knows; volcano is not in the
// default -systems (its source is not served by the module proxy).
var allSystems = []string{"plain", "kube-gang", "phasegang", "kueue", "volcano"}

// errNoVolcanoSrc says how to get Volcano's source.
var errNoVolcanoSrc = errors.New("-systems volcano needs Volcano's source, which the Go module proxy does not serve: " +
	"export volcano-sh/volcano tag v1.15.1 from a clone (git --git-dir=VOLCANO.git archive v1.15.1 | tar x -C DIR) " +
	"and pass -volcano-src DIR (or PHASEGANG_VOLCANO_SRC=DIR), or pass -volcano CACHE_DIR of a build by test/peers/build-volcano.sh")

var errUseObserver = errors.New("phase end from the observer")

func main() {
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	var wls []workload
	for _, n := range strings.Split(*workloadsFlag, ",") {
		f, ok := workloads[n]
		if !ok {
			return fmt.Errorf("unknown workload %q (have %s)", n, workloadNames())
		}
		wls = append(wls, f())
	}
	if *modelsOnly {
		for _, w := range wls {
			if err := printModelFigures(w); err != nil {
				return err
			}
		}
		return nil
	}
	names := strings.Split(*systemsFlag, ",")
	for _, n := range names {
		if !slices.Contains(allSystems, n) {
			return fmt.Errorf("unknown system %q (have %s)", n, strings.Join(allSystems, ","))
		}
	}
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (flags take one value each)", flag.Args())
	}
	if slices.Contains(names, "volcano") && *volcanoHome == "" && *volcanoSrc == "" {
		return errNoVolcanoSrc
	}
	if slices.Contains(names, "volcano") && *volcanoHome != "" {
		if err := checkVolcanoHome(*volcanoHome); err != nil {
			return err
		}
	}
	work, err := os.MkdirTemp("", "phasegang-peers-")
	if err != nil {
		return err
	}
	if slices.Contains(names, "phasegang") && *phasegangBin == "" {
		*phasegangBin = filepath.Join(work, "phasegang")
		if err := runCmd(nil, "go", "build", "-o", *phasegangBin, "./cmd/phasegang"); err != nil {
			return fmt.Errorf("building phasegang: %w", err)
		}
	}
	if slices.Contains(names, "kueue") && *kueueHome == "" {
		out, err := exec.Command("bash", "test/peers/build-kueue.sh").Output()
		if err != nil {
			return fmt.Errorf("building Kueue (test/peers/build-kueue.sh): %w", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		*kueueHome = filepath.Dir(lines[len(lines)-1])
	}
	if slices.Contains(names, "volcano") && *volcanoHome == "" {
		cmd := exec.Command("bash", "test/peers/build-volcano.sh", *volcanoSrc)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("building Volcano (test/peers/build-volcano.sh %s): %w", *volcanoSrc, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		*volcanoHome = filepath.Dir(lines[len(lines)-1])
	}
	for _, w := range wls {
		var all []figures
		for _, n := range names {
			var s system
			switch n {
			case "plain":
				s = plainSystem{}
			case "kube-gang":
				s = kubeGangSystem{}
			case "phasegang":
				s = &phasegangSystem{binary: *phasegangBin}
			case "kueue":
				s = &kueueSystem{home: *kueueHome}
			case "volcano":
				s = &volcanoSystem{home: *volcanoHome, v: *volcanoV}
			}
			fmt.Fprintf(os.Stderr, "peers: %s on %s (%d nodes × %d GPUs, %d pipelines, %d pods)...\n", n, w.name, w.nodes, w.gpusPerNode, len(w.pipelines), w.pods())
			f, err := runOne(ctx, s, w, work)
			if err != nil {
				return fmt.Errorf("%s on %s: %w", n, w.name, err)
			}
			all = append(all, f)
			printTable(w, all) // as it grows: a later failure keeps the earlier figures
		}
		rows, err := checkModels(w, all)
		if err != nil {
			return err
		}
		printModels(w, rows)
		if err := noPartialGangs(w, all); err != nil {
			return err
		}
	}
	if !*keepLogs {
		os.RemoveAll(work)
	} else {
		fmt.Fprintf(os.Stderr, "peers: logs in %s\n", work)
	}
	return nil
}

// cluster is one up.sh cluster and the clients of a run.
type cluster struct {
	ctx        context.Context
	dir, art   string
	kubeconfig string
	kubectlBin string
	cfg        *rest.Config
	cs         kubernetes.Interface
	k8s        client.Client
	pids       map[string]int
	wake       chan struct{}
}

func (c *cluster) artifact(name string) string { return filepath.Join(c.art, name) }

func (c *cluster) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// watch is the driver's view of a peer's jobs: a watch, as a user's
// script would have. see records each added or updated object's outcome;
// every event then wakes the driver. It returns once the informer has
// synced and two more seconds have passed, so that the peer's own
// informers have synced too before the run's CPU is counted.
func (c *cluster) watch(ctx context.Context, f interface{ Start(<-chan struct{}) }, inf cache.SharedIndexInformer, see func(obj any)) {
	seen := func(obj any) {
		see(obj)
		c.poke()
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, n any) { seen(n) }})
	f.Start(c.ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	time.Sleep(2 * time.Second)
}

func (c *cluster) kubectl(args ...string) error {
	return runCmd([]string{"KUBECONFIG=" + c.kubeconfig}, c.kubectlBin, args...)
}

func runCmd(env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

func up(ctx context.Context, s system, w workload, work string) (*cluster, error) {
	dir := filepath.Join(work, "cluster-"+s.name()+"-"+w.name)
	art := filepath.Join(work, "logs-"+s.name()+"-"+w.name)
	if err := os.MkdirAll(art, 0o755); err != nil {
		return nil, err
	}
	args := append([]string{"test/cluster/up.sh", "--nodes", strconv.Itoa(w.nodes), "--gpus", strconv.Itoa(w.gpusPerNode), "--dir", dir}, s.upArgs()...)
	if err := runCmd(nil, "bash", args...); err != nil {
		return nil, fmt.Errorf("test/cluster/up.sh: %w", err)
	}
	c := &cluster{ctx: ctx, dir: dir, art: art, kubeconfig: filepath.Join(dir, "kubeconfig"), pids: map[string]int{}, wake: make(chan struct{}, 1)}
	env, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		return c, err
	}
	sc := bufio.NewScanner(strings.NewReader(string(env)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "export PHASEGANG_K8S_BIN="); ok {
			c.kubectlBin = filepath.Join(v, "kubectl")
		}
	}
	pidFiles, _ := filepath.Glob(filepath.Join(dir, "pids", "*.pid"))
	for _, f := range pidFiles {
		b, _ := os.ReadFile(f)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			c.pids[strings.TrimSuffix(filepath.Base(f), ".pid")] = pid
		}
	}
	c.cfg, err = clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return c, err
	}
	c.cfg.QPS, c.cfg.Burst = 200, 400
	if c.cs, err = kubernetes.NewForConfig(c.cfg); err != nil {
		return c, err
	}
	c.k8s, err = client.New(c.cfg, client.Options{Scheme: controllers.Scheme()})
	return c, err
}

func (c *cluster) down() {
	args := []string{"test/cluster/down.sh", "--dir", c.dir}
	if *keepLogs {
		args = append(args, "--keep-logs")
	}
	if err := runCmd(nil, "bash", args...); err != nil {
		fmt.Fprintf(os.Stderr, "peers: down.sh: %v\n", err)
	}
}

func runOne(parent context.Context, s system, w workload, work string) (f figures, err error) {
	c, err := up(parent, s, w, work)
	if c != nil {
		defer c.down()
	}
	if err != nil {
		return f, err
	}
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	c.ctx = ctx
	if _, err := c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: runNamespace}}, metav1.CreateOptions{}); err != nil {
		return f, err
	}
	defer s.stop()
	extra, err := s.start(ctx, c, w)
	if err != nil {
		return f, fmt.Errorf("starting %s: %w", s.name(), err)
	}
	pids := map[string]int{}
	for k, v := range c.pids {
		pids[k] = v
	}
	for k, v := range extra {
		pids[k] = v
	}
	obs := newObserver()
	obs.start(ctx, c.cs, runNamespace)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-obs.notify:
				c.poke()
			}
		}
	}()

	before := snapshot(c.cfg, pids)
	start := time.Now()
	n := len(w.pipelines)
	arrivals := make([]time.Time, n)
	phase := make([]int, n) // the phase submitted; -1: not arrived; len(phases): done
	for i := range phase {
		phase[i] = -1
	}
	deadline := start.Add(*timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		now := time.Now()
		gs := obs.gangs()
		type sub struct{ i, k int }
		var todo []sub
		done := 0
		for i, p := range w.pipelines {
			switch {
			case phase[i] == -1:
				if now.Sub(start) >= p.arrival {
					phase[i] = 0
					arrivals[i] = now
					todo = append(todo, sub{i, 0})
				}
			case phase[i] < len(p.phases):
				k := phase[i]
				g := gs[gangKey{i, k}]
				if g != nil && g.failed {
					return f, fmt.Errorf("a pod of %s phase %s failed", p.name, p.phases[k].name)
				}
				ended := g != nil && g.ended >= int(p.phases[k].workers)
				if s.drivesPhases() || k == len(p.phases)-1 {
					// The pipeline ends with its last phase's pods; a
					// system that drives the phases is watched through its pods.
					if ended && k == len(p.phases)-1 {
						phase[i]++
					} else if ended && s.drivesPhases() {
						phase[i]++
					}
					break
				}
				e, err := s.phaseEnded(i, k)
				if errors.Is(err, errUseObserver) {
					e, err = ended, nil
				}
				if err != nil {
					return f, err
				}
				if e {
					phase[i]++
					todo = append(todo, sub{i, phase[i]})
				}
			}
			if phase[i] == len(p.phases) {
				done++
			}
		}
		if len(todo) > 0 {
			var mu sync.Mutex
			var firstErr error
			var wg sync.WaitGroup
			for _, t := range todo {
				wg.Go(func() {
					if err := s.submit(ctx, c, t.i, w.pipelines[t.i], t.k); err != nil {
						mu.Lock()
						firstErr = errors.Join(firstErr, err)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if firstErr != nil {
				return f, firstErr
			}
		}
		if done == n {
			break
		}
		if now.After(deadline) {
			return f, fmt.Errorf("%d of %d pipelines ended within %v", done, n, *timeout)
		}
		select {
		case <-ctx.Done():
			return f, ctx.Err()
		case <-c.wake:
		case <-tick.C:
		}
	}
	used := snapshot(c.cfg, pids).since(before)
	gs := obs.gangs()
	writeTimeline(c.artifact("timeline.tsv"), w, arrivals, start, gs)
	f, err = compute(w, arrivals, start, gs)
	f.system = s.name()
	f.cpu, f.writes = used.cpu, used.writes
	return f, err
}

func freePort() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func clientKey(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

func parallel(n, width int, f func(i int) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, width)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(i); err != nil {
				mu.Lock()
				first = errors.Join(first, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// noPartialGangs fails the run if phasegang showed a partial gang: that
// it never holds one is its claim, and CI's small run (.ci/run) holds it
// to that on a real control plane.
func noPartialGangs(w workload, fs []figures) error {
	for _, f := range fs {
		if f.system == "phasegang" && f.splitGangs > 0 {
			return fmt.Errorf("%s: phasegang showed %d partial gangs (%.1f partial-gang seconds)", w.name, f.splitGangs, f.partialSecs)
		}
	}
	return nil
}
