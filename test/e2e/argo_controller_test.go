//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/yaml"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// argoEnv names the directory holding Argo Workflows' workflow-controller
// and argoexec, with Argo's CRDs in <dir>/../crds. Unset, the test runs
// test/argo/build.sh, which returns at once when the binaries are cached
// and otherwise waits for (or runs) the build.
const argoEnv = "PHASEGANG_ARGO"

// argoBinDir returns $PHASEGANG_ARGO or the bin dir test/argo/build.sh
// prints on its last line.
func argoBinDir(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(argoEnv); bin != "" {
		return bin
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(repoRoot, "test", "argo", "build.sh"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("test/argo/build.sh: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	return lines[len(lines)-1]
}

var workflowGVK = wfv1.SchemeGroupVersion.WithKind("Workflow")

// TestArgoWorkflowController runs the shipped Argo examples with Argo
// Workflows' own workflow-controller (v3.7.18, a host process) and
// argoexec: the controller creates each step's pod; kwok makes it Running;
// argoKubelet runs the pod's main container command (`argoexec resource
// ...`) on the host, authenticated as the pod's service account, and then
// ends the pod as a kubelet would. phasegang's controller schedules the
// PhasedTrainings the steps create.
func TestArgoWorkflowController(t *testing.T) {
	// Last, beside nothing: no other e2e test is parallel, so this one
	// resumes once every other test has finished, which gives the Argo
	// build that hack/e2e.sh started in the background (~10 min cold) the
	// whole suite's run time to finish.
	t.Parallel()
	bin := argoBinDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns := namespace(t)
	installArgoCRDs(t, filepath.Join(bin, "..", "crds"))
	// The examples are written for namespace ml: "for another namespace,
	// change every `namespace: ml`".
	example := func(name string) string {
		b, err := os.ReadFile(filepath.Join(repoRoot, "examples", "argo", name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.ReplaceAll(string(b), "namespace: ml", "namespace: "+ns)
	}
	argoApply(t, example("rbac.yaml"))
	argoApply(t, example("train-validate-test.workflowtemplate.yaml"))
	startArgoController(t, bin, ns)
	startArgoKubelet(t, ctx, filepath.Join(bin, "argoexec"), ns)

	t.Run("WorkflowTemplate", func(t *testing.T) {
		// argo submit -n ns --from workflowtemplate/resnet50
		//   --serviceaccount phasegang-argo -p traceparent=...
		traceparent := "00-" + randomHex(t, 16) + "-" + randomHex(t, 8) + "-01"
		wf := &wfv1.Workflow{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "resnet50-", Namespace: ns,
				Labels: map[string]string{"workflows.argoproj.io/workflow-template": "resnet50"}},
			Spec: wfv1.WorkflowSpec{
				WorkflowTemplateRef: &wfv1.WorkflowTemplateRef{Name: "resnet50"},
				ServiceAccountName:  "phasegang-argo",
				Arguments:           wfv1.Arguments{Parameters: []wfv1.Parameter{{Name: "traceparent", Value: wfv1.AnyStringPtr(traceparent)}}},
			},
		}
		wf = submitWorkflow(t, wf)
		wf = waitWorkflow(t, wf, 4*time.Minute)
		if wf.Status.Phase != wfv1.WorkflowSucceeded {
			t.Fatalf("workflow %s ended %s: %s\n%s", wf.Name, wf.Status.Phase, wf.Status.Message, dumpNodes(wf))
		}
		out := nodeOutputs(t, wf, wf.Name)
		t.Logf("workflow %s Succeeded, outputs %v", wf.Name, out)
		pt := argoPT(t, ns, out["name"])
		checkArgoOwned(t, pt, wf)
		if pt.Status.State != v1alpha1.PipelineSucceeded || out["state"] != string(pt.Status.State) {
			t.Errorf("output state %q, the PhasedTraining is %s: %s", out["state"], pt.Status.State, describe(pt))
		}
		if want := latestOutput(pt, "validate", "accuracy"); out["validate-accuracy"] != want || want != "0.87" {
			t.Errorf("output validate-accuracy %q, the PhasedTraining's validate phase reported %q (want 0.87)", out["validate-accuracy"], want)
		}
		if got := pt.Annotations["phasegang.dev/traceparent"]; got != traceparent {
			t.Errorf("phasegang.dev/traceparent = %q, want the workflow parameter %q", got, traceparent)
		}
		for _, p := range []string{"train", "validate", "test"} {
			if s := pt.Status.Phase(p, 0); s == nil || s.State != v1alpha1.PhaseSucceeded {
				t.Errorf("phase %s did not succeed: %s", p, describe(pt))
			}
		}
		checkExitHandler(t, wf)
	})

	t.Run("DAG", func(t *testing.T) {
		// examples/argo/baseline-then-finetune.workflow.yaml as shipped,
		// plus what kwok needs to "run" the fine-tuning workers (their
		// run time and the validate phase's termination message), and
		// the checkpoint volume its workers mount.
		var wf wfv1.Workflow
		if err := yaml.UnmarshalStrict([]byte(example("baseline-then-finetune.workflow.yaml")), &wf); err != nil {
			t.Fatal(err)
		}
		simulateFinetune(t, &wf, "0.91")
		checkpointVolume(t, ns, "resnet50-checkpoints")
		got := waitWorkflow(t, submitWorkflow(t, &wf), 6*time.Minute)
		if got.Status.Phase != wfv1.WorkflowSucceeded {
			t.Fatalf("workflow %s ended %s: %s\n%s", got.Name, got.Status.Phase, got.Status.Message, dumpNodes(got))
		}
		out := nodeOutputs(t, got, got.Name)
		t.Logf("workflow %s Succeeded, outputs %v", got.Name, out)
		baseline := argoPT(t, ns, nodeOutputs(t, got, got.Name+".baseline")["name"])
		finetune := argoPT(t, ns, nodeOutputs(t, got, got.Name+".finetune")["name"])
		for _, pt := range []*v1alpha1.PhasedTraining{baseline, finetune} {
			checkArgoOwned(t, pt, got)
			if pt.Status.State != v1alpha1.PipelineSucceeded {
				t.Errorf("%s: %s: %s", pt.Name, pt.Status.State, describe(pt))
			}
		}
		if b := latestOutput(baseline, "validate", "accuracy"); out["baseline-accuracy"] != b || b != "0.87" {
			t.Errorf("output baseline-accuracy %q, baseline's validate reported %q (want 0.87)", out["baseline-accuracy"], b)
		}
		if f := latestOutput(finetune, "validate", "accuracy"); out["finetune-accuracy"] != f || f != "0.91" {
			t.Errorf("output finetune-accuracy %q, finetune's validate reported %q (want 0.91)", out["finetune-accuracy"], f)
		}
		// Argo substituted the baseline's accuracy into the spec as text.
		var env string
		for _, e := range finetune.Spec.Phases[0].Template.Spec.Containers[0].Env {
			if e.Name == "BASELINE_ACCURACY" {
				env = e.Value
			}
		}
		when := finetune.Spec.Phases[2].When
		if env != "0.87" || when != "float(phases.validate.outputs.accuracy) > 0.87" {
			t.Errorf("finetune spec: BASELINE_ACCURACY=%q, test phase when=%q; want 0.87 substituted", env, when)
		}
		if s := finetune.Status.Phase("test", 0); s == nil || s.State != v1alpha1.PhaseSucceeded {
			t.Errorf("finetune's test phase (0.91 > 0.87) did not succeed: %s", describe(finetune))
		}
		checkExitHandler(t, got)
	})

	t.Run("Infeasible", func(t *testing.T) {
		// A pipeline whose worker needs 16 GPUs on 8-GPU nodes, through
		// `phasegang argo template`: the step fails on Infeasible, the
		// workflow fails, and the exit handler deletes the pipeline.
		huge := wrappers.NewPT(ns, "huge").Phase("train", 1).PodTemplate(corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "worker", Image: "trainer:e2e", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("16")},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("16")},
			}}},
		}}).Obj()
		huge.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "PhasedTraining"}
		spec, err := yaml.Marshal(huge)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "huge.yaml")
		if err := os.WriteFile(file, spec, 0o644); err != nil {
			t.Fatal(err)
		}
		gen := exec.Command(binary, "argo", "template", "-f", file, "--service-account", "phasegang-argo")
		var stderr bytes.Buffer
		gen.Stderr = &stderr
		wft, err := gen.Output()
		if err != nil {
			t.Fatalf("phasegang argo template: %v\n%s", err, stderr.String())
		}
		argoApply(t, string(wft))
		wf := submitWorkflow(t, &wfv1.Workflow{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "huge-", Namespace: ns,
				Labels: map[string]string{"workflows.argoproj.io/workflow-template": "huge"}},
			Spec: wfv1.WorkflowSpec{WorkflowTemplateRef: &wfv1.WorkflowTemplateRef{Name: "huge"}},
		})
		// The step's PhasedTraining, while it exists.
		var created string
		eventually(t, 2*time.Minute, "the step's PhasedTraining Infeasible", func() (bool, error) {
			var list v1alpha1.PhasedTrainingList
			if err := k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"phasegang.dev/argo-workflow": wf.Name}); err != nil {
				return false, err
			}
			if len(list.Items) == 1 {
				created = list.Items[0].Name
				return list.Items[0].Status.State == v1alpha1.PipelineInfeasible, fmt.Errorf("state %s", list.Items[0].Status.State)
			}
			return created != "", fmt.Errorf("%d PhasedTrainings", len(list.Items))
		})
		wf = waitWorkflow(t, wf, 3*time.Minute)
		if wf.Status.Phase != wfv1.WorkflowFailed {
			t.Fatalf("workflow %s ended %s, want Failed\n%s", wf.Name, wf.Status.Phase, dumpNodes(wf))
		}
		step := node(t, wf, wf.Name+"[0].run")
		t.Logf("workflow %s Failed; step run: %s %q", wf.Name, step.Phase, step.Message)
		if step.Phase != wfv1.NodeFailed {
			t.Errorf("step run ended %s, want Failed", step.Phase)
		}
		checkExitHandler(t, wf)
		eventually(t, 30*time.Second, "the exit handler to have deleted "+created, func() (bool, error) {
			var pt v1alpha1.PhasedTraining
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: created}, &pt)
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, fmt.Errorf("still there: %v %s", err, pt.Status.State)
		})
	})
}

