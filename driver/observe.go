package driver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/phases"
)

// Workers is what was observed of one running phase attempt's workers.
type Workers struct {
	phases.Observation
	// Started is when the last of the gang's workers started, once every
	// granted worker has (zero until then). It is read from the workers
	// themselves, so it is the same whenever it is observed.
	Started time.Time
	// Waiting says why the first worker that has not started waits, read
	// from its pod (kube-scheduler's PodScheduled message, a container's
	// waiting reason such as ImagePullBackOff); empty when none waits.
	Waiting string
}

// Observations maps running phase attempts to what was seen of them.
type Observations map[phases.Instance]Workers

// phases returns the state machine's view of the observations.
func (o Observations) phases() phases.Observations {
	out := make(phases.Observations, len(o))
	for in, w := range o {
		out[in] = w.Observation
	}
	return out
}

// PodInstance reads which phase attempt and worker a managed pod is.
func PodInstance(p *corev1.Pod) (phases.Instance, int32, bool) {
	it, err1 := strconv.Atoi(p.Labels[LabelIteration])
	at, err2 := strconv.Atoi(p.Labels[LabelAttempt])
	idx, ok := WorkerIndex(p)
	if err1 != nil || err2 != nil || !ok || p.Labels[LabelPhase] == "" {
		return phases.Instance{}, 0, false
	}
	return phases.Instance{Name: p.Labels[LabelPhase], Iteration: int32(it), Attempt: int32(at)}, idx, true
}

// WorkerIndex reads a managed pod's worker index label.
func WorkerIndex(p *corev1.Pod) (int32, bool) {
	v, ok := p.Labels[LabelWorker]
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(v)
	return int32(i), err == nil
}

// Observe reads a pipeline's worker pods: for every running phase attempt
// of st, how many of its granted workers run, succeeded and failed, their
// declared outputs, and when the last of them started.
func Observe(pl *phases.Pipeline, st *v1alpha1.PhasedTrainingStatus, pods []corev1.Pod, now time.Time) Observations {
	byInstance := podsByInstance(pods)
	obs := Observations{}
	for i := range st.Phases {
		ps := &st.Phases[i]
		if !ps.State.Reserved() || len(ps.Assignments) == 0 {
			continue
		}
		in := phases.Instance{Name: ps.Name, Iteration: ps.Iteration, Attempt: ps.Attempt}
		var declared []string
		if c := pl.Phase(ps.Name); c != nil {
			declared = c.Outputs()
		}
		obs[in] = observeGang(ps, byInstance[in], declared, now)
	}
	return obs
}

func podsByInstance(pods []corev1.Pod) map[phases.Instance]map[int32]*corev1.Pod {
	out := map[phases.Instance]map[int32]*corev1.Pod{}
	for i := range pods {
		in, idx, ok := PodInstance(&pods[i])
		if !ok {
			continue
		}
		if out[in] == nil {
			out[in] = map[int32]*corev1.Pod{}
		}
		out[in][idx] = &pods[i]
	}
	return out
}

// observeGang counts one gang's workers by their pods.
func observeGang(ps *v1alpha1.PhaseStatus, pods map[int32]*corev1.Pod, declared []string, now time.Time) Workers {
	o := Workers{Observation: phases.Observation{Granted: int32(len(ps.Assignments))}}
	var lastStart time.Time
	for idx := int32(0); idx < int32(len(ps.Assignments)); idx++ {
		p := pods[idx]
		if why := lostWorker(ps, idx, p); why != "" {
			if o.Lost++; o.LostReason == "" {
				o.LostReason = fmt.Sprintf("worker %d: %s", idx, why)
			}
			continue
		}
		if p == nil || p.DeletionTimestamp != nil || p.Spec.NodeName != ps.Assignments[idx] && p.Spec.NodeName != "" {
			// A terminating pod is an old gang's (a requeue reuses
			// names), not this one's.
			if why := missingWorker(p, ps.Assignments[idx]); o.Waiting == "" && why != "" {
				o.Waiting = fmt.Sprintf("worker %d: %s", idx, why)
			}
			continue
		}
		switch p.Status.Phase {
		case corev1.PodRunning:
			o.Running++
		case corev1.PodSucceeded:
			o.Succeeded++
			o.Outputs = mergeOutputs(o.Outputs, p, declared)
			o.ChiefSucceeded = o.ChiefSucceeded || idx == 0
		case corev1.PodFailed:
			o.Failed++
			o.Outputs = mergeOutputs(o.Outputs, p, declared)
			o.ChiefFailed = o.ChiefFailed || idx == 0
		default:
			if why := PodWaiting(p); o.Waiting == "" && why != "" {
				o.Waiting = fmt.Sprintf("worker %d: %s", idx, why)
			}
			continue // not started yet
		}
		if t := workerStart(p); t.After(lastStart) {
			lastStart = t
		}
	}
	if o.Running+o.Succeeded+o.Failed == o.Granted {
		if lastStart.IsZero() || lastStart.After(now) {
			lastStart = now
		}
		o.Started = lastStart
	}
	return o
}

// lostWorker says how a worker of this gang was lost to someone else, or
// "" when it was not: its pod carries a DisruptionTarget condition
// (kube-scheduler's preemption, the eviction API, the kubelet's
// node-pressure eviction, the taint manager), was evicted, is being
// deleted while the gang holds it (phasegang deletes a running gang's
// pods only after releasing it), or is gone after the gang started. A
// pod of an earlier gang of the same attempt (created before this
// reservation) is not this gang's.
func lostWorker(ps *v1alpha1.PhaseStatus, idx int32, p *corev1.Pod) string {
	if p == nil {
		if idx < sizeAtStart(ps) {
			return "its pod was deleted"
		}
		return ""
	}
	if !ofThisGang(p, ps) {
		return ""
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return strings.TrimSpace(fmt.Sprintf("%s: %s (pod %s)", c.Reason, c.Message, p.Name))
		}
	}
	switch {
	case p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted":
		return fmt.Sprintf("Evicted: %s (pod %s)", p.Status.Message, p.Name)
	case p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed:
		return fmt.Sprintf("pod %s was deleted", p.Name)
	}
	return ""
}

