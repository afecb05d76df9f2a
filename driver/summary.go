package driver

import (
	"fmt"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// setWorkersSummary derives status.workers (kubectl get pt's Workers
// column) from the phases: the granted and desired workers of the queued
// and running latest attempts, summed, as "granted/desired"; empty when
// none is queued or running.
func setWorkersSummary(pt *v1alpha1.PhasedTraining, st *v1alpha1.PhasedTrainingStatus) {
	var granted, desired int32
	active := false
	for i := range st.Phases {
		ps := &st.Phases[i]
		if ps.State != v1alpha1.PhaseQueued && !ps.State.Reserved() {
			continue
		}
		if st.Phase(ps.Name, ps.Iteration) != ps {
			continue // an older attempt
		}
		active = true
		granted += int32(len(ps.Assignments))
		if ps.Workers.Desired > 0 {
			desired += ps.Workers.Desired
		} else if phase := PhaseSpec(pt, ps.Name); phase != nil {
			desired += phase.Gang.DesiredOrMin()
		}
	}
	st.Workers = ""
	if active {
		st.Workers = fmt.Sprintf("%d/%d", granted, desired)
	}
}
