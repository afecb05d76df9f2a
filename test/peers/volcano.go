package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
)

// volcanoSystem runs Volcano (built by build-volcano.sh from its source)
// out of cluster as shared/notes/peers.md verified: its CRDs, vc-scheduler
// with the chart's default scheduler.conf and vc-controller-manager, no
// leader election, no webhook-manager (each vcjob carries what its webhook
// would default). Each phase is a batch.volcano.sh/v1alpha1 Job of one task
// (replicas = minAvailable = gang size) in the default queue; the harness
// creates the next phase's vcjob when the previous one is Completed.
type volcanoSystem struct {
	home string // the cache dir: bin/, crd/, crd-jobflow/, volcano-scheduler.conf
	v    int    // klog verbosity of both processes

	procs []*volcanoProc

	mu   sync.Mutex
	done map[string]bool // vcjob name → Completed
	fail map[string]string
	jobs map[gangKey]string
}

type volcanoProc struct {
	name   string
	cmd    *exec.Cmd
	log    *os.File
	exited chan struct{}
}

var (
	vcJobGVR   = schema.GroupVersionResource{Group: "batch.volcano.sh", Version: "v1alpha1", Resource: "jobs"}
	vcQueueGVR = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "queues"}
)

// What Volcano's job mutating webhook (pkg/webhooks/admission/jobs/mutate)
// would set on a vcjob that leaves them out.
const (
	vcSchedulerName = "volcano"
	vcQueue         = "default"
	vcMaxRetry      = 3
)

func (*volcanoSystem) name() string       { return "volcano" }
func (*volcanoSystem) upArgs() []string   { return nil }
func (*volcanoSystem) drivesPhases() bool { return false }

func (s *volcanoSystem) start(ctx context.Context, c *cluster, w workload) (map[string]int, error) {
	s.done, s.fail, s.jobs = map[string]bool{}, map[string]string{}, map[gangKey]string{}
	// All CRDs, the jobflow ones included, before the controller-manager
	// starts: it waits for every informer to sync.
	for _, d := range []string{"crd", "crd-jobflow"} {
		dir := filepath.Join(s.home, d)
		if err := c.kubectl("apply", "--server-side", "-f", dir); err != nil {
			return nil, fmt.Errorf("installing Volcano's CRDs (%s): %w", dir, err)
		}
		if err := c.kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", dir); err != nil {
			return nil, fmt.Errorf("Volcano's CRDs (%s) not established: %w", dir, err)
		}
	}
	verbosity := "-v=" + strconv.Itoa(s.v)
	// Flags as the chart's templates (scheduler.yaml, controllers.yaml)
	// and default values set them, but without leader election, on
	// 127.0.0.1, and at verbosity s.v (the chart: 3 and 4).
	sched := []string{
		"--kubeconfig=" + c.kubeconfig,
		"--scheduler-conf=" + filepath.Join(s.home, "volcano-scheduler.conf"),
		"--leader-elect=false",
		"--enable-healthz=true", "--healthz-address=127.0.0.1:" + freePort(),
		"--listen-address=127.0.0.1:" + freePort(),
		"--kube-api-qps=2000", "--kube-api-burst=2000",
		"--schedule-period=1s", "--node-worker-threads=20",
		"--cache-dumper=false", // else it may write into /tmp
		verbosity,
	}
	ctrl := []string{
		"--kubeconfig=" + c.kubeconfig,
		"--leader-elect=false",
		"--enable-healthz=true", "--healthz-address=127.0.0.1:" + freePort(),
		"--listen-address=127.0.0.1:" + freePort(),
		"--kube-api-qps=50", "--kube-api-burst=100",
		"--worker-threads=3", "--worker-threads-for-gc=5", "--worker-threads-for-podgroup=5",
		verbosity,
	}
	for _, p := range []struct {
		name, bin string
		args      []string
	}{{"vc-scheduler", "vc-scheduler", sched}, {"vc-controller-manager", "vc-controller-manager", ctrl}} {
		pr, err := startVolcanoProc(c, p.name, filepath.Join(s.home, "bin", p.bin), p.args)
		if err != nil {
			return nil, err
		}
		s.procs = append(s.procs, pr)
	}
	dyn, err := dynamic.NewForConfig(c.cfg)
	if err != nil {
		return nil, err
	}
	// Ready: the scheduler has created the default queue and the
	// controller-manager's queue controller has opened it.
	deadline := time.Now().Add(90 * time.Second)
	for {
		for _, p := range s.procs {
			select {
			case <-p.exited:
				return nil, fmt.Errorf("%s exited at start (log %s)", p.name, p.log.Name())
			default:
			}
		}
		q, err := dyn.Resource(vcQueueGVR).Get(ctx, vcQueue, metav1.GetOptions{})
		if err == nil {
			if st, _, _ := unstructured.NestedString(q.Object, "status", "state"); st == "Open" {
				break
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("Volcano's queue %q not Open after 90 s (logs in %s)", vcQueue, c.art)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, runNamespace, nil)
	inf := f.ForResource(vcJobGVR).Informer()
	see := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		phase, _, _ := unstructured.NestedString(u.Object, "status", "state", "phase")
		s.mu.Lock()
		switch phase {
		case "Completed":
			s.done[u.GetName()] = true
		case "Failed", "Aborted", "Terminated":
			s.fail[u.GetName()] = phase
		}
		s.mu.Unlock()
	}
	c.watch(ctx, f, inf, see)
	pids := map[string]int{}
	for _, p := range s.procs {
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%s exited at start (log %s)", p.name, p.log.Name())
		default:
		}
		pids[p.name] = p.cmd.Process.Pid
	}
	return pids, nil
}

