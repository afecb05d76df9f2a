package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/tracing"
)

// Scheme holds the kinds the controller reads and writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	return s
}

// Options configure the controllers.
type Options struct {
	Engine   engine.Config
	Interval time.Duration
	// Workers is how many PhasedTrainings reconcile at once.
	Workers int
	// Tracer, if set, is told of every status step the reconciler stores
	// (tracing.NewOTelTracer exports them as OpenTelemetry spans).
	Tracer tracing.PhaseTracer
	// PodGroups is "auto" (the default: when the API server serves
	// scheduling.k8s.io/v1beta1 PodGroups), "on" or "off": whether each
	// reserved gang also gets a PodGroup (podgroup.go).
	PodGroups string
	// Provisioning asks a cluster autoscaler for the nodes of gangs that
	// do not fit, with ProvisioningRequests (off without a Class).
	Provisioning Provisioning
	// TopologyLevels are the cluster's topology levels (Scheduler's).
	TopologyLevels []string
}

// Setup adds phasegang's scheduler and reconciler to a manager.
func Setup(mgr ctrl.Manager, o Options) error {
	m := NewMetrics(nil)
	rec := mgr.GetEventRecorder("phasegang")
	sched := &Scheduler{Client: mgr.GetClient(), Recorder: rec, Config: o.Engine, Interval: o.Interval, Metrics: m, Provisioning: o.Provisioning, TopologyLevels: o.TopologyLevels}
	if err := sched.SetupWithManager(mgr); err != nil {
		return err
	}
	groups, err := podGroupsOn(mgr, o.PodGroups)
	if err != nil {
		return err
	}
	r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: rec, Scheduler: sched, Tracer: o.Tracer, Metrics: m, Workers: max(o.Workers, 1), PodGroups: groups}
	return r.SetupWithManager(mgr)
}