// installArgoCRDs applies Argo's CRDs (server-side, as Argo's install
// does) and waits until Workflows are served.
func installArgoCRDs(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("kubectl", "apply", "--server-side", "--force-conflicts", "-f", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("applying Argo's CRDs from %s: %v\n%s", dir, err, out)
	}
	eventually(t, 60*time.Second, "Argo's Workflow API served", func() (bool, error) {
		var l unstructured.UnstructuredList
		l.SetGroupVersionKind(wfv1.SchemeGroupVersion.WithKind("WorkflowList"))
		err := k8s.List(context.Background(), &l)
		return err == nil, err
	})
}

func argoApply(t *testing.T, manifest string) {
	t.Helper()
	cmd := exec.Command("kubectl", "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

// startArgoController runs workflow-controller on the host, managing
// namespace ns only, with the suite's (admin) kubeconfig, as Argo's
// namespace-scoped install does. Metrics servers are off (they would bind
// fixed ports); leader election is off (one instance).
func startArgoController(t *testing.T, bin, ns string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "workflow-controller-configmap", Namespace: ns},
		Data: map[string]string{"metricsConfig": "enabled: false\n", "telemetryConfig": "enabled: false\n"}}
	if err := k8s.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(artifacts, "argo-workflow-controller.log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "workflow-controller"), "--namespaced", "--managed-namespace", ns,
		"--namespace", ns, "--configmap", cm.Name, "--executor-image", "argoexec:e2e", "--loglevel", "info")
	cmd.Stdout, cmd.Stderr = f, f
	// workflow-controller reads ARGO_* variables as flags: pass none.
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "ARGO_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, "LEADER_ELECTION_DISABLE=true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("workflow-controller log: %s", logPath)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		f.Close()
	})
}

