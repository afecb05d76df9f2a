package driver

import (
	"testing"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

func TestWorkersSummary(t *testing.T) {
	pipeline := func() *wrappers.PT {
		return wrappers.MakePT("job").Phase("train", 2).Desired(8).Phase("eval", 1).DependsOn("train")
	}
	withDesired := func(ps v1alpha1.PhaseStatus, d int32) v1alpha1.PhaseStatus { ps.Workers.Desired = d; return ps }
	for name, tc := range map[string]struct {
		pt   *v1alpha1.PhasedTraining
		want string
	}{
		"nothing queued yet":                          {pipeline().Obj(), ""},
		"queued, desired from the spec":               {pipeline().Status(wrappers.Queued("train")).Obj(), "0/8"},
		"running elastic, desired from the status":    {pipeline().Status(withDesired(wrappers.Running("train", "n1", "n1", "n2"), 8)).Obj(), "3/8"},
		"one running and one queued phase are summed": {pipeline().Status(wrappers.Running("train", "n1", "n2"), wrappers.Queued("eval")).Obj(), "2/9"},
		"ended phases do not count": {pipeline().Status(wrappers.PhaseIn("train", v1alpha1.PhaseSucceeded),
			wrappers.PhaseIn("eval", v1alpha1.PhaseSucceeded)).Obj(), ""},
		"an older attempt does not count": {pipeline().Status(wrappers.Running("train", "n1"),
			wrappers.Attempt(wrappers.Queued("train"), 0, 1)).Obj(), "0/8"},
	} {
		st := tc.pt.Status.DeepCopy()
		setWorkersSummary(tc.pt, st)
		if st.Workers != tc.want {
			t.Errorf("%s: workers = %q, want %q", name, st.Workers, tc.want)
		}
	}
}
