package driver

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

func envMap(env []corev1.EnvVar) map[string]string {
	m := map[string]string{}
	for _, e := range env {
		if _, dup := m[e.Name]; dup {
			m[e.Name] = "<DUPLICATE>"
			continue
		}
		m[e.Name] = e.Value
	}
	return m
}

func TestBuildWorkerPodMeta(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("train", 2).Template(func(p *corev1.PodTemplateSpec) {
		p.Labels = map[string]string{"team": "ml", LabelPhase: "spoofed", LabelWorker: "99"}
		p.Annotations = map[string]string{"a": "b"}
	}).Obj()
	ps := wrappers.Attempt(wrappers.Running("train", "n1", "n2", "n3"), 1, 2)
	pod := BuildWorkerPod(pt, &pt.Spec.Phases[0], &ps, 2, "n3", 3)

	want := metav1.ObjectMeta{
		Name:      "job-train-i1-a2-2",
		Namespace: "ns",
		Labels: map[string]string{
			"team":         "ml",
			LabelManaged:   "true",
			LabelPipeline:  "job",
			LabelPhase:     "train",
			LabelIteration: "1",
			LabelAttempt:   "2",
			LabelWorker:    "2",
			LabelPeers:     "true",
		},
		Annotations: map[string]string{"a": "b"},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "phasegang.dev/v1alpha1", Kind: "PhasedTraining", Name: "job", UID: "uid-job",
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}},
	}
	if d := cmp.Diff(want, pod.ObjectMeta); d != "" {
		t.Errorf("pod meta (-want +got):\n%s", d)
	}
	if pod.Spec.Hostname != "train-i1-a2-2" || pod.Spec.Subdomain != "job" {
		t.Errorf("Hostname %q subdomain %q", pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	// The Service selects nothing: phasegang writes its EndpointSlice.
	svc := BuildService(pt)
	if svc.Spec.Selector != nil {
		t.Errorf("service selector %v, want none", svc.Spec.Selector)
	}
	if pod.Spec.Subdomain != svc.Name {
		t.Errorf("pod subdomain %q is not the service %q", pod.Spec.Subdomain, svc.Name)
	}
	// WorkerIndex/PodInstance read back what BuildWorkerPod wrote.
	in, idx, ok := PodInstance(pod)
	if !ok || idx != 2 || in.Name != "train" || in.Iteration != 1 || in.Attempt != 2 {
		t.Errorf("PodInstance = %+v %d %v", in, idx, ok)
	}
}

func TestBuildWorkerPodDoesNotMutateTemplate(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("train", 2).Template(func(p *corev1.PodTemplateSpec) {
		p.Labels = map[string]string{"team": "ml"}
		p.Annotations = map[string]string{"a": "b"}
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", Value: "1"}}
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "k", Operator: corev1.NodeSelectorOpExists}}}},
		}}}
	}).Obj()
	before := pt.DeepCopy()
	ps := wrappers.Running("train", "n1", "n2")
	p0 := BuildWorkerPod(pt, &pt.Spec.Phases[0], &ps, 0, "n1", 2)
	p1 := BuildWorkerPod(pt, &pt.Spec.Phases[0], &ps, 1, "n2", 2)
	if d := cmp.Diff(before, pt); d != "" {
		t.Errorf("BuildWorkerPod mutated the pipeline (-before +after):\n%s", d)
	}
	if got := p0.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields; len(got) != 1 || got[0].Values[0] != "n1" {
		t.Errorf("worker 0 pin = %v", got)
	}
	if got := p1.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields; len(got) != 1 || got[0].Values[0] != "n2" {
		t.Errorf("worker 1 pin = %v (pins leak between workers?)", got)
	}
}

func TestBuildWorkerPodRestartPolicy(t *testing.T) {
	tests := map[corev1.RestartPolicy]corev1.RestartPolicy{
		"":                            corev1.RestartPolicyNever,
		corev1.RestartPolicyAlways:    corev1.RestartPolicyNever,
		corev1.RestartPolicyNever:     corev1.RestartPolicyNever,
		corev1.RestartPolicyOnFailure: corev1.RestartPolicyOnFailure,
	}
	for in, want := range tests {
		t.Run("from "+string(in), func(t *testing.T) {
			pt := wrappers.MakePT("job").Phase("train", 1).Template(func(p *corev1.PodTemplateSpec) { p.Spec.RestartPolicy = in }).Obj()
			ps := wrappers.Running("train", "n1")
			if got := BuildWorkerPod(pt, &pt.Spec.Phases[0], &ps, 0, "n1", 1).Spec.RestartPolicy; got != want {
				t.Errorf("restart policy = %q, want %q", got, want)
			}
		})
	}
}

