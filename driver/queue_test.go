package driver

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

func TestQueues(t *testing.T) {
	deleting := wrappers.MakeQueue("gone").Nominal("nvidia.com/gpu", "1").Obj()
	deleting.DeletionTimestamp = &metav1.Time{}
	got := Queues([]v1alpha1.TenantQueue{
		wrappers.MakeQueue("team-a").Cohort("research").
			Nominal("nvidia.com/gpu", "8").Borrowing("4").Lending("6").
			Nominal("cpu", "1500m").Weight("2").Reclaim(v1alpha1.PreemptAny).ReclaimGrace(90 * time.Second).Obj(),
		wrappers.MakeQueue("default").Nominal("pods", "10").Obj(),
		deleting,
	})
	v := func(milli int64) *int64 { return &milli }
	grace := 90 * time.Second
	want := []engine.Queue{
		{Name: "team-a", Cohort: "research", Weight: 2000, Reclaim: engine.ReclaimAny, ReclaimGrace: &grace, Resources: map[engine.ResourceName]engine.QueueQuota{
			"nvidia.com/gpu": {Nominal: 8000, BorrowingLimit: v(4000), LendingLimit: v(6000)},
			"cpu":            {Nominal: 1500},
		}},
		{Name: "default", Resources: map[engine.ResourceName]engine.QueueQuota{"pods": {Nominal: 10000}}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Queues (-want +got):\n%s", d)
	}
}

func TestQueueStatus(t *testing.T) {
	tq := wrappers.MakeQueue("team-a").Cohort("research").Nominal("nvidia.com/gpu", "4").Nominal("cpu", "16").Obj()
	tq.Generation = 3
	got := QueueStatus(&tq, engine.QueueUsage{
		Name:     "team-a",
		Nominal:  engine.ResourceList{"nvidia.com/gpu": 4000, "cpu": 16000},
		Used:     engine.ResourceList{"nvidia.com/gpu": 6000, "cpu": 500},
		Borrowed: engine.ResourceList{"nvidia.com/gpu": 2000},
		Admitted: 2, Pending: 1,
	})
	want := v1alpha1.TenantQueueStatus{
		ObservedGeneration: 3,
		Resources: []v1alpha1.QueueResourceUsage{
			{Name: "cpu", Nominal: resource.MustParse("16"), Used: resource.MustParse("500m"), Borrowed: resource.MustParse("0")},
			{Name: "nvidia.com/gpu", Nominal: resource.MustParse("4"), Used: resource.MustParse("6"), Borrowed: resource.MustParse("2")},
		},
		Usage:        "cpu: 500m/16, nvidia.com/gpu: 6/4 (2 borrowed)",
		PendingGangs: 1, AdmittedGangs: 2,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("QueueStatus (-want +got):\n%s", d)
	}
}

// TestRequestCarriesQueueName: the engine learns a pipeline's queue from
// spec.queueName, for every phase.
func TestRequestCarriesQueueName(t *testing.T) {
	pt := wrappers.MakePT("job").Queue("team-a").Phase("train", 2).GPUs(1).Phase("test", 1).GPUs(1).DependsOn("train").Obj()
	for _, r := range Upcoming(pt, nil) {
		if r.Queue != "team-a" {
			t.Errorf("%s: queue %q, want team-a", r.Gang, r.Queue)
		}
	}
}
