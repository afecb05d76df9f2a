//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// A running pipeline's phases and iterate are immutable, as a Job's
// template is: the real API server refuses an edit of either with a
// message that names the field, and accepts edits that leave them alone
// (labels, priority) while the gang runs.
func TestPhasesAndIterateAreImmutable(t *testing.T) {
	ns := namespace(t)
	nodes(t, "pool-immutable", 1, 4)
	pt := create(t, wrappers.NewPT(ns, "frozen").
		Phase("train", 2).PodTemplate(worker("pool-immutable", 1, 600, "")).
		Phase("validate", 1).PodTemplate(worker("pool-immutable", 1, 1, `{"accuracy": 0.5}`)).DependsOn("train").
		With(func(p *v1alpha1.Phase) { p.Outputs = []string{"accuracy"} }).
		Iterate(3, "float(phases.validate.outputs.accuracy) >= 0.9", "train", "validate").Obj())
	eventually(t, 30*time.Second, "train running", func() (bool, error) {
		return get(t, pt).Status.State == v1alpha1.PipelineRunning, nil
	})

	// The controller writes the status meanwhile: an update on a stale
	// resourceVersion is tried again on the current object.
	update := func(edit func(*v1alpha1.PhasedTraining)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := get(t, pt)
			edit(cur)
			return k8s.Update(context.Background(), cur)
		})
	}
	for name, edit := range map[string]func(*v1alpha1.PhasedTraining){
		"labels":   func(p *v1alpha1.PhasedTraining) { p.Labels = map[string]string{"team": "vision"} },
		"priority": func(p *v1alpha1.PhasedTraining) { p.Spec.Priority = ptr.To[int32](10) },
	} {
		if err := update(edit); err != nil {
			t.Errorf("%s: the API server refused an edit that leaves phases and iterate alone: %v", name, err)
		}
	}
	for name, c := range map[string]struct {
		edit        func(*v1alpha1.PhasedTraining)
		field, rule string
	}{
		"a running phase's workers": {func(p *v1alpha1.PhasedTraining) { p.Spec.Phases[0].Gang.Min = 4 }, "spec.phases", "phases are immutable"},
		"its image":                 {func(p *v1alpha1.PhasedTraining) { p.Spec.Phases[0].Template.Spec.Containers[0].Image = "other:2" }, "spec.phases", "phases are immutable"},
		"maxIterations":             {func(p *v1alpha1.PhasedTraining) { p.Spec.Iterate.MaxIterations = 10 }, "spec.iterate", "iterate is immutable"},
	} {
		err := update(c.edit)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.field+": Invalid value") || !strings.Contains(err.Error(), c.rule) {
			t.Errorf("%s: got %v, want Invalid at %s with %q", name, err, c.field, c.rule)
		}
	}
	if cur := get(t, pt); cur.Spec.Phases[0].Gang.Min != 2 || cur.Spec.Iterate.MaxIterations != 3 || cur.Labels["team"] != "vision" {
		t.Errorf("stored spec after the edits: min %d, maxIterations %d, labels %v", cur.Spec.Phases[0].Gang.Min, cur.Spec.Iterate.MaxIterations, cur.Labels)
	}
}