// startArgoKubelet plays the kubelet for the workflow pods of namespace ns:
// kwok makes a scheduled pod Running (its init container "completed");
// then this runs the main container's command on the host, as the
// container would: Argo's emissary wrapper (/var/run/argo/argoexec
// emissary --) is dropped and the wrapped `argoexec resource ACTION` runs
// with the container's environment (fieldRefs resolved from the pod, plus
// ARGO_TEMPLATE, which the init container would have written to
// /var/run/argo/template) and a kubeconfig holding a token of the pod's
// service account (TokenRequest), so RBAC decides as in a real pod. When it
// exits, the pod ends Succeeded or Failed with the main container
// terminated (exit code; message from /dev/termination-log, where argoexec
// writes it), as the kubelet reports it.
//
// argoexec writes the manifest to the fixed path /tmp/manifest.yaml (and its
// error to /dev/termination-log), which a pod has to itself: runs are
// serialized, so a second concurrent step would wait (the tests run one
// step at a time anyway).
func startArgoKubelet(t *testing.T, ctx context.Context, argoexec, ns string) {
	t.Helper()
	dir := t.TempDir()
	var (
		mu      sync.Mutex // one argoexec at a time
		started = map[string]bool{}
		wg      sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			var list corev1.PodList
			if err := k8s.List(ctx, &list, client.InNamespace(ns), client.HasLabels{"workflows.argoproj.io/workflow"}); err == nil {
				for i := range list.Items {
					pod := &list.Items[i]
					if started[pod.Name] || pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
						continue
					}
					started[pod.Name] = true
					wg.Add(1)
					go func() {
						defer wg.Done()
						mu.Lock()
						defer mu.Unlock()
						if err := runArgoPod(ctx, argoexec, dir, pod); err != nil && ctx.Err() == nil {
							t.Errorf("running pod %s: %v", pod.Name, err)
						}
					}()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
}

func runArgoPod(ctx context.Context, argoexec, dir string, pod *corev1.Pod) error {
	var main *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == "main" {
			main = &pod.Spec.Containers[i]
		}
	}
	if main == nil || len(pod.Spec.Containers) != 1 {
		return fmt.Errorf("want one container, main (a resource step), got %d", len(pod.Spec.Containers))
	}
	// [/var/run/argo/argoexec emissary <log flags> -- argoexec resource ACTION <log flags>]
	sep := slices.Index(main.Command, "--")
	if sep < 0 || len(main.Command) < sep+3 || main.Command[sep+1] != "argoexec" || main.Command[sep+2] != "resource" {
		return fmt.Errorf("not an emissary-wrapped `argoexec resource` command: %q", main.Command)
	}
	args := append(append([]string(nil), main.Command[sep+2:]...), main.Args...)

	podDir := filepath.Join(dir, pod.Name)
	if err := os.MkdirAll(podDir, 0o700); err != nil {
		return err
	}
	kubeconfig, err := serviceAccountKubeconfig(ctx, podDir, pod)
	if err != nil {
		return err
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + podDir, "KUBECONFIG=" + kubeconfig}
	have := map[string]bool{}
	for _, e := range main.Env {
		v, err := envValue(pod, e)
		if err != nil {
			return err
		}
		env = append(env, e.Name+"="+v)
		have[e.Name] = true
	}
	if !have["ARGO_TEMPLATE"] {
		for _, c := range pod.Spec.InitContainers {
			for _, e := range c.Env {
				if e.Name == "ARGO_TEMPLATE" {
					env = append(env, e.Name+"="+e.Value)
				}
			}
		}
	}
	logPath := filepath.Join(artifacts, "argoexec-"+pod.Name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	const termLog = "/dev/termination-log"
	_ = os.Remove(termLog)
	_ = os.Remove("/tmp/manifest.yaml")
	cmd := exec.CommandContext(ctx, argoexec, args...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, podDir, f, f
	runErr := cmd.Run()
	code := 0
	if runErr != nil {
		ee, ok := runErr.(*exec.ExitError)
		if !ok || ctx.Err() != nil {
			return runErr
		}
		code = ee.ExitCode()
	}
	msg, _ := os.ReadFile(termLog)
	_ = os.Remove(termLog)
	_ = os.Remove("/tmp/manifest.yaml")
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur corev1.Pod
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), &cur); err != nil {
			return err
		}
		endPod(&cur, code, string(msg))
		return k8s.Status().Update(ctx, &cur)
	})
}

