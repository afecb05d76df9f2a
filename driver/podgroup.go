package driver

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// Kubernetes' own gang API (scheduling.k8s.io/v1beta1 PodGroup, behind the
// GenericWorkload feature gate): kube-scheduler binds a group's pods only
// once minCount of them can be placed together. phasegang's grant already
// pins every worker to a node that holds it; the PodGroup closes the gap
// between the grant and the binding, where another pod can take a granted
// node: then none of the gang binds, instead of part of it.

// PodGroupName is the PodGroup of one reservation of a phase attempt. A
// requeued attempt is reserved again under a new name: a group that was
// scheduled once stays scheduled (its PodGroupInitiallyScheduled condition
// is terminal), so a fresh gang must not join it.
func PodGroupName(pt *v1alpha1.PhasedTraining, ps *v1alpha1.PhaseStatus) string {
	var at int64
	if ps.ReservedTime != nil {
		at = ps.ReservedTime.Unix()
	}
	return DNSLabel(fmt.Sprintf("%s-r%d", InstanceName(pt, ps.Name, ps.Iteration, ps.Attempt), at), 253)
}

// BuildPodGroup is the PodGroup of a reserved phase attempt: gang
// scheduling with minCount = the gang's min (an elastic gang's later
// workers join a group that is already scheduled, one by one), owned by
// the pipeline, labelled as its pods are.
func BuildPodGroup(pt *v1alpha1.PhasedTraining, ps *v1alpha1.PhaseStatus) *schedulingv1beta1.PodGroup {
	minCount := ps.Workers.Min
	if minCount <= 0 || minCount > int32(len(ps.Assignments)) {
		minCount = int32(len(ps.Assignments))
	}
	return &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name:      PodGroupName(pt, ps),
			Namespace: pt.Namespace,
			Labels:    workerLabels(pt, ps),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pt,
				v1alpha1.GroupVersion.WithKind(v1alpha1.Kind))},
		},
		Spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
				Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount},
			},
		},
	}
}

// JoinPodGroup makes a worker pod a member of its reservation's PodGroup.
func JoinPodGroup(pod *corev1.Pod, pt *v1alpha1.PhasedTraining, ps *v1alpha1.PhaseStatus) {
	name := PodGroupName(pt, ps)
	pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &name}
}

// PodGroupSync is what makes a pipeline's PodGroups match its status.
type PodGroupSync struct {
	// Create lists the groups of reserved attempts that do not exist yet;
	// they are created before the attempts' pods.
	Create []*schedulingv1beta1.PodGroup
	// Delete lists groups no reservation has any more (the phase ended,
	// or the gang was released and reserved again under a new name).
	Delete []schedulingv1beta1.PodGroup
}

// SyncPodGroups compares a pipeline's stored status with its PodGroups.
func SyncPodGroups(pt *v1alpha1.PhasedTraining, groups []schedulingv1beta1.PodGroup) PodGroupSync {
	wanted := map[string]*schedulingv1beta1.PodGroup{}
	for i := range pt.Status.Phases {
		ps := &pt.Status.Phases[i]
		if ps.State.Reserved() && len(ps.Assignments) > 0 {
			g := BuildPodGroup(pt, ps)
			wanted[g.Name] = g
		}
	}
	var sync PodGroupSync
	have := map[string]bool{}
	for _, g := range groups {
		if _, ok := wanted[g.Name]; ok {
			have[g.Name] = true
		} else if g.DeletionTimestamp == nil {
			sync.Delete = append(sync.Delete, g)
		}
	}
	for _, name := range sortedKeys(wanted) {
		if !have[name] {
			sync.Create = append(sync.Create, wanted[name])
		}
	}
	return sync
}