func TestPinToNode(t *testing.T) {
	pin := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n7"}}
	zoneA := corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
	zoneB := corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}
	other := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"bad"}}
	preferred := []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zoneA}}}}
	podAff := &corev1.PodAffinity{}
	required := func(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	tests := map[string]struct {
		in, want *corev1.Affinity
	}{
		"no affinity": {
			in:   nil,
			want: required(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{pin}}),
		},
		"pod affinity only, kept": {
			in: &corev1.Affinity{PodAffinity: podAff},
			want: &corev1.Affinity{PodAffinity: podAff, NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{pin}}}}}},
		},
		"preferred only, kept": {
			in: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred}},
			want: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: preferred,
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{pin}}}}}},
		},
		"empty required selector": {
			in:   required(),
			want: required(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{pin}}),
		},
		"pin added to every ORed term": {
			in: required(
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zoneA}},
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zoneB}, MatchFields: []corev1.NodeSelectorRequirement{other}},
			),
			want: required(
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zoneA}, MatchFields: []corev1.NodeSelectorRequirement{pin}},
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zoneB}, MatchFields: []corev1.NodeSelectorRequirement{other, pin}},
			),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			// Through BuildWorkerPod, so the template's copy is what is pinned.
			pt := wrappers.MakePT("job").Phase("train", 1).Template(func(p *corev1.PodTemplateSpec) { p.Spec.Affinity = tc.in }).Obj()
			ps := wrappers.Running("train", "n7")
			got := BuildWorkerPod(pt, &pt.Spec.Phases[0], &ps, 0, "n7", 1).Spec.Affinity
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("affinity (-want +got):\n%s", d)
			}
		})
	}
}

func TestBuildWorkerPodEnv(t *testing.T) {
	ps := wrappers.Running("train", "n1", "n2", "n3")
	hosts := []string{"train-0.job.ns.svc", "train-1.job.ns.svc", "train-2.job.ns.svc"}
	tests := map[string]struct {
		tmpl  func(*corev1.PodTemplateSpec)
		index int32
		// want per container
		want []map[string]string
	}{
		"defaults ports, no user env": {
			tmpl:  func(*corev1.PodTemplateSpec) {},
			index: 1,
			want: []map[string]string{{
				EnvWorkerIndex: "1", EnvWorldSize: "3", EnvPeers: hosts[0] + "," + hosts[1] + "," + hosts[2],
				EnvPhase: "train", EnvIteration: "0", EnvAttempt: "0",
				"TF_CONFIG": `{"cluster":{"worker":["train-0.job.ns.svc:2222","train-1.job.ns.svc:2222","train-2.job.ns.svc:2222"]},"task":{"index":1,"type":"worker"}}`,
				"RANK":      "1", "WORLD_SIZE": "3", "MASTER_ADDR": hosts[0], "MASTER_PORT": "29500",
			}},
		},
		"declared port used for both; user env kept, never overridden; every container": {
			tmpl: func(p *corev1.PodTemplateSpec) {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 1234}, {ContainerPort: 9999}}
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RANK", Value: "mine"}, {Name: "FOO", Value: "bar"}}
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar", Image: "s",
					Env: []corev1.EnvVar{{Name: "MASTER_PORT", Value: "1"}}})
			},
			index: 0,
			want: []map[string]string{{
				"FOO": "bar", EnvWorkerIndex: "0", EnvWorldSize: "3", EnvPeers: hosts[0] + "," + hosts[1] + "," + hosts[2],
				EnvPhase: "train", EnvIteration: "0", EnvAttempt: "0",
				"TF_CONFIG": `{"cluster":{"worker":["train-0.job.ns.svc:1234","train-1.job.ns.svc:1234","train-2.job.ns.svc:1234"]},"task":{"index":0,"type":"worker"}}`,
				"RANK":      "mine", "WORLD_SIZE": "3", "MASTER_ADDR": hosts[0], "MASTER_PORT": "1234",
			}, {
				EnvWorkerIndex: "0", EnvWorldSize: "3", EnvPeers: hosts[0] + "," + hosts[1] + "," + hosts[2],
				EnvPhase: "train", EnvIteration: "0", EnvAttempt: "0",
				"TF_CONFIG": `{"cluster":{"worker":["train-0.job.ns.svc:1234","train-1.job.ns.svc:1234","train-2.job.ns.svc:1234"]},"task":{"index":0,"type":"worker"}}`,
				"RANK":      "0", "WORLD_SIZE": "3", "MASTER_ADDR": hosts[0], "MASTER_PORT": "1",
			}},
		},
		"port of a later container when the first declares none": {
			tmpl: func(p *corev1.PodTemplateSpec) {
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "b", Image: "b", Ports: []corev1.ContainerPort{{ContainerPort: 7777}}})
			},
			index: 2,
			want: func() []map[string]string {
				m := map[string]string{
					EnvWorkerIndex: "2", EnvWorldSize: "3", EnvPeers: hosts[0] + "," + hosts[1] + "," + hosts[2],
					EnvPhase: "train", EnvIteration: "0", EnvAttempt: "0",
					"TF_CONFIG": `{"cluster":{"worker":["train-0.job.ns.svc:7777","train-1.job.ns.svc:7777","train-2.job.ns.svc:7777"]},"task":{"index":2,"type":"worker"}}`,
					"RANK":      "2", "WORLD_SIZE": "3", "MASTER_ADDR": hosts[0], "MASTER_PORT": "7777",
				}
				return []map[string]string{m, m}
			}(),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pt := wrappers.MakePT("job").Phase("train", 3).Template(tc.tmpl).Obj()
			pod := BuildWorkerPod(pt, &pt.Spec.Phases[0], &ps, tc.index, ps.Assignments[tc.index], 3)
			var got []map[string]string
			for _, c := range pod.Spec.Containers {
				got = append(got, envMap(c.Env))
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("env (-want +got):\n%s", d)
			}
			if pod.Spec.InitContainers != nil {
				t.Errorf("init containers appeared")
			}
		})
	}
}