// endPod sets what a kubelet reports when a pod's only container exited.
func endPod(pod *corev1.Pod, code int, msg string) {
	now := metav1.Now()
	phase, reason, ctrReason := corev1.PodSucceeded, "PodCompleted", "Completed"
	if code != 0 {
		phase, reason, ctrReason = corev1.PodFailed, "PodFailed", "Error"
	}
	pod.Status.Phase = phase
	for i, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			pod.Status.Conditions[i].Status, pod.Status.Conditions[i].Reason, pod.Status.Conditions[i].LastTransitionTime = corev1.ConditionFalse, reason, now
		}
	}
	for i, cs := range pod.Status.ContainerStatuses {
		started := now
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		pod.Status.ContainerStatuses[i].Ready = false
		pod.Status.ContainerStatuses[i].Started = new(false)
		pod.Status.ContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: int32(code), Reason: ctrReason, Message: msg, StartedAt: started, FinishedAt: now,
		}}
	}
}

// envValue resolves a container env var as the kubelet does (the fieldRefs
// Argo uses).
func envValue(pod *corev1.Pod, e corev1.EnvVar) (string, error) {
	if e.ValueFrom == nil {
		return e.Value, nil
	}
	if f := e.ValueFrom.FieldRef; f != nil {
		switch f.FieldPath {
		case "metadata.name":
			return pod.Name, nil
		case "metadata.namespace":
			return pod.Namespace, nil
		case "metadata.uid":
			return string(pod.UID), nil
		case "spec.nodeName":
			return pod.Spec.NodeName, nil
		case "spec.serviceAccountName":
			return pod.Spec.ServiceAccountName, nil
		case "status.podIP":
			return pod.Status.PodIP, nil
		case "status.hostIP":
			return pod.Status.HostIP, nil
		}
		return "", fmt.Errorf("env %s: fieldRef %s not supported", e.Name, f.FieldPath)
	}
	return "", fmt.Errorf("env %s: only value and fieldRef are supported: %+v", e.Name, e.ValueFrom)
}

