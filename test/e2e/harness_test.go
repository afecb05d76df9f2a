//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/controllers"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// The suite needs a running cluster: `make e2e` starts one with
// test/cluster/up.sh and runs this package with its KUBECONFIG.

var (
	k8s        client.Client
	repoRoot   string
	binary     string
	controller *controllerProcess
	artifacts  string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("KUBECONFIG") == "" {
		fmt.Fprintln(os.Stderr, "e2e: KUBECONFIG is not set; run `make e2e` (it starts test/cluster/up.sh)")
		return 1
	}
	wd, _ := os.Getwd()
	repoRoot = filepath.Clean(filepath.Join(wd, "..", ".."))
	artifacts = os.Getenv("E2E_ARTIFACTS")
	if artifacts == "" {
		artifacts, _ = os.MkdirTemp("", "phasegang-e2e-")
	}
	cfg, err := config.GetConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	cfg.QPS, cfg.Burst = 200, 400
	k8s, err = client.New(cfg, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	binary = filepath.Join(artifacts, "phasegang")
	build := exec.Command("go", "build", "-o", binary, "./cmd/phasegang")
	build.Dir, build.Stdout, build.Stderr = repoRoot, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building phasegang:", err)
		return 1
	}
	// The documented install command, verbatim (TestInstallDocs checks
	// that the docs' install blocks say exactly this).
	apply := exec.Command("bash", "-c", installCRD)
	apply.Dir, apply.Stdout, apply.Stderr = repoRoot, os.Stderr, os.Stderr
	if err := apply.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: installing the CRD:", err)
		return 1
	}
	// The CRD serves once Established; a fresh one has no conditions yet,
	// so poll with a list instead of `kubectl wait`.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var list v1alpha1.PhasedTrainingList
		err := k8s.List(context.Background(), &list)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "e2e: the PhasedTraining API is not served:", err)
			return 1
		}
		time.Sleep(300 * time.Millisecond)
	}
	controller = startController()
	code := m.Run()
	controller.stop()
	fmt.Fprintf(os.Stderr, "e2e: controller logs in %s\n", artifacts)
	return code
}

// controllerProcess is `phasegang controller` as a separate process, so a
// test can SIGKILL it like a crashing pod.
type controllerProcess struct {
	cmd *exec.Cmd
	log *os.File
	// probes is the address of its /healthz and /readyz; metrics of its
	// /metrics.
	probes, metrics string
}

var starts int

func startController() *controllerProcess {
	starts++
	logPath := filepath.Join(artifacts, fmt.Sprintf("controller-%d.log", starts))
	f, err := os.Create(logPath)
	if err != nil {
		panic(err)
	}
	probes, metrics := "127.0.0.1:"+freePort(), "127.0.0.1:"+freePort()
	args := append([]string{"controller", "--metrics-bind-address", metrics,
		"--health-probe-bind-address", probes, "--resync", "1s", "--starvation-bound", "1m",
		"--topology-levels", strings.Join(topologyLevels, ",")}, extraControllerArgs...)
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), extraControllerEnv...)
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	return &controllerProcess{cmd: cmd, log: f, probes: probes, metrics: metrics}
}

// topologyLevels are the controller's --topology-levels (topology_test.go).
// They are harmless to the other tests: only phases with a topology are
// placed by them, and their nodes carry none of the labels but the host's.
var topologyLevels = []string{"example.com/block", "example.com/rack", "kubernetes.io/hostname"}

// extraControllerEnv is added to the controller's environment (tracing),
// extraControllerArgs to its flags (provisioning).
var extraControllerEnv, extraControllerArgs []string

func (c *controllerProcess) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	_ = c.cmd.Wait()
	c.log.Close()
}

func (c *controllerProcess) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
	c.log.Close()
}

