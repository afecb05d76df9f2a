package driver

import (
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/phases"
)

// Peers: the pipeline's EndpointSlice
//
// A pipeline's headless Service has no selector; phasegang writes its one
// EndpointSlice itself. With a selector, kube-controller-manager keeps an
// Endpoints and an EndpointSlice up to date on every worker pod change
// (each pod's IP, readiness, end): in the scale benchmark that was 1.2 API
// writes per pod. phasegang knows when a gang is complete, so it publishes
// a gang's workers once every one of them has an IP (they wait for each
// other at their rendezvous anyway) and removes them when their gang ends
// (or a worker is deleted: a shrink, a requeue): about one write per gang
// start, resize and end. A worker that has ended stays listed while its
// gang still runs, unlike the endpoints kube-controller-manager keeps
// (which drop a pod as it ends): a gang's workers end within seconds of
// each other, its rendezvous is over by then, and dropping them one by one
// cost a write per worker.

// EndpointSliceManager is the endpointslice.kubernetes.io/managed-by
// value of the slices phasegang writes (kube-controller-manager leaves
// slices managed by others alone).
const EndpointSliceManager = "phasegang.dev"

// Peer is one worker published in the pipeline's EndpointSlice.
type Peer struct {
	Pod      string
	UID      types.UID
	Hostname string
	Node     string
	IP       string
	// Gang is the phase attempt the worker belongs to (not published).
	Gang phases.Instance
}

// peerPods lists the existing pods, not being deleted, of wanted workers
// (those of running gangs) whose gangs have peers, by pod name, with their
// IP ("" when they have none yet). A worker that ended is still listed:
// it leaves with its gang.
func peerPods(pods []corev1.Pod, wanted map[string]Worker) []Peer {
	var out []Peer
	for i := range pods {
		p := &pods[i]
		w, ok := wanted[p.Name]
		if !ok || p.Labels[LabelPeers] != "true" || p.DeletionTimestamp != nil {
			continue
		}
		out = append(out, Peer{
			Pod: p.Name, UID: p.UID, Hostname: p.Spec.Hostname, Node: p.Spec.NodeName, IP: p.Status.PodIP,
			Gang: phases.Instance{Name: w.Status.Name, Iteration: w.Status.Iteration, Attempt: w.Status.Attempt},
		})
	}
	slices.SortFunc(out, func(a, b Peer) int { return strings.Compare(a.Pod, b.Pod) })
	return out
}

// PublishPeers is what the EndpointSlice lists next, given the live peer
// pods (WorkerSync.Peers) and what it lists now (nil after a restart): a
// gang whose workers all have an IP is listed whole; of a gang still
// waiting for some IPs (starting, or growing), only the workers listed
// now stay listed, so growth never takes running workers out of DNS.
// Workers of ended gangs and deleted workers drop out.
func PublishPeers(live, published []Peer) []Peer {
	complete := map[phases.Instance]bool{}
	for _, p := range live {
		if _, seen := complete[p.Gang]; !seen {
			complete[p.Gang] = true
		}
		if p.IP == "" {
			complete[p.Gang] = false
		}
	}
	was := map[string]string{}
	for _, p := range published {
		was[p.Pod] = p.IP
	}
	var out []Peer
	for _, p := range live {
		if complete[p.Gang] || (p.IP != "" && was[p.Pod] == p.IP) {
			out = append(out, p)
		}
	}
	return out
}

// BuildEndpointSlice is the EndpointSlice of the pipeline's Service (svc,
// for its ports) listing peers, all ready: like the Service's
// publishNotReadyAddresses, peers must resolve each other while they
// start. Its address type is the first peer's IP family (IPv4 when there
// is none); a peer of the other family is left out (a dual-stack
// cluster's pods all have a primary IP of the same family).
func BuildEndpointSlice(pt *v1alpha1.PhasedTraining, svc *corev1.Service, peers []Peer) *discoveryv1.EndpointSlice {
	family := discoveryv1.AddressTypeIPv4
	if len(peers) > 0 && isIPv6(peers[0].IP) {
		family = discoveryv1.AddressTypeIPv6
	}
	labels := serviceLabels(pt)
	labels[discoveryv1.LabelServiceName] = svc.Name
	labels[discoveryv1.LabelManagedBy] = EndpointSliceManager
	es := &discoveryv1.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: discoveryv1.SchemeGroupVersion.String(), Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{
			Name: svc.Name, Namespace: pt.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pt,
				v1alpha1.GroupVersion.WithKind(v1alpha1.Kind))},
		},
		AddressType: family,
		Endpoints:   []discoveryv1.Endpoint{},
		Ports:       []discoveryv1.EndpointPort{},
	}
	for _, sp := range svc.Spec.Ports {
		es.Ports = append(es.Ports, discoveryv1.EndpointPort{Name: new(sp.Name), Port: new(sp.Port), Protocol: new(protocolOrTCP(sp.Protocol))})
	}
	for _, p := range peers {
		if isIPv6(p.IP) != (family == discoveryv1.AddressTypeIPv6) {
			continue
		}
		e := discoveryv1.Endpoint{
			Addresses:  []string{p.IP},
			Conditions: discoveryv1.EndpointConditions{Ready: new(true)},
			Hostname:   new(p.Hostname),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pt.Namespace, Name: p.Pod, UID: p.UID},
		}
		if p.Node != "" {
			e.NodeName = new(p.Node)
		}
		es.Endpoints = append(es.Endpoints, e)
	}
	return es
}

func isIPv6(ip string) bool {
	parsed := net.ParseIP(ip)
	return parsed != nil && parsed.To4() == nil
}

func protocolOrTCP(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}
