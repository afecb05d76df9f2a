package driver

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

func TestMissingClass(t *testing.T) {
	classes := Priorities{"research": 1000}
	for name, tc := range map[string]struct {
		pt   *v1alpha1.PhasedTraining
		want string
	}{
		"no class":                        {wrappers.MakePT("a").Phase("t", 1).Obj(), ""},
		"an existing class":               {wrappers.MakePT("a").PriorityClass("research").Phase("t", 1).Obj(), ""},
		"a missing class":                 {wrappers.MakePT("a").PriorityClass("nope").Phase("t", 1).Obj(), "nope"},
		"spec.priority wins over a class": {wrappers.MakePT("a").Priority(5).PriorityClass("nope").Phase("t", 1).Obj(), ""},
	} {
		if got := MissingClass(&tc.pt.Spec, classes); got != tc.want {
			t.Errorf("%s: MissingClass = %q, want %q", name, got, tc.want)
		}
	}
}

// A pipeline naming a missing PriorityClass is not queued: its queued
// phase says what it waits for, the Queued condition repeats it, one
// Warning Event tells it; the next cycle writes nothing; once the class
// exists it is queued again.
func TestApplyPlanMissingClass(t *testing.T) {
	pt := wrappers.MakePT("job").PriorityClass("research").Phase("train", 2).Status(wrappers.Queued("train")).Obj()
	d := &Demand{}
	d.Add(pt, Priorities{"other": 1})
	if len(d.Queue) != 0 || len(d.Upcoming) != 0 || len(d.NoClass) != 1 {
		t.Fatalf("demand: queue %d, upcoming %d, no class %d; want 0, 0, 1", len(d.Queue), len(d.Upcoming), len(d.NoClass))
	}
	changes := Changes{}
	ApplyPlan(engine.Plan{}, d, now, changes)
	c := changes["ns/job"]
	if c == nil {
		t.Fatal("no change for ns/job")
	}
	want := `waits for PriorityClass "research", which does not exist (create it, or set spec.priority)`
	if got := c.Status.Phases[0].WaitingFor; got != want {
		t.Errorf("waitingFor = %q, want %q", got, want)
	}
	cond := meta.FindStatusCondition(c.Status.Conditions, string(v1alpha1.ConditionQueued))
	if cond == nil || cond.Status != "True" || cond.Reason != v1alpha1.ReasonWaitingForPriorityClass || !strings.Contains(cond.Message, `PriorityClass "research"`) {
		t.Errorf("Queued condition = %+v, want True, %s, naming the class", cond, v1alpha1.ReasonWaitingForPriorityClass)
	}
	if c.Status.State != v1alpha1.PipelineQueued {
		t.Errorf("state = %s, want Queued", c.Status.State)
	}
	if len(c.Events) != 1 || c.Events[0].Reason != ReasonPriorityClassNotFound || !strings.Contains(c.Events[0].Message, "phase train "+want) {
		t.Errorf("events = %+v, want one %s naming the class", c.Events, ReasonPriorityClassNotFound)
	}

	// A step of the pipeline (Advance, which knows no PriorityClass)
	// keeps saying what it waits for.
	pt.Status = *c.Status
	if cond := meta.FindStatusCondition(Advance(wrappers.Compiled(t, Compile, pt), pt, nil, now).Status.Conditions, string(v1alpha1.ConditionQueued)); cond == nil || cond.Reason != v1alpha1.ReasonWaitingForPriorityClass {
		t.Errorf("after Advance, Queued condition = %+v, want reason %s", cond, v1alpha1.ReasonWaitingForPriorityClass)
	}

	// The next cycle, from the written status, changes nothing.
	d = &Demand{}
	d.Add(pt, Priorities{"other": 1})
	changes = Changes{}
	ApplyPlan(engine.Plan{}, d, now, changes)
	if len(changes) != 0 {
		t.Errorf("a second cycle changed %v", changes.Keys())
	}

	// The class appears: the phase is queued at its value.
	d = &Demand{}
	d.Add(pt, Priorities{"research": 1000})
	if len(d.NoClass) != 0 || len(d.Queue) != 1 || d.Queue[0].Priority != 1000 {
		t.Errorf("with the class: no class %d, queue %+v; want the phase queued at 1000", len(d.NoClass), d.Queue)
	}
}
