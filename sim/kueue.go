package sim

import (
	"cmp"
	"slices"
	"time"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/phases"
)

// Kueue as the peer harness runs it (PolicyKueue; test/peers/kueue.go):
// one ClusterQueue whose nvidia.com/gpu nominal quota is the cluster's
// GPUs, BestEffortFIFO, no preemption, and each phase a batch/v1 Job the
// driver creates when the previous phase ends.
//
// What is modelled, and why:
//   - A phase's Workload queues at the Job's creation, not at its
//     pipeline's arrival: Kueue orders Workloads by priority, then their
//     own creation time, so a pipeline's validate queues behind every
//     train created before it.
//   - Admission checks quota only: the whole Job's GPUs against what the
//     ClusterQueue has left. Without Topology Aware Scheduling Kueue does
//     not look at nodes, so a Job can be admitted on a cluster whose free
//     GPUs are scattered.
//   - BestEffortFIFO: a Workload that does not fit is passed by the ones
//     behind it; nothing waits for it (no fence). It is parked as
//     inadmissible and tried again only when Kueue requeues its parked
//     Workloads, in a batch one second (requeueBatchPeriod,
//     pkg/cache/queue/inadmissible_workloads.go) after quota is given
//     back; a Workload created meanwhile is tried at once. On the peer
//     harness's second-long phases that second reorders admissions: a
//     validate created as a train ends goes in before the older train
//     that waited.
//   - Once admitted, the Job's pods go to kube-scheduler one at a time,
//     as per-pod's do: they may wait on fragmented nodes, holding the
//     quota and the GPUs of the pods already placed (partial gangs), and
//     the phase runs once all its pods are placed.
//   - Quota comes back when the phase ends (the Job finishes).

// kueueAdmission is PolicyKueue's ClusterQueue.
type kueueAdmission struct {
	// quota is the ClusterQueue's GPUs; used what admitted Jobs hold.
	quota, used float64
	pending     []*kueueWorkload
	admitted    map[kueueKey]float64
	// seq breaks ties between Workloads created at the same instant in
	// creation order.
	seq int
	// requeueing: a requeue of the parked Workloads is due.
	requeueing bool
}

// kueueRequeueBatch is Kueue v0.17.0's requeueBatchPeriod.
const kueueRequeueBatch = time.Second

type kueueKey struct {
	p  *pipeRun
	in phases.Instance
}

// kueueWorkload is a phase's Job waiting for admission.
type kueueWorkload struct {
	kueueKey
	req     engine.Request
	created time.Duration
	seq     int
	gpus    float64
	// parked: tried and found inadmissible; not tried again until the
	// next requeue.
	parked bool
}

func newKueueAdmission(gpus int64) *kueueAdmission {
	return &kueueAdmission{quota: float64(gpus), admitted: map[kueueKey]float64{}}
}

// queue adds a phase attempt's Workload, created now.
func (k *kueueAdmission) queue(p *pipeRun, in phases.Instance, req engine.Request, now time.Duration) {
	k.seq++
	k.pending = append(k.pending, &kueueWorkload{
		kueueKey: kueueKey{p, in}, req: req, created: now, seq: k.seq,
		gpus: float64(req.Desired) * p.c.gpus[in.Name],
	})
}

// forget drops a phase attempt's Workload, queued or admitted, and
// reports whether that gave quota back.
func (k *kueueAdmission) forget(p *pipeRun, in phases.Instance) bool {
	key := kueueKey{p, in}
	k.pending = slices.DeleteFunc(k.pending, func(w *kueueWorkload) bool { return w.kueueKey == key })
	gpus, ok := k.admitted[key]
	if ok {
		delete(k.admitted, key)
		k.used -= gpus
	}
	return ok
}

// admit takes the pending Workloads in Kueue's order and admits each
// that fits the quota left, passing the ones that do not.
func (k *kueueAdmission) admit() []*kueueWorkload {
	slices.SortFunc(k.pending, func(a, b *kueueWorkload) int {
		return cmp.Or(cmp.Compare(b.req.Priority, a.req.Priority), cmp.Compare(a.created, b.created), cmp.Compare(a.seq, b.seq))
	})
	var out []*kueueWorkload
	k.pending = slices.DeleteFunc(k.pending, func(w *kueueWorkload) bool {
		if w.parked {
			return false
		}
		if k.used+w.gpus > k.quota+1e-9 {
			w.parked = true
			return false
		}
		k.used += w.gpus
		k.admitted[w.kueueKey] = w.gpus
		out = append(out, w)
		return true
	})
	return out
}

// unpark makes every parked Workload a candidate again.
func (k *kueueAdmission) unpark() {
	k.requeueing = false
	for _, w := range k.pending {
		w.parked = false
	}
}

// kueueQuotaBack is quota given back: the parked Workloads are requeued
// one batch period later.
func (s *simulator) kueueQuotaBack() {
	if !s.kueue.requeueing {
		s.kueue.requeueing = true
		s.push(s.now+kueueRequeueBatch, event{kind: evKueueRequeue})
	}
	s.kueueAdmit()
}

// kueueAdmit admits what fits and creates the admitted Jobs' pods.
func (s *simulator) kueueAdmit() {
	for _, w := range s.kueue.admit() {
		s.submitPods(w.p, w.in, w.req)
	}
}
