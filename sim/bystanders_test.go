package sim

import (
	"testing"
)

// suiteScenarioNamed loads a workload of the policy suite by name.
func suiteScenarioNamed(t *testing.T, name string) *Scenario {
	t.Helper()
	for _, w := range SuiteWorkloads(nil) {
		if w.Name == name {
			sc, err := w.Load()
			if err != nil {
				t.Fatal(err)
			}
			return sc
		}
	}
	t.Fatalf("no suite workload %s", name)
	return nil
}

// A pipeline that can never run changes nothing for the others: beside
// two Infeasible pipelines, the three that fit finish when they do alone,
// under every gang policy, and the lower bound counts only the work that
// can run (issue 31: phasegang ran every train first and every validate
// last, average JCT +22%, and LB exceeded the makespan).
func TestInfeasiblePipelinesChangeNothingForTheOthers(t *testing.T) {
	with := suiteScenarioNamed(t, "infeasible-bystanders")
	alone := suiteScenarioNamed(t, "infeasible-bystanders-alone")
	for _, p := range []Policy{PolicyPhasegang, PolicyWholeJob, PolicyRigid, PolicyStrictFIFO} {
		w, a := run(t, with, p), run(t, alone, p)
		finish := map[string]PipelineResult{}
		for _, r := range a.Pipelines {
			finish[r.Name] = r
		}
		infeasible := 0
		for _, r := range w.Pipelines {
			want, ok := finish[r.Name]
			switch {
			case !ok:
				if r.State != StateInfeasible {
					t.Errorf("%s: %s is %s, want %s", p, r.Name, r.State, StateInfeasible)
				}
				infeasible++
			case r.Finish != want.Finish || r.State != want.State:
				t.Errorf("%s: %s %s at %v beside the Infeasible pipelines, %s at %v alone", p, r.Name, r.State, r.Finish, want.State, want.Finish)
			}
		}
		if infeasible != 2 {
			t.Errorf("%s: %d Infeasible pipelines, want 2", p, infeasible)
		}
		if mw, ma := w.Metrics, a.Metrics; mw.LowerBound != ma.LowerBound || mw.JCTAvgLowerBound != ma.JCTAvgLowerBound {
			t.Errorf("%s: LB %v, JCT avg LB %v beside them; %v, %v alone", p, mw.LowerBound, mw.JCTAvgLowerBound, ma.LowerBound, ma.JCTAvgLowerBound)
		}
	}
}

// Queue order decides between gangs of whole-node workers: the oldest
// gang of the rigid wave burst, which needs all 32 nodes and fits at
// t = 0, starts at t = 0 (issue 31: it waited its 10-minute starvation
// bound while every younger wave started), and every wave fills the
// cluster in turn.
func TestOldestWholeNodeGangIsNotPassed(t *testing.T) {
	sc := suiteScenarioNamed(t, "wave-burst-rigid")
	for _, p := range []Policy{PolicyPhasegang, PolicyRigid, PolicyStrictFIFO} {
		r := run(t, sc, p)
		for _, pr := range r.Pipelines {
			if pr.Name == "wave/w0-0-n32" && pr.Queueing != 0 {
				t.Errorf("%s: %s queued %v, want 0", p, pr.Name, pr.Queueing)
			}
		}
		if m := r.Metrics; m.Makespan != m.LowerBound {
			t.Errorf("%s: makespan %vs, LB %vs", p, m.Makespan, m.LowerBound)
		}
	}
}
