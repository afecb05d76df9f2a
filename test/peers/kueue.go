package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/informers"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// kueueSystem runs Kueue (built by build-kueue.sh) out of cluster as
// shared/notes/peers.md verified: internal cert management off, its
// webhook server on 127.0.0.1 with a self-signed cert, the webhook
// configurations rewritten to URLs, and each phase a batch/v1 Job in a
// LocalQueue, the next phase's Job created when the previous completes.
type kueueSystem struct {
	home   string // the cache dir: bin/, crd/, webhook/
	cmd    *exec.Cmd
	log    *os.File
	c      *cluster
	hooks  []string // "mutating/NAME", "validating/NAME"
	exited chan struct{}
	// madeEtc: this run created /etc/kueue (removed at stop).
	madeEtc bool

	mu   sync.Mutex
	done map[string]bool // Job name → Complete
	fail map[string]bool
	jobs map[gangKey]string
}

// The hard-coded metrics cert path of v0.17.0's cmd/kueue/main.go.
const kueueEtc = "/etc/kueue"

func (*kueueSystem) name() string       { return "kueue" }
func (*kueueSystem) upArgs() []string   { return nil }
func (*kueueSystem) drivesPhases() bool { return false }

// kueueWebhookPaths: the webhooks a batch/v1 Job path needs.
var kueueWebhookPaths = []string{
	"-batch-v1-job",
	"-kueue-x-k8s-io-v1beta2-workload",
	"-kueue-x-k8s-io-v1beta2-clusterqueue",
	"-kueue-x-k8s-io-v1beta2-resourceflavor",
	"-kueue-x-k8s-io-v1beta2-cohort",
}

