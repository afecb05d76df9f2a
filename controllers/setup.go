package controllers

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/phasegang/phasegang/engine"
)

// Options configure the controllers.
type Options struct {
	Engine   engine.Config
	Interval time.Duration
	Tracer   PhaseTracer
}

// Setup adds phasegang's scheduler and reconciler to a manager.
func Setup(mgr ctrl.Manager, o Options) error {
	m := NewMetrics(nil)
	rec := mgr.GetEventRecorder("phasegang")
	sched := &Scheduler{Client: mgr.GetClient(), Recorder: rec, Config: o.Engine, Interval: o.Interval, Metrics: m, Tracer: o.Tracer}
	if err := sched.SetupWithManager(mgr); err != nil {
		return err
	}
	r := &Reconciler{Client: mgr.GetClient(), Recorder: rec, Scheduler: sched, Tracer: o.Tracer, Metrics: m}
	return r.SetupWithManager(mgr)
}