// ofThisGang tells this reservation's pod from an earlier gang's of the
// same name (a requeued attempt reuses its pod names), by creation time;
// times in the API have whole seconds.
func ofThisGang(p *corev1.Pod, ps *v1alpha1.PhaseStatus) bool {
	return ps.ReservedTime == nil || !p.CreationTimestamp.Time.Before(ps.ReservedTime.Time.Truncate(time.Second))
}

// sizeAtStart is how many of the gang's workers have had pods ever since
// it started: a missing pod among them was deleted, while one an elastic
// gang added since (or gave back and got again) may simply not be created
// yet. 0 before the start, and when the history no longer tells.
func sizeAtStart(ps *v1alpha1.PhaseStatus) int32 {
	if ps.StartTime == nil {
		return 0
	}
	size := int32(-1)
	for _, e := range ps.History {
		switch {
		case e.Type == v1alpha1.PhaseEventShrink && size >= 0:
			size = min(size, e.Workers)
		case e.Time.After(ps.StartTime.Time):
		case e.Type == v1alpha1.PhaseEventReserved, e.Type == v1alpha1.PhaseEventGrow:
			size = e.Workers
		}
	}
	if size < 0 {
		return 0
	}
	return min(size, int32(len(ps.Assignments)))
}

// missingWorker says why a granted worker has no pod of its own, or ""
// when its pod is simply not created yet (the reconcile that follows a
// grant creates it: saying so would cost a status write per grant).
func missingWorker(p *corev1.Pod, node string) string {
	switch {
	case p == nil:
		return ""
	case p.DeletionTimestamp != nil:
		return "an earlier pod of the same name is still terminating"
	default:
		return fmt.Sprintf("its pod is bound to %s, not to its reserved node %s", p.Spec.NodeName, node)
	}
}

// PodWaiting says why a pod that has not started waits, in the words of
// whoever holds it: kube-scheduler (PodScheduled false: "0/2 nodes are
// available: persistentvolumeclaim "ckpt" not found"), the kubelet (a
// container waiting: "ImagePullBackOff: Back-off pulling image ..."), or
// "" while nobody has said anything is wrong (a pod just created, an
// image being pulled): the status changes only when there is a reason.
//
// A message that says the same thing twice is said once (see
// dedupeSentences): kube-scheduler's can repeat a reason.
func PodWaiting(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return strings.TrimSpace(c.Reason + ": " + dedupeSentences(c.Message))
		}
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" && w.Reason != "ContainerCreating" {
			msg := w.Reason
			if w.Message != "" {
				msg += ": " + dedupeSentences(w.Message)
			}
			return fmt.Sprintf("container %s: %s", cs.Name, msg)
		}
	}
	return ""
}

// dedupeSentences drops the sentences of msg that repeat an earlier one:
// an equal sentence, or one that is only the end of an earlier one.
// kube-scheduler joins its PreFilter, Filter and PostFilter plugins'
// messages with ". ", and several of them can give the same reason
// ("persistentvolumeclaim "ckpt" not found. not found."): each reason is
// said once, in its first and fullest words.
func dedupeSentences(msg string) string {
	parts := strings.Split(msg, ". ")
	if len(parts) < 2 {
		return msg
	}
	var kept []string
	for i, p := range parts {
		key := strings.TrimSpace(p)
		if i == len(parts)-1 {
			key = strings.TrimSpace(strings.TrimSuffix(key, "."))
		}
		if key == "" || slices.ContainsFunc(kept, func(k string) bool { return k == key || strings.HasSuffix(k, " "+key) }) {
			continue
		}
		kept = append(kept, key)
	}
	out := strings.Join(kept, ". ")
	if strings.HasSuffix(strings.TrimSpace(msg), ".") {
		out += "."
	}
	return out
}

// workerStart is when a started pod's containers started (the latest of
// them); zero when the pod does not say.
func workerStart(p *corev1.Pod) time.Time {
	var t time.Time
	for _, cs := range p.Status.ContainerStatuses {
		var s time.Time
		switch {
		case cs.State.Running != nil:
			s = cs.State.Running.StartedAt.Time
		case cs.State.Terminated != nil:
			s = cs.State.Terminated.StartedAt.Time
		}
		if s.After(t) {
			t = s
		}
	}
	return t
}

// mergeOutputs reads a worker's termination message (a JSON object) and
// keeps the declared keys not already set by a lower-index worker.
func mergeOutputs(out map[string]string, p *corev1.Pod, declared []string) map[string]string {
	if len(declared) == 0 {
		return out
	}
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil || t.Message == "" {
			continue
		}
		// UseNumber keeps a number's text as the worker wrote it (a
		// float64 would round big integers).
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(t.Message))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			continue
		}
		for _, k := range declared {
			v, ok := m[k]
			if !ok {
				continue
			}
			if out == nil {
				out = map[string]string{}
			}
			if _, set := out[k]; set {
				continue
			}
			switch x := v.(type) {
			case string:
				out[k] = x
			case json.Number:
				out[k] = x.String()
			default:
				b, _ := json.Marshal(x)
				out[k] = string(b)
			}
		}
	}
	return out
}