func (s *kueueSystem) start(ctx context.Context, c *cluster, w workload) (map[string]int, error) {
	s.c = c
	s.done, s.fail, s.jobs = map[string]bool{}, map[string]bool{}, map[gangKey]string{}
	if err := c.kubectl("apply", "--server-side", "-f", filepath.Join(s.home, "crd")); err != nil {
		return nil, fmt.Errorf("installing Kueue's CRDs: %w", err)
	}
	// Kueue exits when a kind it indexes is not served yet.
	if err := c.kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", filepath.Join(s.home, "crd")); err != nil {
		return nil, fmt.Errorf("Kueue's CRDs not established: %w", err)
	}
	if _, err := c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kueue-system"}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	work := c.artifact("kueue")
	certDir := filepath.Join(work, "certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	crt, key, err := selfSigned()
	if err != nil {
		return nil, err
	}
	if err := writeCert(certDir, crt, key); err != nil {
		return nil, err
	}
	// The workaround: v0.17.0 exits when /etc/kueue/metrics/certs/tls.crt
	// is missing, metrics off or not.
	metricsCerts := filepath.Join(kueueEtc, "metrics", "certs")
	if _, err := os.Stat(kueueEtc); os.IsNotExist(err) {
		s.madeEtc = true
		if err := os.MkdirAll(metricsCerts, 0o700); err != nil {
			return nil, fmt.Errorf("the metrics cert workaround needs %s (run as root): %w", kueueEtc, err)
		}
		if err := writeCert(metricsCerts, crt, key); err != nil {
			return nil, err
		}
	} else if _, err := os.Stat(filepath.Join(metricsCerts, "tls.crt")); err != nil {
		return nil, fmt.Errorf("%s exists (not made by this run) but has no metrics/certs/tls.crt", kueueEtc)
	}
	port, probe := freePort(), freePort()
	// controller and clientConnection as the release's manifest
	// (config/components/manager/controller_manager_config.yaml) sets
	// them: what an install gets (the binary's own defaults are 20 QPS,
	// burst 30).
	cfg := fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:%s
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %s
  certDir: %s
leaderElection:
  leaderElect: false
controller:
  groupKindConcurrency:
    Job.batch: 5
    Pod: 5
    Workload.kueue.x-k8s.io: 5
    LocalQueue.kueue.x-k8s.io: 1
    Cohort.kueue.x-k8s.io: 1
    ClusterQueue.kueue.x-k8s.io: 1
    ResourceFlavor.kueue.x-k8s.io: 1
clientConnection:
  qps: 50
  burst: 100
internalCertManagement:
  enable: false
integrations:
  frameworks:
  - batch/job
`, probe, port, certDir)
	cfgFile := filepath.Join(work, "config.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	s.log, err = os.Create(c.artifact("kueue.log"))
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(filepath.Join(s.home, "bin", "kueue"), "--config", cfgFile, "--feature-gates=VisibilityOnDemand=false")
	s.cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(exited) }()
	s.cmd = &exec.Cmd{Process: s.cmd.Process} // stop() waits on exited instead
	s.exited = exited
	// Ready: its probe answers and its webhook server serves TLS.
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-exited:
			return nil, fmt.Errorf("kueue exited at start (log %s)", s.log.Name())
		default:
		}
		resp, err := http.Get("http://127.0.0.1:" + probe + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		if err == nil && resp.StatusCode == http.StatusOK {
			conn, err := tls.Dial("tcp", "127.0.0.1:"+port, &tls.Config{InsecureSkipVerify: true})
			if err == nil {
				conn.Close()
				break
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("kueue not ready after 90 s (log %s)", s.log.Name())
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err := s.installWebhooks(ctx, port, crt); err != nil {
		return nil, err
	}
	gpus := w.nodes * w.gpusPerNode
	objs := []string{
		`{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ResourceFlavor","metadata":{"name":"default"}}`,
		fmt.Sprintf(`{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ClusterQueue","metadata":{"name":"cq"},"spec":{"namespaceSelector":{},"queueingStrategy":"BestEffortFIFO",
		  "resourceGroups":[{"coveredResources":["cpu","nvidia.com/gpu"],"flavors":[{"name":"default","resources":[{"name":"cpu","nominalQuota":"%d"},{"name":"nvidia.com/gpu","nominalQuota":"%d"}]}]}]}}`, w.nodes*64, gpus),
		fmt.Sprintf(`{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"LocalQueue","metadata":{"name":"lq","namespace":"%s"},"spec":{"clusterQueue":"cq"}}`, runNamespace),
	}
	for _, o := range objs {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(o)); err != nil {
			return nil, err
		}
		if err := c.k8s.Create(ctx, u); err != nil {
			return nil, fmt.Errorf("creating %s: %w", u.GetKind(), err)
		}
	}
	// Wait until the ClusterQueue is Active.
	for {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("kueue.x-k8s.io/v1beta2")
		u.SetKind("ClusterQueue")
		if err := c.k8s.Get(ctx, clientKey("", "cq"), u); err == nil {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			active := false
			for _, x := range conds {
				m, _ := x.(map[string]any)
				if m["type"] == "Active" && m["status"] == "True" {
					active = true
				}
			}
			if active {
				break
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("ClusterQueue cq not Active (log %s)", s.log.Name())
		}
		time.Sleep(300 * time.Millisecond)
	}
	f := informers.NewSharedInformerFactoryWithOptions(c.cs, 0, informers.WithNamespace(runNamespace))
	inf := f.Batch().V1().Jobs().Informer()
	see := func(obj any) {
		j, ok := obj.(*batchv1.Job)
		if !ok {
			return
		}
		for _, cd := range j.Status.Conditions {
			if cd.Status != corev1.ConditionTrue {
				continue
			}
			s.mu.Lock()
			switch cd.Type {
			case batchv1.JobComplete:
				s.done[j.Name] = true
			case batchv1.JobFailed:
				s.fail[j.Name] = true
			}
			s.mu.Unlock()
		}
	}
	c.watch(ctx, f, inf, see)
	return map[string]int{"kueue": s.cmd.Process.Pid}, nil
}

