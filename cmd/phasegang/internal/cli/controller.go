package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/phasegang/phasegang/controllers"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/tracing"
)

type controllerFlags struct {
	kubeconfig       string
	metricsAddr      string
	probeAddr        string
	leaderElect      bool
	leaderElectionNS string
	starvationBound  time.Duration
	interval         time.Duration
	development      bool
	workers          int
	pprofAddr        string
	podGroups        string
	provisioning     string
	topologyLevels   []string
	provisionDelay   time.Duration
}

func newController() *cobra.Command {
	f := &controllerFlags{}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the phasegang controller manager against a cluster (KUBECONFIG or in-cluster)",
		Long: `controller runs phasegang on a Kubernetes cluster: the scheduler that reserves
each phase's gang on concrete nodes (writing the grant into the PhasedTraining's
status first), and the reconciler that runs the pipelines' worker pods.

It reads KUBECONFIG (or --kubeconfig), or the in-cluster service account.
Metrics are served in the Prometheus format on --metrics-bind-address,
health and readiness on --health-probe-bind-address (/healthz, /readyz).

Tracing is configured by the standard OpenTelemetry environment only: set
OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) to export
one trace per PhasedTraining over OTLP; OTEL_EXPORTER_OTLP_PROTOCOL is grpc or
http/protobuf (default), OTEL_SERVICE_NAME defaults to "phasegang",
OTEL_SDK_DISABLED=true turns it off. See docs/tracing.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runController(f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "path to a kubeconfig (default: $KUBECONFIG, then in-cluster)")
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables it)")
	fl.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fl.BoolVar(&f.leaderElect, "leader-elect", false, "elect a leader, so only one replica schedules (the Deployment sets it)")
	fl.StringVar(&f.leaderElectionNS, "leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's)")
	fl.DurationVar(&f.starvationBound, "starvation-bound", engine.DefaultConfig().StarvationBound, "how long the queue's head waits while smaller gangs backfill")
	fl.StringSliceVar(&f.topologyLevels, "topology-levels", nil, "the cluster's topology: node label keys, top level first, e.g. example.com/block,example.com/rack,kubernetes.io/hostname; phases with spec.phases[].topology are placed by them (docs/topology.md)")
	fl.DurationVar(&f.interval, "resync", 5*time.Second, "longest pause between scheduling cycles without an event")
	fl.BoolVar(&f.development, "development", false, "human-readable logs")
	fl.IntVar(&f.workers, "workers", 32, "PhasedTrainings reconciled at once (reconciles mostly wait on the API server)")
	fl.StringVar(&f.pprofAddr, "pprof-bind-address", "", "address of Go's /debug/pprof profiles (empty: off)")
	fl.StringVar(&f.provisioning, "provisioning-class", "", "ask a cluster autoscaler for the nodes of a gang that does not fit, with a ProvisioningRequest (autoscaling.x-k8s.io/v1) of this provisioningClassName, e.g. "+driver.ProvisioningAtomicClass+" (empty: off; needs cluster-autoscaler's ProvisioningRequest support)")
	fl.DurationVar(&f.provisionDelay, "provisioning-delay", 30*time.Second, "how long a gang waits for capacity before its ProvisioningRequest is made")
	fl.StringVar(&f.podGroups, "pod-groups", "auto", "give every reserved gang a Kubernetes PodGroup (scheduling.k8s.io/v1beta1), so kube-scheduler binds its pods all or none: auto (when the API server serves them), on or off")
	return cmd
}

func runController(f *controllerFlags) error {
	ctrl.SetLogger(zap.New(zap.UseDevMode(f.development)))
	if f.kubeconfig != "" {
		os.Setenv("KUBECONFIG", f.kubeconfig)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("no cluster to talk to: %w", err)
	}
	// The informers retry within seconds after an API server outage, and
	// /readyz fails while it lasts (controllers/health.go).
	reach := &controllers.APIReachability{}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        controllers.Scheme(),
		Cache:                         cacheOptions(reach),
		Metrics:                       metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress:        f.probeAddr,
		PprofBindAddress:              f.pprofAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              "phasegang.dev",
		LeaderElectionNamespace:       f.leaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return err
	}
	tr, err := tracing.FromEnv(context.Background())
	if err != nil {
		return err
	}
	defer func() {
		// Flush the spans still in the batch processor.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tr.Shutdown(ctx); err != nil {
			ctrl.Log.Error(err, "flushing traces")
		}
	}()
	if tr != nil {
		ctrl.Log.Info("tracing on: exporting OTLP spans (OTEL_* environment)")
	}
	if err := controllers.Setup(mgr, controllers.Options{
		Engine:       engine.Config{StarvationBound: f.starvationBound},
		Interval:     f.interval,
		Workers:      f.workers,
		Tracer:       tr.PhaseTracer(),
		PodGroups:    f.podGroups,
		Provisioning: controllers.Provisioning{Class: f.provisioning, Delay: f.provisionDelay},

		TopologyLevels: f.topologyLevels,
	}); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	apiCheck, err := controllers.APIServerCheck(cfg, reach)
	if err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("apiserver", apiCheck); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// cacheOptions are the manager's informer caches. They drop every
// object's managedFields: nothing in the controller reads them, and they
// are a large part of what it holds (44% of a mid-run PhasedTraining's
// bytes), so the heap the garbage collector scans shrinks with them. A
// status update from a cached object then carries no managedFields,
// which kube-apiserver reads as "keep the stored ones".
func cacheOptions(reach *controllers.APIReachability) cache.Options {
	return cache.Options{
		NewInformer:      reach.RecoveringInformer,
		DefaultTransform: cache.TransformStripManagedFields(),
	}
}
