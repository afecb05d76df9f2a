package driver

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// Default ports when the worker template declares none: TensorFlow's and
// PyTorch's customary ones.
const (
	defaultTFPort    = 2222
	defaultTorchPort = 29500
)

// workerLabels identify a phase attempt's worker pods (with LabelWorker,
// one pod).
func workerLabels(pt *v1alpha1.PhasedTraining, ps *v1alpha1.PhaseStatus) map[string]string {
	return map[string]string{
		LabelManaged:   "true",
		LabelPipeline:  DNSLabel(pt.Name, 63),
		LabelPhase:     ps.Name,
		LabelIteration: strconv.Itoa(int(ps.Iteration)),
		LabelAttempt:   strconv.Itoa(int(ps.Attempt)),
	}
}

// serviceLabels are the labels of a pipeline's Service.
func serviceLabels(pt *v1alpha1.PhasedTraining) map[string]string {
	return map[string]string{LabelManaged: "true", LabelPipeline: DNSLabel(pt.Name, 63)}
}

// peers lists the workers' stable DNS names within the pipeline's Service.
func peers(pt *v1alpha1.PhasedTraining, ps *v1alpha1.PhaseStatus, n int32) []string {
	svc := ServiceName(pt)
	out := make([]string, n)
	for i := range n {
		out[i] = fmt.Sprintf("%s.%s.%s.svc", Hostname(ps.Name, ps.Iteration, ps.Attempt, i), svc, pt.Namespace)
	}
	return out
}

// MaxWorkers is the most workers a gang runs: desired, or min when
// desired is unset or smaller.
func MaxWorkers(g v1alpha1.Gang) int32 { return max(g.Min, g.DesiredOrMin()) }

// BuildWorkerPod is worker index of a reserved phase attempt, pinned to its
// reserved node so kube-scheduler binds it exactly where the engine
// reserved capacity. worldSize is the gang's size when the pod is created.
func BuildWorkerPod(pt *v1alpha1.PhasedTraining, phase *v1alpha1.Phase, ps *v1alpha1.PhaseStatus, index int32, node string, worldSize int32) *corev1.Pod {
	tmpl := phase.Template.DeepCopy()
	labels := map[string]string{}
	for k, v := range tmpl.Labels {
		labels[k] = v
	}
	for k, v := range workerLabels(pt, ps) {
		labels[k] = v
	}
	labels[LabelWorker] = strconv.Itoa(int(index))
	if MaxWorkers(phase.Gang) > 1 {
		labels[LabelPeers] = "true"
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        PodName(pt, ps.Name, ps.Iteration, ps.Attempt, index),
			Namespace:   pt.Namespace,
			Labels:      labels,
			Annotations: tmpl.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pt,
				v1alpha1.GroupVersion.WithKind(v1alpha1.Kind))},
		},
		Spec: tmpl.Spec,
	}
	spec := &pod.Spec
	if spec.RestartPolicy == "" || spec.RestartPolicy == corev1.RestartPolicyAlways {
		// A worker that exits has ended; the phase's success policy and
		// maxRetries decide what happens next, not the kubelet.
		spec.RestartPolicy = corev1.RestartPolicyNever
	}
	spec.Hostname = Hostname(ps.Name, ps.Iteration, ps.Attempt, index)
	spec.Subdomain = ServiceName(pt)
	pinToNode(spec, node)
	tfPort, torchPort := ports(spec)
	env := workerEnv(pt, ps, index, worldSize, tfPort, torchPort)
	for i := range spec.Containers {
		spec.Containers[i].Env = mergeEnv(spec.Containers[i].Env, env)
	}
	return pod
}

// WorkerPod is the pod phasegang creates for worker index of the reserved
// phase attempt ps of pt, pinned to node; worldSize is the gang's size.
// It is exported for tools that need exactly that pod's shape (test/scale's
// control run); the reconciler is the only one that creates these pods.
func WorkerPod(pt *v1alpha1.PhasedTraining, ps *v1alpha1.PhaseStatus, index int32, node string, worldSize int32) (*corev1.Pod, error) {
	phase := PhaseSpec(pt, ps.Name)
	if phase == nil {
		return nil, fmt.Errorf("%s has no phase %q", pt.Name, ps.Name)
	}
	return BuildWorkerPod(pt, phase, ps, index, node, worldSize), nil
}

// pinToNode adds a required node affinity on the node's name to every
// node-selector term (terms are ORed, so the pin must be in each). It
// matches the metadata.name field rather than the kubernetes.io/Hostname
// label: on some clouds the Hostname label differs from the node name.
func pinToNode(spec *corev1.PodSpec, node string) {
	if node == "" {
		return // a template for no node in particular (ProvisioningTemplate)
	}
	pin := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		terms = []corev1.NodeSelectorTerm{{}}
	}
	for i := range terms {
		terms[i].MatchFields = append(terms[i].MatchFields, pin)
	}
	na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = terms
}

// PinnedNode is the node a worker pod is pinned to by pinToNode ("" when
// it carries no pin).
func PinnedNode(p *corev1.Pod) string {
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, r := range term.MatchFields {
			if r.Key == "metadata.name" && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				return r.Values[0]
			}
		}
	}
	return ""
}

