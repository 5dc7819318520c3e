// Package manager assembles gpuvc's controller manager: the Team reconciler (and,
// as they land, the syncer's webhook and share controller) on one
// controller-runtime manager with leader election, health probes and metrics.
package manager

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	gpuvcv1 "github.com/gpuvc/gpuvc/manager/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/team"
	"github.com/gpuvc/gpuvc/vclusters"
)

// Options configure the manager process.
type Options struct {
	MetricsAddr      string // "0" disables the metrics server
	HealthAddr       string // "0" disables the probes
	LeaderElection   bool
	LeaderElectionNS string
	Team             team.Options
}

// Scheme knows the built-in types and the Team API.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = gpuvcv1.AddToScheme(s)
	return s
}

// New returns a controller manager running the Team reconciler against cfg.
func New(cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	managed := labels.SelectorFromSet(labels.Set{team.LabelManagedBy: "gpuvc"})
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  Scheme(),
		Metrics:                 metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:  opts.HealthAddr,
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        "gpuvc-manager.gpuvc.dev",
		LeaderElectionNamespace: opts.LeaderElectionNS,
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			// Only the manager's own Secrets: caching every Secret of the host
			// would cost memory and read access it does not need.
			&corev1.Secret{}: {Label: managed},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("creating controller manager: %w", err)
	}
	vc, err := vclusters.New(cfg)
	if err != nil {
		return nil, err
	}
	r := team.NewReconciler(mgr.GetClient(), vc, mgr.GetEventRecorder("gpuvc-manager"), opts.Team)
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if opts.HealthAddr != "0" && opts.HealthAddr != "" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return nil, err
		}
		if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}