// TF_CONFIG is what TensorFlow parses: cluster.worker has world-size
// entries, the task is this worker.
func TestTFConfig(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("train", 1).Obj()
	for _, ws := range []int32{1, 2, 5} {
		for idx := range ws {
			ps := wrappers.Attempt(wrappers.Running("train"), 3, 1)
			pod := BuildWorkerPod(pt, &pt.Spec.Phases[0], &ps, idx, "n", ws)
			var cfg struct {
				Cluster map[string][]string `json:"cluster"`
				Task    struct {
					Type  string `json:"type"`
					Index int32  `json:"index"`
				} `json:"task"`
			}
			raw := envMap(pod.Spec.Containers[0].Env)["TF_CONFIG"]
			if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
				t.Fatalf("TF_CONFIG %q: %v", raw, err)
			}
			if len(cfg.Cluster) != 1 || len(cfg.Cluster["worker"]) != int(ws) {
				t.Errorf("ws=%d: cluster = %v", ws, cfg.Cluster)
			}
			if cfg.Task.Type != "worker" || cfg.Task.Index != idx {
				t.Errorf("ws=%d idx=%d: task = %+v", ws, idx, cfg.Task)
			}
			own := cfg.Cluster["worker"][idx]
			if want := pod.Spec.Hostname + "." + pod.Spec.Subdomain + ".ns.svc:2222"; own != want {
				t.Errorf("own entry %q, want %q (Hostname.subdomain.namespace.svc)", own, want)
			}
		}
	}
}