func (s *kueueSystem) installWebhooks(ctx context.Context, port string, caPEM []byte) error {
	raw, err := os.ReadFile(filepath.Join(s.home, "webhook", "manifests.yaml"))
	if err != nil {
		return err
	}
	keep := func(cc *admissionv1.WebhookClientConfig) bool {
		if cc.Service == nil || cc.Service.Path == nil {
			return false
		}
		path := *cc.Service.Path
		for _, suffix := range kueueWebhookPaths {
			if strings.HasSuffix(path, suffix) {
				cc.URL = ptr.To("https://127.0.0.1:" + port + path)
				cc.Service = nil
				cc.CABundle = caPEM
				return true
			}
		}
		return false
	}
	for _, doc := range bytes.Split(raw, []byte("\n---")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return err
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			var m admissionv1.MutatingWebhookConfiguration
			if err := yaml.Unmarshal(doc, &m); err != nil {
				return err
			}
			var hooks []admissionv1.MutatingWebhook
			for _, h := range m.Webhooks {
				if keep(&h.ClientConfig) {
					hooks = append(hooks, h)
				}
			}
			m.Webhooks = hooks
			m.Name = "peers-kueue-mutating"
			if _, err := s.c.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &m, metav1.CreateOptions{}); err != nil {
				return err
			}
			s.hooks = append(s.hooks, "mutating/"+m.Name)
		case "ValidatingWebhookConfiguration":
			var v admissionv1.ValidatingWebhookConfiguration
			if err := yaml.Unmarshal(doc, &v); err != nil {
				return err
			}
			var hooks []admissionv1.ValidatingWebhook
			for _, h := range v.Webhooks {
				if keep(&h.ClientConfig) {
					hooks = append(hooks, h)
				}
			}
			v.Webhooks = hooks
			v.Name = "peers-kueue-validating"
			if _, err := s.c.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &v, metav1.CreateOptions{}); err != nil {
				return err
			}
			s.hooks = append(s.hooks, "validating/"+v.Name)
		}
	}
	if len(s.hooks) != 2 {
		return fmt.Errorf("found %d webhook configurations in Kueue's manifests, want 2", len(s.hooks))
	}
	return nil
}

func (s *kueueSystem) submit(ctx context.Context, c *cluster, i int, p pipelineSpec, k int) error {
	ph := p.phases[k]
	t := podTemplate(i, k, ph)
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: runNamespace, Name: objName(p, k),
			Labels: map[string]string{"kueue.x-k8s.io/queue-name": "lq", labelPipeline: strconv.Itoa(i), labelPhase: strconv.Itoa(k)}},
		Spec: batchv1.JobSpec{Parallelism: ptr.To(ph.workers), Completions: ptr.To(ph.workers), BackoffLimit: ptr.To[int32](0),
			Suspend: ptr.To(true), Template: t},
	}
	s.mu.Lock()
	s.jobs[gangKey{i, k}] = j.Name
	s.mu.Unlock()
	_, err := c.cs.BatchV1().Jobs(runNamespace).Create(ctx, j, metav1.CreateOptions{})
	return err
}

func (s *kueueSystem) phaseEnded(i, k int) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := s.jobs[gangKey{i, k}]
	if s.fail[name] {
		return false, fmt.Errorf("Job %s failed", name)
	}
	return s.done[name], nil
}

func (s *kueueSystem) stop() {
	// Webhooks first: their failurePolicy Fail blocks Job writes once
	// Kueue is gone.
	ctx := context.Background()
	for _, h := range s.hooks {
		kind, name, _ := strings.Cut(h, "/")
		var err error
		if kind == "mutating" {
			err = s.c.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
		} else {
			err = s.c.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "peers: deleting webhook configuration %s: %v\n", h, err)
		}
	}
	s.hooks = nil
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
		s.cmd = nil
	}
	if s.log != nil {
		s.log.Close()
	}
	if s.madeEtc {
		if err := os.RemoveAll(kueueEtc); err != nil {
			fmt.Fprintf(os.Stderr, "peers: removing %s: %v\n", kueueEtc, err)
		}
		s.madeEtc = false
	}
}

// selfSigned makes a cert for IP 127.0.0.1 (PEM) and its key.
func selfSigned() (crt, key []byte, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "peers-kueue-webhook"},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:        true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return nil, nil, err
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), nil
}

func writeCert(dir string, crt, key []byte) error {
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600)
}