// freePort returns a loopback port nothing listens on, drawn from below the
// kernel's ephemeral range (as test/cluster/up.sh does): a port the kernel
// handed out for ":0" can be taken by an outgoing connection before the
// process we start binds it. It never returns a port a docs block binds
// verbatim (docPorts): TestJaegerDocs runs beside the suite's own processes.
func freePort() string {
	low := ephemeralLow()
	for range 200 {
		port := 10000 + rand.IntN(low-10000)
		if slices.Contains(docPorts(), port) {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		l.Close()
		return strconv.Itoa(port)
	}
	panic("no free loopback port below the ephemeral range")
}

// docPorts are the fixed loopback ports of docs/tracing.md's Jaeger, which
// TestJaegerDocs binds as written: every endpoint of test/jaeger/config.yaml
// (OTLP gRPC and HTTP, the query UI/API and its gRPC, the health check).
// test/cluster/up.sh reads the same file to keep them out of its ports.
var docPorts = sync.OnceValue(func() []int {
	b, err := os.ReadFile(filepath.Join(repoRoot, "test", "jaeger", "config.yaml"))
	if err != nil {
		panic(err)
	}
	var ports []int
	for _, m := range regexp.MustCompile(`endpoint: 127\.0\.0\.1:([0-9]+)`).FindAllSubmatch(b, -1) {
		p, _ := strconv.Atoi(string(m[1]))
		ports = append(ports, p)
	}
	return ports
})

// ephemeralLow is the first port of the kernel's ephemeral range (32768 when
// it cannot be read or leaves no room below it: Linux's default).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= 12000 {
		return 32768
	}
	return low
}

// namespace creates a namespace for one test, deleted after it.
func namespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.TrimRight(name, "-") + "-" + strconv.FormatInt(time.Now().UnixNano()%100000, 10)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	return name
}

// nodes creates n fake GPU nodes labelled pool=<pool> (kwok makes them
// Ready), deleted after the test. Each test gets its own pool, so tests do
// not share capacity.
func nodes(t *testing.T, pool string, n, gpus int) []string {
	t.Helper()
	return labelledNodes(t, pool, pool, nil, n, gpus)
}

// labelledNodes is nodes with more labels (topology: block, rack), named
// <prefix>-0 … <prefix>-(n-1), so that one pool can hold several racks.
func labelledNodes(t *testing.T, pool, prefix string, labels map[string]string, n, gpus int) []string {
	t.Helper()
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		l := map[string]string{"kubernetes.io/hostname": name, "type": "kwok", "pool": pool}
		for k, v := range labels {
			l[k] = v
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels:      l,
			},
			Status: corev1.NodeStatus{
				Allocatable: gpuResources(gpus),
				Capacity:    gpuResources(gpus),
			},
		}
		if err := k8s.Create(context.Background(), node); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		names = append(names, name)
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}) })
	}
	eventually(t, 60*time.Second, "nodes of pool "+pool+" Ready", func() (bool, error) {
		for _, name := range names {
			var n corev1.Node
			if err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, &n); err != nil {
				return false, nil
			}
			ready := false
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready = true
				}
			}
			if !ready || n.Status.Allocatable.Name("nvidia.com/gpu", resource.DecimalSI).Value() != int64(gpus) {
				return false, nil
			}
		}
		return true, nil
	})
	return names
}

func gpuResources(gpus int) corev1.ResourceList {
	return corev1.ResourceList{
		"cpu": resource.MustParse("64"), "memory": resource.MustParse("512Gi"), "pods": resource.MustParse("110"),
		"nvidia.com/gpu": *resource.NewQuantity(int64(gpus), resource.DecimalSI),
	}
}

// eventually polls cond until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out after %v waiting for %s (last error: %v)", timeout, what, last)
	}
}