func TestMergeEnv(t *testing.T) {
	tests := map[string]struct {
		user, ours, want []corev1.EnvVar
	}{
		"no user env": {
			ours: []corev1.EnvVar{{Name: "A", Value: "1"}},
			want: []corev1.EnvVar{{Name: "A", Value: "1"}},
		},
		"user wins, including valueFrom": {
			user: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			ours: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
			// Ours come first so the user's can refer to them ($(B)).
			want: []corev1.EnvVar{{Name: "B", Value: "2"}, {Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
		},
		"user empty value still wins": {
			user: []corev1.EnvVar{{Name: "A"}},
			ours: []corev1.EnvVar{{Name: "A", Value: "1"}},
			want: []corev1.EnvVar{{Name: "A"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, mergeEnv(tc.user, tc.ours)); d != "" {
				t.Errorf("mergeEnv (-want +got):\n%s", d)
			}
		})
	}
}

func TestBuildService(t *testing.T) {
	tests := map[string]struct {
		tmpl      func(*corev1.PodTemplateSpec)
		wantPorts []corev1.ServicePort
	}{
		"no ports": {tmpl: func(*corev1.PodTemplateSpec) {}},
		"named and unnamed ports across containers": {
			tmpl: func(p *corev1.PodTemplateSpec) {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "grpc", ContainerPort: 2222, Protocol: corev1.ProtocolTCP}, {ContainerPort: 29500}}
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "s", Image: "s", Ports: []corev1.ContainerPort{{ContainerPort: 9090, Protocol: corev1.ProtocolUDP}}})
			},
			wantPorts: []corev1.ServicePort{
				{Name: "grpc", Port: 2222, Protocol: corev1.ProtocolTCP},
				{Name: "p29500-tcp", Port: 29500},
				{Name: "p9090-udp", Port: 9090, Protocol: corev1.ProtocolUDP},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pt := wrappers.MakePT("job").Phase("train", 2).Template(tc.tmpl).Obj()
			svc := BuildService(pt)
			labels := map[string]string{LabelManaged: "true", LabelPipeline: "job"}
			want := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{
					Name: "job", Namespace: "ns", Labels: labels,
					OwnerReferences: []metav1.OwnerReference{{
						APIVersion: "phasegang.dev/v1alpha1", Kind: "PhasedTraining", Name: "job", UID: "uid-job",
						Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
					}},
				},
				Spec: corev1.ServiceSpec{
					ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true,
					Ports: tc.wantPorts,
				},
			}
			if d := cmp.Diff(want, svc); d != "" {
				t.Errorf("service (-want +got):\n%s", d)
			}
			// The selector takes in every worker of every phase attempt.
			for _, l := range []string{LabelWorker, LabelPhase, LabelIteration, LabelAttempt} {
				if _, ok := svc.Spec.Selector[l]; ok {
					t.Errorf("selector must not pin %s", l)
				}
			}
		})
	}
}

// A Service's ports must have unique names when there are several.
func TestBuildServicePortNamesUnique(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("train", 1).Template(func(p *corev1.PodTemplateSpec) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{
			{ContainerPort: 5353, Protocol: corev1.ProtocolTCP},
			{ContainerPort: 5353, Protocol: corev1.ProtocolUDP},
		}
	}).Obj()
	svc := BuildService(pt)
	seen := map[string]bool{}
	for _, p := range svc.Spec.Ports {
		if seen[p.Name] {
			t.Errorf("duplicate service port name %q in %v", p.Name, svc.Spec.Ports)
		}
		seen[p.Name] = true
	}
}

// The pipeline's one Service carries every phase's ports, each port and
// protocol once; a name two phases give to different ports stays with the
// first, and the second gets a generated one.
func TestBuildServicePortsAcrossPhases(t *testing.T) {
	pt := wrappers.MakePT("job").
		Phase("train", 2).Template(func(p *corev1.PodTemplateSpec) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "dist", ContainerPort: 29500}}
	}).
		Phase("validate", 1).Template(func(p *corev1.PodTemplateSpec) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "dist", ContainerPort: 29500}, {Name: "metrics", ContainerPort: 9090}}
	}).Obj()
	pt.Spec.Phases = append(pt.Spec.Phases, *pt.Spec.Phases[1].DeepCopy())
	pt.Spec.Phases[2].Name = "test"
	pt.Spec.Phases[2].Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "dist", ContainerPort: 2222}}
	want := []corev1.ServicePort{{Name: "dist", Port: 29500}, {Name: "metrics", Port: 9090}, {Name: "p2222-tcp", Port: 2222}}
	if d := cmp.Diff(want, BuildService(pt).Spec.Ports); d != "" {
		t.Errorf("ports (-want +got):\n%s", d)
	}
}

