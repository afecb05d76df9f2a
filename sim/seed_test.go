package sim

import (
	"testing"
)

// The built-in scenario (`phasegang simulate`, the README's first command)
// shows each policy's failure mode, as the README says: per-pod deadlocks
// when three pipelines arrive at once; whole-job holds idle GPUs and ends
// later; per-phase-rigid releases them but its rigid trains cannot use
// them, so it ends no sooner; phasegang finishes everything first.
func TestBuiltInScenarioTellsPoliciesApart(t *testing.T) {
	sc := loadScenario(t, "../examples/simulate/seed-deadlock.yaml")
	m := map[Policy]Metrics{}
	for _, p := range Policies {
		m[p] = run(t, sc, p).Metrics
	}
	pg, pod, whole, rigid := m[PolicyPhasegang], m[PolicyPerPod], m[PolicyWholeJob], m[PolicyRigid]
	for _, c := range []struct {
		what string
		ok   bool
	}{
		{"per-pod deadlocks after finishing some", pod.Deadlocked > 0 && pod.Finished > 0 && pod.Finished < pod.Pipelines},
		{"the gang policies finish everything", pg.Finished == pg.Pipelines && whole.Finished == whole.Pipelines && rigid.Finished == rigid.Pipelines},
		{"whole-job holds idle GPUs, the per-phase gang policies none", whole.IdleGPUh > 0 && pg.IdleGPUh == 0 && rigid.IdleGPUh == 0},
		{"phasegang has the shortest makespan", pg.Makespan < whole.Makespan && pg.Makespan < rigid.Makespan},
		{"phasegang has the lowest mean JCT and queueing", pg.JCTAvg < whole.JCTAvg && pg.JCTAvg < rigid.JCTAvg && pg.QueuedAvg < whole.QueuedAvg && pg.QueuedAvg < rigid.QueuedAvg},
		{"phasegang uses the GPUs best", pg.Utilization > whole.Utilization && pg.Utilization > rigid.Utilization},
		{"rigid trains end no sooner than whole-job", rigid.Makespan >= whole.Makespan},
	} {
		if !c.ok {
			t.Errorf("%s: no\nphasegang %+v\nper-pod %+v\nwhole-job %+v\nper-phase-rigid %+v", c.what, pg, pod, whole, rigid)
		}
	}
}
