package engine

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// class returns the nodes that pass a gang's constraints, computed with
// kube-scheduler's own helpers (required node affinity incl. nodeSelector,
// taints and tolerations, cordon) so the engine never reserves a node the
// scheduler would then refuse.
//
// The verdict (gr.infeasible) also covers the gang's quotas: a gang whose
// Min workers need more than a quota's hard limit could never be admitted
// into its namespace, whatever else ends.
func (s *State) class(gr *gangReq) *nodeClass {
	if gr.nodesVersion == s.nodesVersion && gr.quotaVerdict == s.quotasVersion+1 {
		return gr.class
	}
	if gr.nodesVersion != s.nodesVersion {
		c := s.classOf(gr)
		gr.class, gr.nodeInfeasible, gr.nodesVersion = c, s.infeasibility(gr, c), s.nodesVersion
	}
	gr.infeasible = gr.nodeInfeasible
	if gr.infeasible == "" {
		gr.infeasible = s.quotaInfeasibility(gr)
	}
	if gr.infeasible == "" {
		gr.infeasible = s.queueInfeasibility(gr)
	}
	gr.quotaVerdict = s.quotasVersion + 1
	return gr.class
}

func (s *State) classOf(gr *gangReq) *nodeClass {
	if c, ok := s.classes[gr.classKey]; ok {
		return c
	}
	c := &nodeClass{infeasible: map[string]string{}}
	cons := gr.req.Constraints
	affinity := nodeaffinity.NewRequiredNodeAffinity(cons.NodeSelector, cons.Affinity)
	for i, n := range s.nodes {
		if ok, err := affinity.Match(n.k8s); err != nil || !ok {
			c.rejectedAffinity++
			continue
		}
		if n.node.Unschedulable && !tolerates(cons.Tolerations, &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}) {
			c.rejectedCordon++
			continue
		}
		if _, untolerated := v1helper.FindMatchingUntoleratedTaint(klog.Background(), n.node.Taints, cons.Tolerations, schedulingTaint, false); untolerated {
			c.rejectedTaint++
			continue
		}
		c.nodes = append(c.nodes, int32(i))
	}
	s.classes[gr.classKey] = c
	return c
}

// schedulingTaint selects the taints kube-scheduler's TaintToleration filter
// enforces; PreferNoSchedule only scores.
func schedulingTaint(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

func tolerates(tols []corev1.Toleration, t *corev1.Taint) bool {
	return v1helper.TolerationsTolerateTaint(klog.Background(), tols, t, false)
}

// infeasibility says why a gang cannot fit even in the empty cluster, or ""
// if it can. "Empty" means every node's allocatable, ignoring what runs on
// it now: those pods and grants end, allocatable does not.
func (s *State) infeasibility(gr *gangReq, c *nodeClass) string {
	key := fmt.Sprintf("%s/%d", gr.fpKey, gr.req.Min)
	if msg, ok := c.infeasible[key]; ok {
		return msg
	}
	msg := s.computeInfeasibility(gr, c)
	c.infeasible[key] = msg
	return msg
}

func (s *State) computeInfeasibility(gr *gangReq, c *nodeClass) string {
	if len(c.nodes) == 0 {
		return fmt.Sprintf("no node matches the worker's constraints: %d nodes in the cluster, %d rejected by nodeSelector/affinity, %d by untolerated taints, %d cordoned",
			len(s.nodes), c.rejectedAffinity, c.rejectedTaint, c.rejectedCordon)
	}
	for _, f := range gr.fp {
		any := false
		for _, n := range s.nodes {
			if n.alloc[f.dim] > 0 {
				any = true
				break
			}
		}
		if !any {
			return fmt.Sprintf("each worker needs %s %s, and no node has that resource",
				FormatAmount(s.dimNames[f.dim], f.amt), s.dimNames[f.dim])
		}
	}
	var total, largest int64
	need := int64(gr.req.Min)
	for _, i := range c.nodes {
		k := portRoom(gr, nil, i, capOf(s.nodes[i].alloc, gr.fp, need))
		total += k
		largest = max(largest, k)
	}
	if largest == 0 {
		for _, f := range gr.fp {
			if m := maxAlloc(s, c, f.dim); m < f.amt {
				return fmt.Sprintf("each worker needs %s %s, but the largest of the %d matching nodes has %s allocatable",
					FormatAmount(s.dimNames[f.dim], f.amt), s.dimNames[f.dim], len(c.nodes), FormatAmount(s.dimNames[f.dim], m))
			}
		}
		return fmt.Sprintf("no matching node has room for one worker of %s, even empty", FormatResources(s.resourceList(gr.fp)))
	}
	if total < need && gr.req.OnePerNode && len(gr.ports) == 0 {
		return fmt.Sprintf("needs %d workers at once, and its required pod anti-affinity (kubernetes.io/hostname) allows at most one per node, but %d of the %d matching nodes can hold a worker of %s even when empty",
			need, total, len(c.nodes), FormatResources(s.resourceList(gr.fp)))
	}
	if total < need && len(gr.ports) > 0 {
		return fmt.Sprintf("needs %d workers at once, each binding host port %s, so at most one per node, but %d of the %d matching nodes can hold a worker of %s even when empty",
			need, portsText(gr.ports), total, len(c.nodes), FormatResources(s.resourceList(gr.fp)))
	}
	if total < need {
		return fmt.Sprintf("needs %d workers of %s at once, but the %d matching nodes hold at most %d even when empty",
			need, FormatResources(s.resourceList(gr.fp)), len(c.nodes), total)
	}
	if gr.req.Topology != nil {
		return s.topoInfeasibility(gr, c)
	}
	return ""
}

func maxAlloc(s *State, c *nodeClass, dim int) int64 {
	var m int64
	for _, i := range c.nodes {
		m = max(m, s.nodes[i].alloc[dim])
	}
	return m
}

func (s *State) resourceList(fp []dimAmt) ResourceList {
	rl := make(ResourceList, len(fp))
	for _, f := range fp {
		rl[s.dimNames[f.dim]] = f.amt
	}
	return rl
}

// capOf is how many workers of footprint fp fit in vector v, capped at limit.
func capOf(v []int64, fp []dimAmt, limit int64) int64 {
	k := limit
	for _, f := range fp {
		if q := v[f.dim] / f.amt; q < k {
			k = q
			if k <= 0 {
				return 0
			}
		}
	}
	return k
}
