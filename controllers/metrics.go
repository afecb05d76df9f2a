package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/phasegang/phasegang/engine"
)

// Metrics are phasegang's Prometheus metrics, served by the manager's
// metrics endpoint.
type Metrics struct {
	QueueLength  prometheus.Gauge
	Wait         *prometheus.HistogramVec
	ReservedGPUs prometheus.Gauge
	UsedGPUs     prometheus.Gauge
	Grants       prometheus.Counter
	Releases     prometheus.Counter
	Shrinks      prometheus.Counter
	// Moved counts workers moved off a node another pod took (or that
	// kube-scheduler refused); Displaced counts gangs released for it.
	Moved      prometheus.Counter
	Displaced  prometheus.Counter
	Infeasible prometheus.Gauge
	// Per tenant queue, as the cycle leaves it: quota, use and borrowing
	// per resource (in the resource's units: GPUs, cores, bytes), gangs
	// admitted and pending, and gangs preempted from the queue.
	QueueNominal  *prometheus.GaugeVec
	QueueUsed     *prometheus.GaugeVec
	QueueBorrowed *prometheus.GaugeVec
	QueueAdmitted *prometheus.GaugeVec
	QueuePending  *prometheus.GaugeVec
	QueuePreempts *prometheus.CounterVec
	// queues are the queues the gauges were last set for, so a deleted
	// queue's series go away instead of freezing at their last value.
	queues map[string][]string
}

// NewMetrics creates the metrics and registers them with reg (the
// manager's registry when nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = metrics.Registry
	}
	m := &Metrics{
		QueueLength: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "phasegang_queue_length", Help: "Gangs waiting for a first grant."}),
		Wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "phasegang_gang_wait_seconds", Help: "Time from a phase attempt's queueing to its grant, by phase name.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 16)}, []string{"phase"}),
		ReservedGPUs: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "phasegang_reserved_gpus", Help: "nvidia.com/gpu held by grants."}),
		UsedGPUs: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "phasegang_unmanaged_gpus", Help: "nvidia.com/gpu requested by pods phasegang does not hold a grant for."}),
		Grants: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "phasegang_grants_total", Help: "Gangs reserved."}),
		Releases: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "phasegang_releases_total", Help: "Grants released (phase ended, retried, timed out or lost a node)."}),
		Shrinks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "phasegang_surplus_shrinks_total", Help: "Elastic gangs shrunk to give surplus to an older or higher-priority gang, or to a gang past its starvation bound."}),
		Moved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "phasegang_moved_workers_total", Help: "Unbound workers moved to another node: a pod phasegang does not manage took their node, or kube-scheduler refused them there."}),
		Displaced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "phasegang_displaced_gangs_total", Help: "Gangs released and queued again because a pod phasegang does not manage took capacity of their unbound workers and no other node fit them."}),
		Infeasible: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "phasegang_infeasible_gangs", Help: "Queued gangs that cannot fit even in the empty cluster."}),
		QueueNominal: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "phasegang_tenantqueue_nominal", Help: "A TenantQueue's nominal quota of a resource (GPUs, cores, bytes)."}, []string{"queue", "resource"}),
		QueueUsed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "phasegang_tenantqueue_used", Help: "What a TenantQueue's granted gangs hold of a resource, borrowed quota included."}, []string{"queue", "resource"}),
		QueueBorrowed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "phasegang_tenantqueue_borrowed", Help: "What a TenantQueue uses of a resource beyond its nominal quota, lent by its cohort."}, []string{"queue", "resource"}),
		QueueAdmitted: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "phasegang_tenantqueue_admitted_gangs", Help: "A TenantQueue's gangs holding a grant."}, []string{"queue"}),
		QueuePending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "phasegang_tenantqueue_pending_gangs", Help: "A TenantQueue's gangs waiting for a first grant."}, []string{"queue"}),
		QueuePreempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "phasegang_tenantqueue_preempted_gangs_total", Help: "Gangs of a TenantQueue preempted whole to give borrowed quota back to a lender of its cohort."}, []string{"queue"}),
		queues: map[string][]string{},
	}
	reg.MustRegister(m.QueueLength, m.Wait, m.ReservedGPUs, m.UsedGPUs, m.Grants, m.Releases, m.Shrinks, m.Moved, m.Displaced, m.Infeasible,
		m.QueueNominal, m.QueueUsed, m.QueueBorrowed, m.QueueAdmitted, m.QueuePending, m.QueuePreempts)
	return m
}

// observeQueues sets the per-queue gauges from the cycle's queue use,
// drops the series of queues that no longer exist, and counts the
// cycle's preemptions against the victims' queues.
func (m *Metrics) observeQueues(usage []engine.QueueUsage, preemptions []engine.Preemption) {
	seen := map[string][]string{}
	for _, u := range usage {
		var names []string
		for name, v := range u.Nominal {
			res := string(name)
			names = append(names, res)
			m.QueueNominal.WithLabelValues(u.Name, res).Set(units(v))
			m.QueueUsed.WithLabelValues(u.Name, res).Set(units(u.Used[name]))
			m.QueueBorrowed.WithLabelValues(u.Name, res).Set(units(u.Borrowed[name]))
		}
		m.QueueAdmitted.WithLabelValues(u.Name).Set(float64(u.Admitted))
		m.QueuePending.WithLabelValues(u.Name).Set(float64(u.Pending))
		seen[u.Name] = names
	}
	for q, names := range m.queues {
		kept := map[string]bool{}
		for _, n := range seen[q] {
			kept[n] = true
		}
		for _, n := range names {
			if !kept[n] {
				m.QueueNominal.DeleteLabelValues(q, n)
				m.QueueUsed.DeleteLabelValues(q, n)
				m.QueueBorrowed.DeleteLabelValues(q, n)
			}
		}
		if _, ok := seen[q]; !ok {
			m.QueueAdmitted.DeleteLabelValues(q)
			m.QueuePending.DeleteLabelValues(q)
			m.QueuePreempts.DeleteLabelValues(q)
		}
	}
	m.queues = seen
	for _, p := range preemptions {
		m.QueuePreempts.WithLabelValues(p.Queue).Inc()
	}
}

// units turns an engine quantity (thousandths) into the resource's units.
func units(v int64) float64 { return float64(v) / 1000 }

const gpu engine.ResourceName = "nvidia.com/gpu"

func (m *Metrics) observeSnapshot(snap engine.Snapshot, plan engine.Plan) {
	m.QueueLength.Set(float64(len(snap.Queue) - len(plan.Reserves)))
	var reserved, used int64
	for _, g := range snap.Ledger {
		reserved += g.Footprint[gpu] * int64(len(g.Workers))
	}
	for _, r := range plan.Reserves {
		for _, q := range snap.Queue {
			if q.Gang == r.Gang {
				reserved += q.Footprint[gpu] * int64(len(r.Workers))
			}
		}
	}
	for _, n := range snap.Nodes {
		used += n.Used[gpu]
	}
	m.ReservedGPUs.Set(units(reserved))
	m.UsedGPUs.Set(units(used))
	m.Infeasible.Set(float64(len(plan.Infeasible)))
	m.observeQueues(plan.Queues, plan.Preemptions)
	for _, mv := range plan.Moves {
		m.Moved.Add(float64(len(mv.Workers)))
	}
	for _, rel := range plan.Releases {
		if rel.Reason == engine.ReleaseDisplaced {
			m.Displaced.Inc()
		}
	}
}
