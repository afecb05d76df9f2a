package driver

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// withIP gives a worker pod its IP, as the kubelet does once it runs.
func withIP(p corev1.Pod, ip string) corev1.Pod {
	p.Status.PodIP = ip
	return p
}

func publishedPods(peers []Peer) []string {
	var out []string
	for _, p := range peers {
		out = append(out, p.Pod+"="+p.IP)
	}
	return out
}

func TestPublishPeers(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("train", 2).Desired(3).Phase("eval", 1).Obj()
	two := wrappers.Running("train", "n1", "n2")
	three := wrappers.Running("train", "n1", "n2", "n3")
	single := wrappers.Running("eval", "n1")
	tests := map[string]struct {
		status    []v1alpha1.PhaseStatus
		pods      func() []corev1.Pod
		published []string // pod names listed now
		want      []string
	}{
		"a gang still waiting for an IP is not listed yet": {
			status: []v1alpha1.PhaseStatus{two},
			pods: func() []corev1.Pod {
				return []corev1.Pod{withIP(workerPodOf(pt, two, 0, "n1", corev1.PodRunning), "10.0.0.1"), workerPodOf(pt, two, 1, "n2", corev1.PodPending)}
			},
		},
		"a gang whose workers all have IPs is listed whole": {
			status: []v1alpha1.PhaseStatus{two},
			pods: func() []corev1.Pod {
				return []corev1.Pod{withIP(workerPodOf(pt, two, 0, "n1", corev1.PodRunning), "10.0.0.1"), withIP(workerPodOf(pt, two, 1, "n2", corev1.PodRunning), "10.0.0.2")}
			},
			want: []string{"job-train-0=10.0.0.1", "job-train-1=10.0.0.2"},
		},
		// Growth: the new worker has no IP yet; the running ones stay.
		"a growing gang keeps its listed workers until the new ones have IPs": {
			status: []v1alpha1.PhaseStatus{three},
			pods: func() []corev1.Pod {
				return []corev1.Pod{
					withIP(workerPodOf(pt, three, 0, "n1", corev1.PodRunning), "10.0.0.1"),
					withIP(workerPodOf(pt, three, 1, "n2", corev1.PodRunning), "10.0.0.2"),
					workerPodOf(pt, three, 2, "n3", corev1.PodPending),
				}
			},
			published: []string{"job-train-0", "job-train-1"},
			want:      []string{"job-train-0=10.0.0.1", "job-train-1=10.0.0.2"},
		},
		// A gang's workers end one after another: no write per worker.
		"a worker that ended stays listed while its gang runs": {
			status: []v1alpha1.PhaseStatus{two},
			pods: func() []corev1.Pod {
				return []corev1.Pod{
					withIP(workerPodOf(pt, two, 0, "n1", corev1.PodSucceeded), "10.0.0.1"),
					withIP(workerPodOf(pt, two, 1, "n2", corev1.PodRunning), "10.0.0.2"),
				}
			},
			published: []string{"job-train-0", "job-train-1"},
			want:      []string{"job-train-0=10.0.0.1", "job-train-1=10.0.0.2"},
		},
		"ended gangs and single-worker gangs are not listed": {
			status: []v1alpha1.PhaseStatus{wrappers.PhaseIn("train", v1alpha1.PhaseSucceeded), single},
			pods: func() []corev1.Pod {
				return []corev1.Pod{
					withIP(workerPodOf(pt, two, 0, "n1", corev1.PodSucceeded), "10.0.0.1"),
					withIP(workerPodOf(pt, single, 0, "n1", corev1.PodRunning), "10.0.0.3"),
				}
			},
			published: []string{"job-train-0"},
		},
		"a deleted worker drops out": {
			status: []v1alpha1.PhaseStatus{two},
			pods: func() []corev1.Pod {
				return []corev1.Pod{
					withIP(workerPodOf(pt, two, 0, "n1", corev1.PodRunning), "10.0.0.1"),
					terminatingPod(withIP(workerPodOf(pt, two, 1, "n2", corev1.PodRunning), "10.0.0.2")),
				}
			},
			published: []string{"job-train-0", "job-train-1"},
			want:      []string{"job-train-0=10.0.0.1"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := pt.DeepCopy()
			p.Status.Phases = tc.status
			pods := tc.pods()
			ws := SyncWorkers(p, pods, nil)
			var before []Peer
			for _, pod := range pods {
				for _, name := range tc.published {
					if pod.Name == name {
						before = append(before, Peer{Pod: pod.Name, IP: pod.Status.PodIP})
					}
				}
			}
			if d := cmp.Diff(tc.want, publishedPods(PublishPeers(ws.Peers, before))); d != "" {
				t.Errorf("published (-want +got):\n%s", d)
			}
		})
	}
}

func TestBuildEndpointSlice(t *testing.T) {
	pt := wrappers.MakePT("job").Phase("train", 2).Template(func(p *corev1.PodTemplateSpec) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "nccl", ContainerPort: 29500}}
	}).Obj()
	svc := BuildService(pt)
	es := BuildEndpointSlice(pt, svc, []Peer{
		{Pod: "job-train-0", UID: "u0", Hostname: "train-0", Node: "n1", IP: "10.0.0.1"},
		{Pod: "job-train-1", UID: "u1", Hostname: "train-1", Node: "n2", IP: "fd00::1"}, // not the slice's family
	})
	if es.Name != svc.Name || es.Labels[discoveryv1.LabelServiceName] != svc.Name || es.Labels[discoveryv1.LabelManagedBy] != EndpointSliceManager {
		t.Errorf("slice %s labels %v: want the Service's name and phasegang as manager", es.Name, es.Labels)
	}
	if es.AddressType != discoveryv1.AddressTypeIPv4 {
		t.Errorf("address type %s, want the first peer's (IPv4)", es.AddressType)
	}
	want := []discoveryv1.Endpoint{{
		Addresses:  []string{"10.0.0.1"},
		Conditions: discoveryv1.EndpointConditions{Ready: new(true)},
		Hostname:   new("train-0"),
		NodeName:   new("n1"),
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "job-train-0", UID: "u0"},
	}}
	if d := cmp.Diff(want, es.Endpoints); d != "" {
		t.Errorf("endpoints (-want +got):\n%s", d)
	}
	if len(es.Ports) != 1 || *es.Ports[0].Name != "nccl" || *es.Ports[0].Port != 29500 || *es.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("ports %+v, want the Service's nccl/29500/TCP", es.Ports)
	}
	if ref := es.OwnerReferences; len(ref) != 1 || ref[0].Name != "job" || ref[0].Controller == nil || !*ref[0].Controller {
		t.Errorf("owner references %+v, want the pipeline as controller", ref)
	}
}