// eventuallyEvent waits for an Event in namespace ns with the reason whose
// message contains substr, and returns its message.
func eventuallyEvent(t *testing.T, ns, reason, substr string) string {
	t.Helper()
	var msg string
	eventually(t, 20*time.Second, "a "+reason+" Event", func() (bool, error) {
		var evs corev1.EventList
		if err := k8s.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == reason && strings.Contains(e.Message, substr) {
				msg = e.Message
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events, none %s with %q", len(evs.Items), reason, substr)
	})
	return msg
}

// worker is a one-container worker template requesting gpus GPUs on pool,
// "running" for seconds (kwok ends it), reporting the termination message.
func worker(pool string, gpus, seconds int, message string) corev1.PodTemplateSpec {
	b := wrappers.MakeTemplate("trainer:e2e").GPUs(int64(gpus)).
		NodeSelector("pool", pool).Tolerate("kwok.x-k8s.io/node").
		Annotation("phasegang.dev/sim-run-seconds", strconv.Itoa(seconds))
	if message != "" {
		b.Annotation("phasegang.dev/sim-termination-message", message)
	}
	return b.Obj()
}

// create creates pt (built with wrappers.NewPT) and returns it.
// priorityClass creates a PriorityClass of value, deleted when the test
// ends, and returns its name.
func priorityClass(t *testing.T, name string, value int32) string {
	t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	if err := k8s.Create(context.Background(), pc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pc) })
	return name
}

func create(t *testing.T, pt *v1alpha1.PhasedTraining) *v1alpha1.PhasedTraining {
	t.Helper()
	if err := k8s.Create(context.Background(), pt); err != nil {
		t.Fatalf("creating %s: %v", pt.Name, err)
	}
	return pt
}

func get(t *testing.T, pt *v1alpha1.PhasedTraining) *v1alpha1.PhasedTraining {
	t.Helper()
	out := &v1alpha1.PhasedTraining{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pt), out); err != nil {
		t.Fatal(err)
	}
	return out
}

func waitState(t *testing.T, pt *v1alpha1.PhasedTraining, want v1alpha1.PipelineState, timeout time.Duration) *v1alpha1.PhasedTraining {
	t.Helper()
	var last *v1alpha1.PhasedTraining
	eventually(t, timeout, fmt.Sprintf("%s to be %s", pt.Name, want), func() (bool, error) {
		last = get(t, pt)
		if last.Status.State == v1alpha1.PipelineFailed && want != v1alpha1.PipelineFailed {
			return false, fmt.Errorf("failed: %s", describe(last))
		}
		return last.Status.State == want, fmt.Errorf("state %s: %s", last.Status.State, describe(last))
	})
	return last
}

// failsNeverRunning waits until pt's attempt has failed after its start
// retries, failing the test at once if pt ever reads Running meanwhile
// (why: what keeps its gang from starting).
func failsNeverRunning(t *testing.T, pt *v1alpha1.PhasedTraining, timeout time.Duration, why string) *v1alpha1.PhasedTraining {
	t.Helper()
	var failed *v1alpha1.PhasedTraining
	eventually(t, timeout, "the attempt failed after its start retries", func() (bool, error) {
		cur := get(t, pt)
		if cur.Status.State == v1alpha1.PipelineRunning {
			t.Fatalf("Running while %s: %s", why, describe(cur))
		}
		failed = cur
		return cur.Status.State == v1alpha1.PipelineFailed, fmt.Errorf("%s", describe(cur))
	})
	return failed
}

// describe summarizes a status for failure messages.
func describe(pt *v1alpha1.PhasedTraining) string {
	var b bytes.Buffer
	for _, c := range pt.Status.Conditions {
		if c.Status == metav1.ConditionTrue {
			fmt.Fprintf(&b, "[%s %s: %s] ", c.Type, c.Reason, c.Message)
		}
	}
	for _, p := range pt.Status.Phases {
		fmt.Fprintf(&b, "{%s#%d.%d %s granted=%d %s %s} ", p.Name, p.Iteration, p.Attempt, p.State, p.Workers.Granted, p.WaitingFor, p.Message)
	}
	return b.String()
}

func pods(t *testing.T, ns string, labels map[string]string) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}