// serviceAccountKubeconfig writes a kubeconfig for the suite's API server
// with a token of the pod's service account and the pod's namespace as its
// context's (in-cluster config has both).
func serviceAccountKubeconfig(ctx context.Context, dir string, pod *corev1.Pod) (string, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}
	if err := k8s.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: pod.Namespace}}, tr); err != nil {
		return "", fmt.Errorf("a token for service account %s/%s: %w", pod.Namespace, sa, err)
	}
	cfg, err := config.GetConfig()
	if err != nil {
		return "", err
	}
	cluster := &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthority: cfg.CAFile, CertificateAuthorityData: cfg.CAData,
		InsecureSkipTLSVerify: cfg.Insecure}
	kc := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"e2e": cluster},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{sa: {Token: tr.Status.Token}},
		Contexts:       map[string]*clientcmdapi.Context{"pod": {Cluster: "e2e", AuthInfo: sa, Namespace: pod.Namespace}},
		CurrentContext: "pod",
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, clientcmd.WriteToFile(kc, path)
}

func submitWorkflow(t *testing.T, wf *wfv1.Workflow) *wfv1.Workflow {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(wf)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(workflowGVK)
	if err := k8s.Create(context.Background(), u); err != nil {
		t.Fatalf("creating the Workflow: %v", err)
	}
	t.Logf("submitted workflow %s/%s", u.GetNamespace(), u.GetName())
	return toWorkflow(t, u)
}

func toWorkflow(t *testing.T, u *unstructured.Unstructured) *wfv1.Workflow {
	t.Helper()
	var wf wfv1.Workflow
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &wf); err != nil {
		t.Fatal(err)
	}
	return &wf
}

func getWorkflow(t *testing.T, ns, name string) (*wfv1.Workflow, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(workflowGVK)
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		return nil, err
	}
	return toWorkflow(t, u), nil
}

