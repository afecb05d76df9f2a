package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// system is one way to run the workload's pipelines on a cluster.
type system interface {
	name() string
	// upArgs are extra test/cluster/up.sh flags.
	upArgs() []string
	// start starts the system's own processes against c and returns their
	// process ids by component name (counted in the run's CPU).
	start(ctx context.Context, c *cluster, w workload) (map[string]int, error)
	// submit creates pipeline i's phase k (phasegang: the whole pipeline,
	// at k = 0).
	submit(ctx context.Context, c *cluster, i int, p pipelineSpec, k int) error
	// drivesPhases: the system starts a pipeline's later phases itself.
	drivesPhases() bool
	// phaseEnded says whether phase k of pipeline i has ended, as the
	// user's driver would learn it (nil: when the observer saw every pod
	// end).
	phaseEnded(i, k int) (bool, error)
	stop()
}

const runNamespace = "peers"

func podTemplate(i, k int, ph phaseSpec) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{labelPipeline: strconv.Itoa(i), labelPhase: strconv.Itoa(k)},
			Annotations: map[string]string{"phasegang.dev/sim-run-seconds": strconv.Itoa(ph.seconds)},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "worker", Image: "trainer:peers",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(ph.gpus, resource.DecimalSI), "cpu": resource.MustParse("1")},
					Limits:   corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(ph.gpus, resource.DecimalSI)},
				}}},
		},
	}
}

func objName(p pipelineSpec, k int) string { return p.name + "-" + p.phases[k].name }

// plain: the harness creates each phase's pods when the previous phase's
// pods have all ended; kube-scheduler places each pod on its own.
type plainSystem struct{}

func (plainSystem) name() string       { return "plain" }
func (plainSystem) upArgs() []string   { return nil }
func (plainSystem) drivesPhases() bool { return false }
func (plainSystem) stop()              {}
func (plainSystem) phaseEnded(int, int) (bool, error) {
	return false, errUseObserver
}
func (plainSystem) start(context.Context, *cluster, workload) (map[string]int, error) {
	return nil, nil
}
func (plainSystem) submit(ctx context.Context, c *cluster, i int, p pipelineSpec, k int) error {
	return createPods(ctx, c, i, p, k, nil)
}

func createPods(ctx context.Context, c *cluster, i int, p pipelineSpec, k int, mutate func(*corev1.Pod)) error {
	ph := p.phases[k]
	return parallel(int(ph.workers), 16, func(w int) error {
		t := podTemplate(i, k, ph)
		pod := &corev1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}
		pod.Name = fmt.Sprintf("%s-%d", objName(p, k), w)
		pod.Namespace = runNamespace
		if mutate != nil {
			mutate(pod)
		}
		_, err := c.cs.CoreV1().Pods(runNamespace).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
}

// phasegang: one PhasedTraining per pipeline; its controller (a process,
// as hack/e2e.sh runs it) starts each phase.
type phasegangSystem struct {
	binary string
	cmd    *exec.Cmd
	log    *os.File
}

func (*phasegangSystem) name() string                      { return "phasegang" }
func (*phasegangSystem) upArgs() []string                  { return nil }
func (*phasegangSystem) drivesPhases() bool                { return true }
func (*phasegangSystem) phaseEnded(int, int) (bool, error) { return false, errUseObserver }

func (s *phasegangSystem) start(ctx context.Context, c *cluster, w workload) (map[string]int, error) {
	if err := c.kubectl("apply", "--server-side", "-k", "config/crd"); err != nil {
		return nil, fmt.Errorf("installing the CRD (run from the repository root): %w", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var list v1alpha1.PhasedTrainingList
		err := c.k8s.List(ctx, &list)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the PhasedTraining API is not served: %w", err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	var err error
	s.log, err = os.Create(c.artifact("phasegang-controller.log"))
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(s.binary, "controller", "--metrics-bind-address", "127.0.0.1:"+freePort(), "--health-probe-bind-address", "127.0.0.1:"+freePort())
	s.cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	// Settle: informers synced before the run's CPU is counted.
	time.Sleep(3 * time.Second)
	if s.cmd.ProcessState != nil {
		return nil, fmt.Errorf("the controller exited (log %s)", s.log.Name())
	}
	return map[string]int{"phasegang": s.cmd.Process.Pid}, nil
}

func (s *phasegangSystem) submit(ctx context.Context, c *cluster, i int, p pipelineSpec, k int) error {
	if k != 0 {
		return nil
	}
	return c.k8s.Create(ctx, phasedTrainingOf(i, p))
}

// phasedTrainingOf is pipeline i as a PhasedTraining: its phases one
// after the other, each a rigid gang (gang.min only).
func phasedTrainingOf(i int, p pipelineSpec) *v1alpha1.PhasedTraining {
	pt := &v1alpha1.PhasedTraining{ObjectMeta: metav1.ObjectMeta{Namespace: runNamespace, Name: p.name}}
	for j, ph := range p.phases {
		phase := v1alpha1.Phase{Name: ph.name, Gang: v1alpha1.Gang{Min: ph.workers}, Template: podTemplate(i, j, ph)}
		if j > 0 {
			phase.DependsOn = []string{p.phases[j-1].name}
		}
		pt.Spec.Phases = append(pt.Spec.Phases, phase)
	}
	return pt
}

func (s *phasegangSystem) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	stopProcess(s.cmd)
	s.log.Close()
}

// stopProcess sends SIGTERM, then SIGKILL after 15 s.
func stopProcess(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// kubeGangSystem is Kubernetes' own gang scheduling (KEP-4671, the
// GenericWorkload gate: up.sh --workload-api): the harness creates each
// phase, when the previous phase's pods have ended, as a PodGroup with
// schedulingPolicy.gang.minCount = gang size and its pods naming it in
// spec.schedulingGroup; kube-scheduler places the group all or nothing.
type kubeGangSystem struct{}

func (kubeGangSystem) name() string       { return "kube-gang" }
func (kubeGangSystem) upArgs() []string   { return []string{"--workload-api"} }
func (kubeGangSystem) drivesPhases() bool { return false }
func (kubeGangSystem) stop()              {}
func (kubeGangSystem) phaseEnded(int, int) (bool, error) {
	return false, errUseObserver
}
func (kubeGangSystem) start(context.Context, *cluster, workload) (map[string]int, error) {
	return nil, nil
}

func (kubeGangSystem) submit(ctx context.Context, c *cluster, i int, p pipelineSpec, k int) error {
	name := objName(p, k)
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: runNamespace, Name: name},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: p.phases[k].workers}}},
	}
	if _, err := c.cs.SchedulingV1beta1().PodGroups(runNamespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		return err
	}
	return createPods(ctx, c, i, p, k, func(pod *corev1.Pod) {
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &name}
	})
}
