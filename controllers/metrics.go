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
			Name: "phasegang_surplus_shrinks_total", Help: "Elastic gangs shrunk to give surplus to an older or higher-priority gang."}),
		Moved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "phasegang_moved_workers_total", Help: "Unbound workers moved to another node: a pod phasegang does not manage took their node, or kube-scheduler refused them there."}),
		Displaced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "phasegang_displaced_gangs_total", Help: "Gangs released and queued again because a pod phasegang does not manage took capacity of their unbound workers and no other node fit them."}),
		Infeasible: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "phasegang_infeasible_gangs", Help: "Queued gangs that cannot fit even in the empty cluster."}),
	}
	reg.MustRegister(m.QueueLength, m.Wait, m.ReservedGPUs, m.UsedGPUs, m.Grants, m.Releases, m.Shrinks, m.Moved, m.Displaced, m.Infeasible)
	return m
}

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
	m.ReservedGPUs.Set(float64(reserved) / 1000)
	m.UsedGPUs.Set(float64(used) / 1000)
	m.Infeasible.Set(float64(len(plan.Infeasible)))
	for _, mv := range plan.Moves {
		m.Moved.Add(float64(len(mv.Workers)))
	}
	for _, rel := range plan.Releases {
		if rel.Reason == engine.ReleaseDisplaced {
			m.Displaced.Inc()
		}
	}
}