// waitWorkflow waits until the workflow (its exit handler included) ended.
func waitWorkflow(t *testing.T, wf *wfv1.Workflow, timeout time.Duration) *wfv1.Workflow {
	t.Helper()
	var last *wfv1.Workflow
	deadline := time.Now().Add(timeout)
	for {
		cur, err := getWorkflow(t, wf.Namespace, wf.Name)
		if err == nil {
			last = cur
			if cur.Status.Phase.Completed() {
				return cur
			}
		}
		if time.Now().After(deadline) {
			msg := "never read"
			if last != nil {
				msg = fmt.Sprintf("phase %q %s\n%s", last.Status.Phase, last.Status.Message, dumpNodes(last))
			}
			t.Fatalf("timed out after %v waiting for workflow %s to end: %s (last error %v)", timeout, wf.Name, msg, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func dumpNodes(wf *wfv1.Workflow) string {
	var b strings.Builder
	for _, n := range wf.Status.Nodes {
		fmt.Fprintf(&b, "  %s (%s %s): %s %s\n", n.Name, n.Type, n.TemplateName, n.Phase, n.Message)
	}
	return b.String()
}

func node(t *testing.T, wf *wfv1.Workflow, name string) wfv1.NodeStatus {
	t.Helper()
	for _, n := range wf.Status.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("workflow %s has no node %s:\n%s", wf.Name, name, dumpNodes(wf))
	return wfv1.NodeStatus{}
}

// nodeOutputs is the named node's output parameters.
func nodeOutputs(t *testing.T, wf *wfv1.Workflow, name string) map[string]string {
	t.Helper()
	n := node(t, wf, name)
	out := map[string]string{}
	if n.Outputs != nil {
		for _, p := range n.Outputs.Parameters {
			if p.Value != nil {
				out[p.Name] = p.Value.String()
			}
		}
	}
	return out
}

// checkExitHandler: the workflow's onExit node (stop-unfinished) ran and
// succeeded.
func checkExitHandler(t *testing.T, wf *wfv1.Workflow) {
	t.Helper()
	n := node(t, wf, wf.Name+".onExit")
	if n.TemplateName != "stop-unfinished" || n.Phase != wfv1.NodeSucceeded {
		t.Errorf("exit handler: template %q %s %s", n.TemplateName, n.Phase, n.Message)
	}
}

func argoPT(t *testing.T, ns, name string) *v1alpha1.PhasedTraining {
	t.Helper()
	if name == "" {
		t.Fatal("no PhasedTraining name in the step's outputs")
	}
	return get(t, &v1alpha1.PhasedTraining{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
}

// checkArgoOwned: the step created the PhasedTraining owned by, and
// labelled with, the workflow.
func checkArgoOwned(t *testing.T, pt *v1alpha1.PhasedTraining, wf *wfv1.Workflow) {
	t.Helper()
	if pt.Labels["phasegang.dev/argo-workflow"] != wf.Name {
		t.Errorf("%s: label phasegang.dev/argo-workflow = %q, want %s", pt.Name, pt.Labels["phasegang.dev/argo-workflow"], wf.Name)
	}
	if c := metav1.GetControllerOf(pt); c == nil || c.UID != wf.UID || c.Kind != "Workflow" {
		t.Errorf("%s: controller owner %+v, want Workflow %s (%s)", pt.Name, c, wf.Name, wf.UID)
	}
}

// latestOutput is what the generated jqFilter reads: the output key of
// the phase's latest succeeded attempt.
func latestOutput(pt *v1alpha1.PhasedTraining, phase, key string) string {
	var best *v1alpha1.PhaseStatus
	for i := range pt.Status.Phases {
		p := &pt.Status.Phases[i]
		if p.Name != phase || p.State != v1alpha1.PhaseSucceeded {
			continue
		}
		if _, ok := p.Outputs[key]; !ok {
			continue
		}
		if best == nil || p.Iteration > best.Iteration || (p.Iteration == best.Iteration && p.Attempt > best.Attempt) {
			best = p
		}
	}
	if best == nil {
		return ""
	}
	return best.Outputs[key]
}

// simulateFinetune adds kwok's run-time annotations to the finetune
// template's PhasedTraining (every phase runs 2 s, validate reports
// accuracy), leaving the rest of the manifest, {{...}} included, as is.
func simulateFinetune(t *testing.T, wf *wfv1.Workflow, accuracy string) {
	t.Helper()
	for i := range wf.Spec.Templates {
		tmpl := &wf.Spec.Templates[i]
		if tmpl.Name != "finetune" {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(tmpl.Resource.Manifest), &m); err != nil {
			t.Fatal(err)
		}
		for _, p := range m["spec"].(map[string]any)["phases"].([]any) {
			phase := p.(map[string]any)
			tpl := phase["template"].(map[string]any)
			ann := map[string]any{"phasegang.dev/sim-run-seconds": "2"}
			if phase["name"] == "validate" {
				ann["phasegang.dev/sim-termination-message"] = fmt.Sprintf(`{"accuracy": %q}`, accuracy)
			}
			tpl["metadata"] = map[string]any{"annotations": ann}
		}
		b, err := yaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.Resource.Manifest = string(b)
		return
	}
	t.Fatal("no finetune template")
}

// checkpointVolume creates the PersistentVolumeClaim the fine-tuning
// workers mount, bound to a PersistentVolume of its own (kwok mounts
// nothing; the scheduler only needs it bound).
func checkpointVolume(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	pvName := ns + "-" + name
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/phasegang-e2e-" + name}},
			ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: name},
			StorageClassName:       "",
		},
	}
	if err := k8s.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pv) })
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeName:       pvName,
			StorageClassName: new(""),
		},
	}
	if err := k8s.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "PersistentVolumeClaim "+name+" Bound", func() (bool, error) {
		var cur corev1.PersistentVolumeClaim
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pvc), &cur); err != nil {
			return false, err
		}
		return cur.Status.Phase == corev1.ClaimBound, fmt.Errorf("%s", cur.Status.Phase)
	})
}
