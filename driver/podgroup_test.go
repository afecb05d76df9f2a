package driver

import (
	"testing"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// Every reserved attempt has a PodGroup (minCount = its gang's min) that
// its pods join; a group no reservation has any more goes, and a gang
// reserved again gets a group of a new name.
func TestSyncPodGroups(t *testing.T) {
	train := wrappers.Running("train", "n1", "n2", "n3")
	train.Workers.Min = 2
	train.ReservedTime = wrappers.Time(now)
	pt := wrappers.MakePT("job").Phase("train", 2).Desired(3).Phase("test", 1).
		Status(train, wrappers.Queued("test")).Obj()
	pt.Namespace = "ml"

	sync := SyncPodGroups(pt, nil)
	if len(sync.Create) != 1 || len(sync.Delete) != 0 {
		t.Fatalf("sync = %+v, want one group to create", sync)
	}
	g := sync.Create[0]
	if g.Name != PodGroupName(pt, &pt.Status.Phases[0]) || g.Namespace != "ml" || g.Spec.SchedulingPolicy.Gang == nil || g.Spec.SchedulingPolicy.Gang.MinCount != 2 {
		t.Errorf("group %s/%s, policy %+v; want the gang's, minCount 2", g.Namespace, g.Name, g.Spec.SchedulingPolicy)
	}
	if len(g.OwnerReferences) != 1 || g.OwnerReferences[0].Kind != v1alpha1.Kind || g.Labels[LabelPhase] != "train" {
		t.Errorf("group owners %+v, labels %v; want the pipeline and the gang's labels", g.OwnerReferences, g.Labels)
	}
	pod := BuildWorkerPod(pt, PhaseSpec(pt, "train"), &pt.Status.Phases[0], 0, "n1", 3)
	JoinPodGroup(pod, pt, &pt.Status.Phases[0])
	if sg := pod.Spec.SchedulingGroup; sg == nil || sg.PodGroupName == nil || *sg.PodGroupName != g.Name {
		t.Errorf("pod's schedulingGroup = %+v, want %s", sg, g.Name)
	}

	if sync := SyncPodGroups(pt, []schedulingv1beta1.PodGroup{*g}); len(sync.Create)+len(sync.Delete) != 0 {
		t.Errorf("an existing group is synced again: %+v", sync)
	}

	// Released and reserved again: the old group goes, a new one comes.
	again := pt.DeepCopy()
	again.Status.Phases[0].ReservedTime = wrappers.Time(now.Add(time.Minute))
	sync = SyncPodGroups(again, []schedulingv1beta1.PodGroup{*g})
	if len(sync.Create) != 1 || sync.Create[0].Name == g.Name || len(sync.Delete) != 1 || sync.Delete[0].Name != g.Name {
		t.Errorf("after a new reservation: %+v, want the old group deleted and a new one", sync)
	}
	// The phase ended: its group goes.
	ended := pt.DeepCopy()
	ended.Status.Phases[0].State = v1alpha1.PhaseSucceeded
	if sync := SyncPodGroups(ended, []schedulingv1beta1.PodGroup{*g}); len(sync.Create) != 0 || len(sync.Delete) != 1 {
		t.Errorf("after the phase ended: %+v, want its group deleted", sync)
	}
}