// ports returns the first container's first port, or the defaults.
func ports(spec *corev1.PodSpec) (tf, torch int32) {
	tf, torch = defaultTFPort, defaultTorchPort
	for _, c := range spec.Containers {
		if len(c.Ports) > 0 {
			return c.Ports[0].ContainerPort, c.Ports[0].ContainerPort
		}
	}
	return tf, torch
}

// workerEnv is what a distributed trainer needs to find its gang without
// glue: phasegang's own variables, TF_CONFIG for TensorFlow's
// MultiWorkerMirroredStrategy (TFJob-style), and RANK/WORLD_SIZE/
// MASTER_ADDR/MASTER_PORT for torch.distributed.
func workerEnv(pt *v1alpha1.PhasedTraining, ps *v1alpha1.PhaseStatus, index, worldSize int32, tfPort, torchPort int32) []corev1.EnvVar {
	hosts := peers(pt, ps, worldSize)
	tfHosts := make([]string, len(hosts))
	for i, h := range hosts {
		tfHosts[i] = fmt.Sprintf("%s:%d", h, tfPort)
	}
	tfConfig, _ := json.Marshal(map[string]any{
		"cluster": map[string][]string{"worker": tfHosts},
		"task":    map[string]any{"type": "worker", "index": index},
	})
	return []corev1.EnvVar{
		{Name: EnvWorkerIndex, Value: strconv.Itoa(int(index))},
		{Name: EnvWorldSize, Value: strconv.Itoa(int(worldSize))},
		{Name: EnvPeers, Value: strings.Join(hosts, ",")},
		{Name: EnvPhase, Value: ps.Name},
		{Name: EnvIteration, Value: strconv.Itoa(int(ps.Iteration))},
		{Name: EnvAttempt, Value: strconv.Itoa(int(ps.Attempt))},
		{Name: "TF_CONFIG", Value: string(tfConfig)},
		{Name: "RANK", Value: strconv.Itoa(int(index))},
		{Name: "WORLD_SIZE", Value: strconv.Itoa(int(worldSize))},
		{Name: "MASTER_ADDR", Value: hosts[0]},
		{Name: "MASTER_PORT", Value: strconv.Itoa(int(torchPort))},
	}
}

// mergeEnv puts ours before the user's, so the user's variables can refer
// to ours ($(RANK)), and never overrides a variable the user set.
func mergeEnv(user, ours []corev1.EnvVar) []corev1.EnvVar {
	set := map[string]bool{}
	for _, e := range user {
		set[e.Name] = true
	}
	out := make([]corev1.EnvVar, 0, len(ours)+len(user))
	for _, e := range ours {
		if !set[e.Name] {
			out = append(out, e)
		}
	}
	return append(out, user...)
}

// BuildService is the pipeline's headless Service, giving its workers
// stable DNS names (Hostname.subdomain). It has no selector: phasegang
// writes its EndpointSlice (peers.go), listing only the workers of gangs
// that have peers; a single worker needs no DNS record to find itself
// (the kubelet writes its own Hostname.subdomain into /etc/hosts). It
// publishes not-ready addresses because peers must resolve each other
// while they start (the slice marks them ready). Its ports are
// every port the phases declare (each port and protocol once): headless
// DNS needs none, but SRV records and readers of the Service use them.
func BuildService(pt *v1alpha1.PhasedTraining) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: ServiceName(pt), Namespace: pt.Namespace,
			Labels: serviceLabels(pt),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pt,
				v1alpha1.GroupVersion.WithKind(v1alpha1.Kind))},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
		},
	}
	type portKey struct {
		port  int32
		proto corev1.Protocol
	}
	var ports []corev1.ContainerPort
	seen := map[portKey]bool{}
	for _, phase := range pt.Spec.Phases {
		for _, c := range phase.Template.Spec.Containers {
			for _, p := range c.Ports {
				proto := p.Protocol
				if proto == "" {
					proto = corev1.ProtocolTCP
				}
				if k := (portKey{p.ContainerPort, proto}); !seen[k] {
					seen[k] = true
					ports = append(ports, p)
				}
			}
		}
	}
	// Several ports must have distinct names: a user's name is kept where
	// it is the first of its kind; the others get a stable name from
	// number and protocol, made unique if that clashes.
	used := map[string]bool{}
	named := make([]string, len(ports))
	for i, p := range ports {
		if p.Name != "" && !used[p.Name] {
			used[p.Name], named[i] = true, p.Name
		}
	}
	for i, p := range ports {
		name := named[i]
		if name == "" {
			proto := strings.ToLower(string(p.Protocol))
			if proto == "" {
				proto = "tcp"
			}
			base := fmt.Sprintf("p%d-%s", p.ContainerPort, proto)
			name = base
			for n := 2; used[name]; n++ {
				name = fmt.Sprintf("%s-%d", base, n)
			}
			used[name] = true
		}
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: name, Port: p.ContainerPort, Protocol: p.Protocol})
	}
	return svc
}
