package phases

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

const (
	Pending   = v1alpha1.PhasePending
	Queued    = v1alpha1.PhaseQueued
	Running   = v1alpha1.PhaseRunning
	Succeeded = v1alpha1.PhaseSucceeded
	Failed    = v1alpha1.PhaseFailed
	Skipped   = v1alpha1.PhaseSkipped
)

func linear() *wrappers.PT {
	return wrappers.MakePT("p").
		Phase("train", 8).
		Phase("validate", 2).DependsOn("train").Outputs("accuracy").
		Phase("test", 1).DependsOn("validate")
}

func diamond() *wrappers.PT {
	return wrappers.MakePT("p").
		Phase("prep", 1).
		Phase("a", 2).DependsOn("prep").
		Phase("b", 2).DependsOn("prep").
		Phase("join", 1).DependsOn("a", "b")
}

func loopPT(max int32) *wrappers.PT {
	return wrappers.MakePT("p").
		Phase("prep", 1).
		Phase("train", 8).DependsOn("prep").
		Phase("validate", 2).DependsOn("train").Outputs("accuracy").
		Phase("test", 1).DependsOn("validate").
		Iterate(max, "float(phases.validate.outputs.accuracy) >= 0.9", "train", "validate")
}

func allOK(n int32) Observation { return Observation{Granted: n, Succeeded: n} }

func ended(in Instance, state v1alpha1.PhaseState, msg string, w v1alpha1.WorkerCounts, outs ...string) Ending {
	e := Ending{Instance: in, State: state, Message: msg, Workers: w}
	if state == Failed {
		e.Reason = v1alpha1.ReasonPhaseFailed
	}
	if len(outs) > 0 {
		e.Outputs = map[string]string{}
		for i := 0; i+1 < len(outs); i += 2 {
			e.Outputs[outs[i]] = outs[i+1]
		}
	}
	return e
}

func wc(min, granted, running, succeeded, failed int32) v1alpha1.WorkerCounts {
	return v1alpha1.WorkerCounts{Min: min, Desired: min, Granted: granted, Running: running, Succeeded: succeeded, Failed: failed}
}

type outcome struct {
	state       v1alpha1.PipelineState
	reason, msg string
}

func running(msg string) outcome {
	return outcome{v1alpha1.PipelineRunning, v1alpha1.ReasonPhaseRunning, msg}
}

func final(st v1alpha1.PipelineState, reason, msg string) outcome { return outcome{st, reason, msg} }

