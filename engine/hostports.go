package engine

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Host ports, and one worker per node
//
// A container port with a hostPort binds that port on the node, so
// kube-scheduler's NodePorts filter binds a pod only on a node where no
// other pod uses a conflicting one. The engine applies the same rule when
// it places workers, so it never reserves a placement kube-scheduler would
// refuse: a worker with host ports goes only on a node where neither the
// pods no grant covers (Node.HostPorts) nor another granted worker uses a
// conflicting port, and so at most one worker of its gang per node.
//
// A gang whose template's required pod anti-affinity on
// kubernetes.io/hostname selects its own workers (Request.OnePerNode) gets
// the same one-per-node rule, without the ports.

// HostPort is one host port a pod binds.
type HostPort struct {
	// Protocol is TCP, UDP or SCTP ("" is TCP).
	Protocol string
	Port     int32
	// HostIP is the address bound ("" or "0.0.0.0": every address).
	HostIP string
}

const bindAll = "0.0.0.0"

// Normalized fills in kube-scheduler's defaults: TCP, every address.
func (p HostPort) Normalized() HostPort {
	if p.Protocol == "" {
		p.Protocol = string(corev1.ProtocolTCP)
	}
	if p.HostIP == "" {
		p.HostIP = bindAll
	}
	return p
}

// Conflicts reports whether two host ports cannot be bound on one node,
// as kube-scheduler's NodePorts filter compares them (HostPortInfo's
// CheckConflict): same protocol and port, and the same address or either
// bound to every address.
func (p HostPort) Conflicts(q HostPort) bool {
	p, q = p.Normalized(), q.Normalized()
	if p.Port <= 0 || p.Port != q.Port || p.Protocol != q.Protocol {
		return false
	}
	return p.HostIP == q.HostIP || p.HostIP == bindAll || q.HostIP == bindAll
}

func (p HostPort) String() string {
	p = p.Normalized()
	if p.HostIP == bindAll {
		return fmt.Sprintf("%s/%d", p.Protocol, p.Port)
	}
	return fmt.Sprintf("%s/%s:%d", p.Protocol, p.HostIP, p.Port)
}

// normalizePorts returns ports with defaults filled in, sorted, without
// duplicates (nil for none).
func normalizePorts(ports []HostPort) []HostPort {
	if len(ports) == 0 {
		return nil
	}
	out := make([]HostPort, len(ports))
	for i, p := range ports {
		out[i] = p.Normalized()
	}
	slices.SortFunc(out, func(a, b HostPort) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(out)
}

// portsKey is a canonical string of normalized ports, part of a gang's
// shape: gangs with host ports fit differently from those without.
func portsKey(ports []HostPort) string {
	if len(ports) == 0 {
		return ""
	}
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = p.String()
	}
	return "hostports=" + strings.Join(parts, ",") + ";"
}

func anyConflict(a, b []HostPort) bool {
	for _, p := range a {
		for _, q := range b {
			if p.Conflicts(q) {
				return true
			}
		}
	}
	return false
}

// spread reports whether a gang's workers go at most one per node.
func (gr *gangReq) spread() bool { return len(gr.ports) > 0 || gr.req.OnePerNode }

// portBlocked marks the nodes where a worker of gr cannot go now: a pod no
// grant covers, or a granted worker (of any gang, gr's own included),
// binds a conflicting host port there, or, for a gang kept one per node,
// one of its own workers is there already. nil when gr is not spread.
func (s *State) portBlocked(gr *gangReq) []bool {
	if !gr.spread() {
		return nil
	}
	blocked := make([]bool, len(s.nodes))
	for i, n := range s.nodes {
		blocked[i] = anyConflict(gr.ports, n.ports)
	}
	if g, ok := s.grants[gr.req.Gang]; ok && gr.req.OnePerNode {
		for _, w := range g.workers {
			if w >= 0 {
				blocked[w] = true
			}
		}
	}
	for _, g := range s.portGrants {
		if !anyConflict(gr.ports, g.ports) {
			continue
		}
		for _, w := range g.workers {
			if w >= 0 {
				blocked[w] = true
			}
		}
	}
	return blocked
}

// portRoom caps a node's room for a gang with host ports: one worker at
// most, none where its ports are taken.
func portRoom(gr *gangReq, blocked []bool, i int32, room int64) int64 {
	if !gr.spread() {
		return room
	}
	if blocked != nil && blocked[i] {
		return 0
	}
	return min(room, 1)
}

// portsText renders a gang's host ports for messages.
func portsText(ports []HostPort) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = p.String()
	}
	return strings.Join(parts, ", ")
}