// checkVolcanoHome says what a Volcano cache dir lacks, if anything.
func checkVolcanoHome(home string) error {
	for _, f := range []string{"bin/vc-scheduler", "bin/vc-controller-manager", "volcano-scheduler.conf", "crd", "crd-jobflow"} {
		if _, err := os.Stat(filepath.Join(home, f)); err != nil {
			return fmt.Errorf("%s is not a Volcano cache dir of test/peers/build-volcano.sh: %w", home, err)
		}
	}
	return nil
}

func startVolcanoProc(c *cluster, name, bin string, args []string) (*volcanoProc, error) {
	log, err := os.Create(c.artifact(name + ".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &volcanoProc{name: name, cmd: cmd, log: log, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// vcJob is phase k of pipeline i as a Volcano Job: one task of gang-size
// replicas, all of them needed (minAvailable), with the pod template every
// system runs, and what the webhook would default.
func vcJob(i int, p pipelineSpec, k int) (*unstructured.Unstructured, error) {
	ph := p.phases[k]
	t := podTemplate(i, k, ph)
	tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&t)
	if err != nil {
		return nil, err
	}
	n := int64(ph.workers)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch.volcano.sh/v1alpha1",
		"kind":       "Job",
		"metadata": map[string]any{
			"name":      objName(p, k),
			"namespace": runNamespace,
			"labels":    map[string]any{labelPipeline: strconv.Itoa(i), labelPhase: strconv.Itoa(k)},
		},
		"spec": map[string]any{
			"schedulerName": vcSchedulerName,
			"queue":         vcQueue,
			"minAvailable":  n,
			"maxRetry":      int64(vcMaxRetry),
			"tasks": []any{map[string]any{
				"name":         "worker",
				"replicas":     n,
				"minAvailable": n,
				"maxRetry":     int64(vcMaxRetry),
				"template":     tmpl,
			}},
		},
	}}
	return u, nil
}

func (s *volcanoSystem) submit(ctx context.Context, c *cluster, i int, p pipelineSpec, k int) error {
	u, err := vcJob(i, p, k)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.jobs[gangKey{i, k}] = u.GetName()
	s.mu.Unlock()
	return c.k8s.Create(ctx, u)
}

func (s *volcanoSystem) phaseEnded(i, k int) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := s.jobs[gangKey{i, k}]
	if ph, ok := s.fail[name]; ok {
		return false, fmt.Errorf("vcjob %s is %s", name, ph)
	}
	return s.done[name], nil
}

// stop ends both processes' groups: SIGTERM, SIGKILL after 15 s.
func (s *volcanoSystem) stop() {
	for _, p := range s.procs {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	}
	for _, p := range s.procs {
		select {
		case <-p.exited:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
		}
		p.log.Close()
	}
	s.procs = nil
}