func TestNext(t *testing.T) {
	type tc struct {
		pt     *wrappers.PT
		status *v1alpha1.PhasedTrainingStatus
		obs    Observations
		now    time.Duration // after wrappers.T0
		want   Step
	}
	withState := func(s Step, o outcome) Step {
		s.State, s.Reason, s.Message = o.state, o.reason, o.msg
		return s
	}
	tests := map[string]tc{
		"linear: empty status queues the first phase": {
			pt:   linear(),
			want: withState(Step{Queue: []Instance{{"train", 0, 0}}}, running("train")),
		},
		"linear: nothing observed, nothing decided": {
			pt:     linear(),
			status: wrappers.Status(wrappers.MakePS("train", Running)),
			want:   withState(Step{}, running("train")),
		},
		"linear: train succeeds, validate queued": {
			pt:     linear(),
			status: wrappers.Status(wrappers.MakePS("train", Running)),
			obs:    Observations{Instance{"train", 0, 0}: allOK(8)},
			want: withState(Step{
				End:   []Ending{ended(Instance{"train", 0, 0}, Succeeded, "all 8 workers succeeded", wc(8, 8, 0, 8, 0))},
				Queue: []Instance{{"validate", 0, 0}},
			}, running("validate")),
		},
		"linear: last phase succeeds, pipeline succeeds": {
			pt: linear(),
			status: wrappers.Status(wrappers.MakePS("train", Succeeded), wrappers.MakePS("validate", Succeeded).Outputs("accuracy", "0.9"),
				wrappers.MakePS("test", Running)),
			obs: Observations{Instance{"test", 0, 0}: allOK(1)},
			want: withState(Step{
				End: []Ending{ended(Instance{"test", 0, 0}, Succeeded, "all 1 workers succeeded", wc(1, 1, 0, 1, 0))},
			}, final(v1alpha1.PipelineSucceeded, v1alpha1.ReasonAllPhasesEnded, "every phase succeeded or was skipped")),
		},
		"diamond: prep succeeds, both branches queued": {
			pt:     diamond(),
			status: wrappers.Status(wrappers.MakePS("prep", Running)),
			obs:    Observations{Instance{"prep", 0, 0}: allOK(1)},
			want: withState(Step{
				End:   []Ending{ended(Instance{"prep", 0, 0}, Succeeded, "all 1 workers succeeded", wc(1, 1, 0, 1, 0))},
				Queue: []Instance{{"a", 0, 0}, {"b", 0, 0}},
			}, running("a,b")),
		},
		"diamond: join waits for both branches": {
			pt:     diamond(),
			status: wrappers.Status(wrappers.MakePS("prep", Succeeded), wrappers.MakePS("a", Running), wrappers.MakePS("b", Running)),
			obs:    Observations{Instance{"a", 0, 0}: allOK(2)},
			want: withState(Step{
				End: []Ending{ended(Instance{"a", 0, 0}, Succeeded, "all 2 workers succeeded", wc(2, 2, 0, 2, 0))},
			}, running("b")),
		},
		"diamond: join queued after both": {
			pt:     diamond(),
			status: wrappers.Status(wrappers.MakePS("prep", Succeeded), wrappers.MakePS("a", Succeeded), wrappers.MakePS("b", Running)),
			obs:    Observations{Instance{"b", 0, 0}: allOK(2)},
			want: withState(Step{
				End:   []Ending{ended(Instance{"b", 0, 0}, Succeeded, "all 2 workers succeeded", wc(2, 2, 0, 2, 0))},
				Queue: []Instance{{"join", 0, 0}},
			}, running("join")),
		},
		"when reads outputs: skipped, dependents still run": {
			pt: wrappers.MakePT("p").
				Phase("validate", 2).Outputs("accuracy").
				Phase("retrain", 8).DependsOn("validate").When("float(phases.validate.outputs.accuracy) < 0.9").
				Phase("deploy", 1).DependsOn("retrain"),
			status: wrappers.Status(wrappers.MakePS("validate", Running)),
			obs:    Observations{Instance{"validate", 0, 0}: {Granted: 2, Succeeded: 2, Outputs: map[string]string{"accuracy": "0.95", "junk": "x"}}},
			want: withState(Step{
				End:   []Ending{ended(Instance{"validate", 0, 0}, Succeeded, "all 2 workers succeeded", wc(2, 2, 0, 2, 0), "accuracy", "0.95")},
				Skip:  []Skip{{Instance: Instance{"retrain", 0, 0}, Message: "when was false: float(phases.validate.outputs.accuracy) < 0.9"}},
				Queue: []Instance{{"deploy", 0, 0}},
			}, running("deploy")),
		},
		"when reads a missing output: expression error fails the pipeline": {
			pt: wrappers.MakePT("p").
				Phase("validate", 2).Outputs("accuracy").
				Phase("retrain", 8).DependsOn("validate").When("float(phases.validate.outputs.accuracy) < 0.9"),
			status: wrappers.Status(wrappers.MakePS("validate", Succeeded)),
			want: withState(Step{}, final(v1alpha1.PipelineFailed, v1alpha1.ReasonExpressionError,
				"spec.phases[1].when: phase retrain: phases.validate.outputs.accuracy has no value: phase validate (Succeeded) did not report it (1:31)")),
		},
		"retry: failed attempt queues the next attempt": {
			pt:     wrappers.MakePT("p").Phase("train", 8).Retries(2),
			status: wrappers.Status(wrappers.MakePS("train", Running)),
			obs:    Observations{Instance{"train", 0, 0}: {Granted: 8, Running: 7, Failed: 1}},
			want: withState(Step{
				End:   []Ending{ended(Instance{"train", 0, 0}, Failed, "1 of 8 workers failed", wc(8, 8, 7, 0, 1))},
				Queue: []Instance{{"train", 0, 1}},
			}, running("train")),
		},
		"retry: second attempt succeeds": {
			pt:     wrappers.MakePT("p").Phase("train", 8).Retries(2).Phase("test", 1).DependsOn("train"),
			status: wrappers.Status(wrappers.MakePS("train", Failed), wrappers.MakePS("train", Running).Attempt(0, 1)),
			obs:    Observations{Instance{"train", 0, 1}: allOK(8)},
			want: withState(Step{
				End:   []Ending{ended(Instance{"train", 0, 1}, Succeeded, "all 8 workers succeeded", wc(8, 8, 0, 8, 0))},
				Queue: []Instance{{"test", 0, 0}},
			}, running("test")),
		},
		"retry exhausted: pipeline fails naming the phase": {
			pt:     wrappers.MakePT("p").Phase("train", 8).Retries(1).Phase("test", 1).DependsOn("train"),
			status: wrappers.Status(wrappers.MakePS("train", Failed), wrappers.MakePS("train", Running).Attempt(0, 1)),
			obs:    Observations{Instance{"train", 0, 1}: {Granted: 8, Failed: 2, Running: 6}},
			want: withState(Step{
				End: []Ending{ended(Instance{"train", 0, 1}, Failed, "2 of 8 workers failed", wc(8, 8, 6, 0, 2))},
			}, final(v1alpha1.PipelineFailed, v1alpha1.ReasonPhaseFailed, "phase train failed after 2 attempt(s): 2 of 8 workers failed")),
		},
		"iterate: until false, next iteration starts": {
			pt: loopPT(5),
			status: wrappers.Status(wrappers.MakePS("prep", Succeeded), wrappers.MakePS("train", Succeeded),
				wrappers.MakePS("validate", Running)),
			obs: Observations{Instance{"validate", 0, 0}: {Granted: 2, Succeeded: 2, Outputs: map[string]string{"accuracy": "0.5"}}},
			want: withState(Step{
				End:       []Ending{ended(Instance{"validate", 0, 0}, Succeeded, "all 2 workers succeeded", wc(2, 2, 0, 2, 0), "accuracy", "0.5")},
				Queue:     []Instance{{"train", 1, 0}},
				Iteration: 1,
			}, running("train")),
		},
		"iterate: early stop via until, downstream queued": {
			pt: loopPT(5),
			status: wrappers.Status(wrappers.MakePS("prep", Succeeded), wrappers.MakePS("train", Succeeded), wrappers.MakePS("validate", Succeeded).Outputs("accuracy", "0.5"),
				wrappers.MakePS("train", Succeeded).Attempt(1, 0), wrappers.MakePS("validate", Running).Attempt(1, 0)),
			obs: Observations{Instance{"validate", 1, 0}: {Granted: 2, Succeeded: 2, Outputs: map[string]string{"accuracy": "0.93"}}},
			want: withState(Step{
				End:       []Ending{ended(Instance{"validate", 1, 0}, Succeeded, "all 2 workers succeeded", wc(2, 2, 0, 2, 0), "accuracy", "0.93")},
				Queue:     []Instance{{"test", 0, 0}},
				Iteration: 1,
			}, running("test")),
		},
		"iterate: maxIterations reached, downstream queued": {
			pt: loopPT(2),
			status: wrappers.Status(wrappers.MakePS("prep", Succeeded), wrappers.MakePS("train", Succeeded), wrappers.MakePS("validate", Succeeded).Outputs("accuracy", "0.5"),
				wrappers.MakePS("train", Succeeded).Attempt(1, 0), wrappers.MakePS("validate", Succeeded).Attempt(1, 0).Outputs("accuracy", "0.6")),
			want: withState(Step{
				Queue:     []Instance{{"test", 0, 0}},
				Iteration: 1,
			}, running("test")),
		},
		"iterate: loop done and downstream ended: succeeded with why": {
			pt: loopPT(2),
			status: wrappers.Status(wrappers.MakePS("prep", Succeeded), wrappers.MakePS("train", Succeeded), wrappers.MakePS("validate", Succeeded).Outputs("accuracy", "0.5"),
				wrappers.MakePS("train", Succeeded).Attempt(1, 0), wrappers.MakePS("validate", Succeeded).Attempt(1, 0).Outputs("accuracy", "0.95"), wrappers.MakePS("test", Succeeded)),
			want: withState(Step{Iteration: 1}, final(v1alpha1.PipelineSucceeded, v1alpha1.ReasonAllPhasesEnded,
				"every phase succeeded or was skipped; the loop ended: iterate.until was true after iteration 1")),
		},
		"iterate: downstream sees the last iteration": {
			pt: wrappers.MakePT("p").
				Phase("train", 8).
				Phase("validate", 2).DependsOn("train").Outputs("accuracy").
				Phase("test", 1).DependsOn("validate").
				When(`iteration == 1 && phases.validate.iteration == 1 && phases.validate.outputs.accuracy == "0.6"`).
				Iterate(2, "", "train", "validate"),
			status: wrappers.Status(wrappers.MakePS("train", Succeeded), wrappers.MakePS("validate", Succeeded).Outputs("accuracy", "0.5"),
				wrappers.MakePS("train", Succeeded).Attempt(1, 0), wrappers.MakePS("validate", Succeeded).Attempt(1, 0).Outputs("accuracy", "0.6")),
			want: withState(Step{Queue: []Instance{{"test", 0, 0}}, Iteration: 1}, running("test")),
		},
		"iterate: until error fails the pipeline": {
			pt: loopPT(3),
			status: wrappers.Status(wrappers.MakePS("prep", Succeeded), wrappers.MakePS("train", Succeeded),
				wrappers.MakePS("validate", Succeeded)),
			want: withState(Step{}, final(v1alpha1.PipelineFailed, v1alpha1.ReasonExpressionError,
				"spec.iterate.until: after iteration 0: phases.validate.outputs.accuracy has no value: phase validate (Succeeded) did not report it (1:31)")),
		},
		"chief policy: chief succeeded while others run": {
			pt:     wrappers.MakePT("p").Phase("train", 4).SuccessPolicy("Chief"),
			status: wrappers.Status(wrappers.MakePS("train", Running)),
			obs:    Observations{Instance{"train", 0, 0}: {Granted: 4, Running: 3, Succeeded: 1, ChiefSucceeded: true}},
			want: withState(Step{
				End: []Ending{ended(Instance{"train", 0, 0}, Succeeded, "worker 0 (chief) succeeded", wc(4, 4, 3, 1, 0))},
			}, final(v1alpha1.PipelineSucceeded, v1alpha1.ReasonAllPhasesEnded, "every phase succeeded or was skipped")),
		},
		"chief policy: other workers failing do not matter": {
			pt:     wrappers.MakePT("p").Phase("train", 4).SuccessPolicy("Chief"),
			status: wrappers.Status(wrappers.MakePS("train", Running)),
			obs:    Observations{Instance{"train", 0, 0}: {Granted: 4, Running: 1, Failed: 3}},
			want:   withState(Step{}, running("train")),
		},
		"chief policy: chief failed": {
			pt:     wrappers.MakePT("p").Phase("train", 4).SuccessPolicy("Chief"),
			status: wrappers.Status(wrappers.MakePS("train", Running)),
			obs:    Observations{Instance{"train", 0, 0}: {Granted: 4, Running: 3, Failed: 1, ChiefFailed: true}},
			want: withState(Step{
				End: []Ending{ended(Instance{"train", 0, 0}, Failed, "worker 0 (chief) failed", wc(4, 4, 3, 0, 1))},
			}, final(v1alpha1.PipelineFailed, v1alpha1.ReasonPhaseFailed, "phase train failed after 1 attempt(s): worker 0 (chief) failed")),
		},
		"expr policy: 2 of 5 is not half (float division)": {
			pt:     wrappers.MakePT("p").Phase("train", 5).SuccessPolicy("succeeded >= workers / 2"),
			status: wrappers.Status(wrappers.MakePS("train", Running)),
			obs:    Observations{Instance{"train", 0, 0}: {Granted: 5, Running: 3, Succeeded: 2}},
			want:   withState(Step{}, running("train")),
		},
		"expr policy: 3 of 5 succeeds": {
			pt:     wrappers.MakePT("p").Phase("train", 5).SuccessPolicy("succeeded >= workers / 2"),
			status: wrappers.Status(wrappers.MakePS("train", Running)),
			obs:    Observations{Instance{"train", 0, 0}: {Granted: 5, Running: 2, Succeeded: 3}},
			want: withState(Step{
				End: []Ending{ended(Instance{"train", 0, 0}, Succeeded, "successPolicy was true: succeeded >= workers / 2", wc(5, 5, 2, 3, 0))},
			}, final(v1alpha1.PipelineSucceeded, v1alpha1.ReasonAllPhasesEnded, "every phase succeeded or was skipped")),
		},
		"expr policy: false with every worker ended fails": {
			pt:     wrappers.MakePT("p").Phase("train", 5).SuccessPolicy("succeeded >= workers / 2"),
			status: wrappers.Status(wrappers.MakePS("train", Running)),
			obs:    Observations{Instance{"train", 0, 0}: {Granted: 5, Succeeded: 2, Failed: 3}},
			want: withState(Step{
				End: []Ending{ended(Instance{"train", 0, 0}, Failed, "successPolicy was false with every worker ended (2 succeeded, 3 failed of 5): succeeded >= workers / 2", wc(5, 5, 0, 2, 3))},
			}, final(v1alpha1.PipelineFailed, v1alpha1.ReasonPhaseFailed, "phase train failed after 1 attempt(s): successPolicy was false with every worker ended (2 succeeded, 3 failed of 5): succeeded >= workers / 2")),
		},
		"expr policy: missing output waits while workers run": {
			pt:     wrappers.MakePT("p").Phase("eval", 2).Outputs("loss").SuccessPolicy("float(outputs.loss) < 1"),
			status: wrappers.Status(wrappers.MakePS("eval", Running)),
			obs:    Observations{Instance{"eval", 0, 0}: {Granted: 2, Running: 1, Succeeded: 1}},
			want:   withState(Step{}, running("eval")),
		},
		"expr policy: missing output after every worker ended is an expression error": {
			pt:     wrappers.MakePT("p").Phase("eval", 2).Outputs("loss").SuccessPolicy("float(outputs.loss) < 1"),
			status: wrappers.Status(wrappers.MakePS("eval", Running)),
			obs:    Observations{Instance{"eval", 0, 0}: {Granted: 2, Succeeded: 2}},
			want: withState(Step{}, final(v1alpha1.PipelineFailed, v1alpha1.ReasonExpressionError,
				"spec.phases[0].successPolicy: phase eval: outputs.loss has no value: no worker of phase eval reported it yet (1:15)")),
		},
		"timeout: running too long fails the attempt": {
			pt:     wrappers.MakePT("p").Phase("train", 8).Timeout(time.Hour),
			status: wrappers.Status(wrappers.MakePS("train", Running).Reserved(wrappers.T0).Started(wrappers.T0.Add(time.Minute))),
			now:    time.Hour + 2*time.Minute,
			want: withState(Step{
				End: []Ending{{Instance: Instance{"train", 0, 0}, State: Failed, Reason: v1alpha1.ReasonPhaseTimedOut, Message: "timed out after 1h0m0s (spec.phases[0].timeout)"}},
			}, final(v1alpha1.PipelineFailed, v1alpha1.ReasonPhaseTimedOut, "phase train failed after 1 attempt(s): timed out after 1h0m0s (spec.phases[0].timeout)")),
		},
		"timeout: not yet, wake at the deadline": {
			pt:     wrappers.MakePT("p").Phase("train", 8).Timeout(time.Hour),
			status: wrappers.Status(wrappers.MakePS("train", Running).Reserved(wrappers.T0).Started(wrappers.T0.Add(time.Minute))),
			now:    30 * time.Minute,
			want:   withState(Step{Wake: wrappers.T0.Add(time.Hour + time.Minute + time.Nanosecond)}, running("train")),
		},
		"start timeout: first one backs off 10s and quotes what the gang waits for": {
			pt:     wrappers.MakePT("p").Phase("train", 8).StartTimeout(5 * time.Minute),
			status: wrappers.Status(wrappers.MakePS("train", Running).Reserved(wrappers.T0).WaitingFor(`worker 3: Unschedulable: persistentvolumeclaim "ckpt" not found`)),
			now:    6 * time.Minute,
			want: withState(Step{
				Requeue: []Requeue{{Instance: Instance{"train", 0, 0}, Cause: v1alpha1.PhaseEventStartTimeout, NotBefore: wrappers.T0.Add(6*time.Minute + 10*time.Second), StartFailures: 1,
					Message: `start failure 1 of at most 3: not every worker was running 5m0s after the gang was reserved (worker 3: Unschedulable: persistentvolumeclaim "ckpt" not found); the gang was released and queued again with a 10s backoff`}},
				Wake: wrappers.T0.Add(6*time.Minute + 10*time.Second + time.Nanosecond),
			}, running("train")),
		},
		"start timeout: third one backs off 40s": {
			pt:     wrappers.MakePT("p").Phase("train", 8).StartTimeout(5 * time.Minute),
			status: wrappers.Status(wrappers.MakePS("train", Running).Reserved(wrappers.T0).StartFailures(2)),
			now:    6 * time.Minute,
			want: withState(Step{
				Requeue: []Requeue{{Instance: Instance{"train", 0, 0}, Cause: v1alpha1.PhaseEventStartTimeout, NotBefore: wrappers.T0.Add(6*time.Minute + 40*time.Second), StartFailures: 3,
					Message: "start failure 3 of at most 3: not every worker was running 5m0s after the gang was reserved; the gang was released and queued again with a 40s backoff"}},
				Wake: wrappers.T0.Add(6*time.Minute + 40*time.Second + time.Nanosecond),
			}, running("train")),
		},
		"start timeout past startBackoffLimit fails the attempt with the last reason": {
			pt:     wrappers.MakePT("p").Phase("train", 8).StartTimeout(5 * time.Minute).StartBackoffLimit(1),
			status: wrappers.Status(wrappers.MakePS("train", Running).Reserved(wrappers.T0).StartFailures(1).WaitingFor("worker 0: container main: ImagePullBackOff")),
			now:    6 * time.Minute,
			want: withState(Step{
				End: []Ending{{Instance: Instance{"train", 0, 0}, State: Failed, Reason: v1alpha1.ReasonStartFailed,
					Message: "did not start after 2 tries (spec.phases[0].startBackoffLimit: 1): not every worker was running 5m0s after the gang was reserved (worker 0: container main: ImagePullBackOff)"}},
			}, final(v1alpha1.PipelineFailed, v1alpha1.ReasonStartFailed,
				"phase train failed after 1 attempt(s): did not start after 2 tries (spec.phases[0].startBackoffLimit: 1): not every worker was running 5m0s after the gang was reserved (worker 0: container main: ImagePullBackOff)")),
		},
		"a refused pod releases the gang with backoff": {
			pt:     wrappers.MakePT("p").Phase("train", 8),
			status: wrappers.Status(wrappers.MakePS("train", Running).Reserved(wrappers.T0)),
			obs:    Observations{Instance{"train", 0, 0}: {Granted: 8, Running: 3, Refused: `pods "p-train-0-0-w3" is forbidden: exceeded quota: gpu-quota`}},
			now:    time.Minute,
			want: withState(Step{
				Requeue: []Requeue{{Instance: Instance{"train", 0, 0}, Cause: v1alpha1.PhaseEventFailedCreate, NotBefore: wrappers.T0.Add(time.Minute + 10*time.Second), StartFailures: 1,
					Message: `start failure 1 of at most 3: the API server refused a worker's pod: pods "p-train-0-0-w3" is forbidden: exceeded quota: gpu-quota; the gang was released and queued again with a 10s backoff`}},
				Wake: wrappers.T0.Add(time.Minute + 10*time.Second + time.Nanosecond),
			}, running("train")),
		},
		"a pod refused for good fails the attempt, and maxRetries applies": {
			pt:     wrappers.MakePT("p").Phase("train", 8).Retries(1),
			status: wrappers.Status(wrappers.MakePS("train", Running).Reserved(wrappers.T0)),
			obs:    Observations{Instance{"train", 0, 0}: {Granted: 8, Refused: `Pod "x" is invalid: spec.containers[0].image: Required value`, RefusedForGood: true}},
			now:    time.Minute,
			want: withState(Step{
				End: []Ending{{Instance: Instance{"train", 0, 0}, State: Failed, Reason: v1alpha1.ReasonStartFailed,
					Message: `did not start: the API server refused a worker's pod: Pod "x" is invalid: spec.containers[0].image: Required value`}},
				Queue: []Instance{{"train", 0, 1}},
			}, running("train")),
		},
		"a lost worker releases the whole gang and requeues the same attempt at once": {
			pt:     wrappers.MakePT("p").Phase("train", 8),
			status: wrappers.Status(wrappers.MakePS("train", Running).Reserved(wrappers.T0).Started(wrappers.T0.Add(time.Minute)).StartFailures(2)),
			obs:    Observations{Instance{"train", 0, 0}: {Granted: 8, Running: 6, Lost: 2, LostReason: "worker 2: PreemptionByScheduler: preempted by ml/urgent"}},
			now:    10 * time.Minute,
			want: withState(Step{
				Requeue: []Requeue{{Instance: Instance{"train", 0, 0}, Cause: v1alpha1.PhaseEventWorkerLost, NotBefore: wrappers.T0.Add(10 * time.Minute),
					Message: "2 workers were lost (worker 2: PreemptionByScheduler: preempted by ml/urgent); the gang was released whole and queued again"}},
			}, running("train")),
		},
		"a gang that met its success policy ends even if a worker was lost after": {
			pt:     wrappers.MakePT("p").Phase("train", 2).SuccessPolicy("Chief"),
			status: wrappers.Status(wrappers.MakePS("train", Running).Reserved(wrappers.T0).Started(wrappers.T0.Add(time.Minute))),
			obs:    Observations{Instance{"train", 0, 0}: {Granted: 2, Succeeded: 1, ChiefSucceeded: true, Lost: 1}},
			now:    10 * time.Minute,
			want: withState(Step{
				End: []Ending{ended(Instance{"train", 0, 0}, Succeeded, "worker 0 (chief) succeeded", wc(2, 2, 0, 1, 0))},
			}, final(v1alpha1.PipelineSucceeded, v1alpha1.ReasonAllPhasesEnded, "every phase succeeded or was skipped")),
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			p := wrappers.Compiled(t, Compile, tt.pt.Obj())
			st := tt.status
			if st == nil {
				st = &v1alpha1.PhasedTrainingStatus{}
			}
			before := st.DeepCopy()
			got := p.Next(st, tt.obs, wrappers.T0.Add(tt.now))
			if d := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("Next (-want +got):\n%s", d)
			}
			if d := cmp.Diff(before, st); d != "" {
				t.Errorf("Next changed its input status:\n%s", d)
			}
			// Idempotence: once applied, the same call decides nothing more.
			if got.State != v1alpha1.PipelineFailed {
				p.Apply(st, got, wrappers.T0.Add(tt.now))
				again := p.Next(st, tt.obs, wrappers.T0.Add(tt.now))
				again.Wake = time.Time{}
				want := Step{Iteration: got.Iteration, State: got.State, Reason: got.Reason, Message: got.Message}
				if d := cmp.Diff(want, again, cmpopts.EquateEmpty()); d != "" {
					t.Errorf("Next after Apply is not empty (-want +got):\n%s", d)
				}
			}
		})
	}
}

func TestStartBackoff(t *testing.T) {
	got := []time.Duration{}
	for n := 1; n <= 8; n++ {
		got = append(got, StartBackoff(n))
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 320 * time.Second, 10 * time.Minute, 10 * time.Minute}
	if d := cmp.Diff(want, got); d != "" {
		t.Error(d)
	}
}