// The pod's Hostname and subdomain are DNS-1123 labels and the Service's
// name a DNS-1035 label, whatever valid name the pipeline has.
func TestWorkerDNSNamesValid(t *testing.T) {
	for _, name := range []string{"job", "a", "my-pipeline-with-a-rather-long-name-that-goes-on-and-on-and-on-forever"} {
		pt := wrappers.MakePT(name).Phase("train", 1).Obj()
		ps := wrappers.Attempt(wrappers.Running("train", "n1"), 12, 3)
		pod := BuildWorkerPod(pt, &pt.Spec.Phases[0], &ps, 9999, "n1", 10000)
		svc := BuildService(pt)
		for what, errs := range map[string][]string{
			"pod name":       validation.IsDNS1123Subdomain(pod.Name),
			"Hostname":       validation.IsDNS1123Label(pod.Spec.Hostname),
			"subdomain":      validation.IsDNS1123Label(pod.Spec.Subdomain),
			"service":        validation.IsDNS1035Label(svc.Name),
			"pipeline label": validation.IsValidLabelValue(pod.Labels[LabelPipeline]),
		} {
			if len(errs) > 0 {
				t.Errorf("pipeline %q: %s invalid: %v", name, what, errs)
			}
		}
	}
}

// WorkerPod is BuildWorkerPod for the named phase, and an error for a
// phase the spec does not have.
func TestWorkerPod(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("train", 2).Obj()
	ps := wrappers.Running("train", "n1", "n2")
	got, err := WorkerPod(pt, &ps, 1, "n2", 2)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(BuildWorkerPod(pt, &pt.Spec.Phases[0], &ps, 1, "n2", 2), got); d != "" {
		t.Errorf("WorkerPod differs from BuildWorkerPod (-want +got):\n%s", d)
	}
	other := wrappers.Running("eval", "n1")
	if _, err := WorkerPod(pt, &other, 0, "n1", 1); err == nil {
		t.Errorf("WorkerPod for a phase the spec lacks: no error")
	}
}

// Only gangs that can have more than one worker are published in the
// pipeline's Service: a single worker has no peer to find.
func TestOnlyGangsWithPeersArePublished(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("train", 4).Phase("grow", 1).Desired(4).Phase("test", 1).Obj()
	svc := BuildService(pt)
	for i, want := range []bool{true, true, false} {
		phase := &pt.Spec.Phases[i]
		p := pt.DeepCopy()
		p.Status.Phases = []v1alpha1.PhaseStatus{wrappers.Running(phase.Name, "n1")}
		pod := BuildWorkerPod(p, phase, &p.Status.Phases[0], 0, "n1", 1)
		pod.Status.Phase, pod.Status.PodIP = corev1.PodRunning, "10.0.0.1"
		got := len(PublishPeers(SyncWorkers(p, []corev1.Pod{*pod}, nil).Peers, nil)) == 1
		if got != want {
			t.Errorf("phase %s (gang %d..%d): published = %v, want %v", phase.Name, phase.Gang.Min, phase.Gang.DesiredOrMin(), got, want)
		}
		if pod.Spec.Subdomain != svc.Name {
			t.Errorf("phase %s: subdomain %q, want %q (a single worker still gets its stable name)", phase.Name, pod.Spec.Subdomain, svc.Name)
		}
	}
}

// A PhasedTraining's name is any DNS-1123 subdomain (the CRD adds no rule):
// it may contain dots and start with a digit. ServiceName promises a
// DNS-1035 label, and the pod's subdomain must be a DNS-1123
// label.
func TestServiceNameValidForEveryPipelineName(t *testing.T) {
	for _, name := range []string{"bert.v2", "2024-run", "a.b.c"} {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Fatalf("fixture %q is not a valid object name: %v", name, errs)
		}
		pt := wrappers.MakePT(name).Phase("train", 1).Obj()
		ps := wrappers.Running("train", "n1")
		if errs := validation.IsDNS1035Label(ServiceName(pt)); len(errs) > 0 {
			t.Errorf("pipeline %q: service name %q: %v", name, ServiceName(pt), errs)
		}
		pod := BuildWorkerPod(pt, &pt.Spec.Phases[0], &ps, 0, "n1", 1)
		if errs := validation.IsDNS1123Label(pod.Spec.Subdomain); len(errs) > 0 {
			t.Errorf("pipeline %q: pod subdomain %q: %v", name, pod.Spec.Subdomain, errs)
		}
	}
}
