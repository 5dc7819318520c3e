// Package manager assembles gpuvc's controller manager: the Team reconciler and the
// syncer's pod admission webhook (and, as it lands, the share controller) on one
// controller-runtime manager with leader election, health probes and metrics; and,
// without cert-manager, the rotation of the webhook's own certificate.
package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/api/scheme"
	"github.com/gpuvc/gpuvc/api/teamstatus"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/accounting"
	"github.com/gpuvc/gpuvc/manager/idle"
	"github.com/gpuvc/gpuvc/manager/team"
	"github.com/gpuvc/gpuvc/manager/teamclaims"
	"github.com/gpuvc/gpuvc/manager/teamevents"
	"github.com/gpuvc/gpuvc/manager/teampolicy"
	"github.com/gpuvc/gpuvc/syncer"
	"github.com/gpuvc/gpuvc/syncer/celpolicy"
	"github.com/gpuvc/gpuvc/syncer/claims"
	"github.com/gpuvc/gpuvc/syncer/migmap"
	"github.com/gpuvc/gpuvc/syncer/queued"
	"github.com/gpuvc/gpuvc/syncer/share"
	"github.com/gpuvc/gpuvc/vclusters"
)

// Options configure the manager process.
type Options struct {
	MetricsAddr string // "0" disables the metrics server
	HealthAddr  string // "0" disables the probes
	// PprofAddr serves Go's /debug/pprof/ profiles (CPU, heap, block, mutex)
	// there; "" or "0" serves none.
	PprofAddr        string
	LeaderElection   bool
	LeaderElectionNS string
	// WebhookHost and WebhookPort are where the pod admission webhook listens;
	// WebhookCertDir holds its tls.crt and tls.key. Port 0 disables the webhook.
	WebhookHost    string
	WebhookPort    int
	WebhookCertDir string
	// WebhookCertSecret, when set, makes the manager issue and rotate the
	// webhook's certificate itself (no cert-manager): it keeps a CA and a
	// certificate for WebhookServiceName.<namespace>.svc in this Secret (which
	// must exist), copies them into WebhookCertDir and the CA into both
	// WebhookConfigName configurations; the webhook serves and /readyz passes
	// only once all of that is in place. See certrotation.go.
	WebhookCertSecret types.NamespacedName
	// SystemPool is the node pool of vCluster control planes.
	SystemPool string
	// ReserveImage is the image of fractional-GPU reservation pods (gpuvc
	// reserve); empty turns the share controller off.
	ReserveImage string
	// KueueUsers are the users Kueue's controller runs as, the only ones that
	// may lift Kueue's admission gate (syncer.Options.KueueUsers); nil: Kueue's
	// own service account, contract.KueueDefaultUser.
	KueueUsers []string
	// NotQueuedAfter is how long a pod gpuvc sent to Kueue may go without a
	// Kueue Workload before it gets the Warning event NotQueued (syncer/queued);
	// 0: queued.DefaultNotQueuedAfter.
	NotQueuedAfter time.Duration
	Team           team.Options
	// Accounting paces the GPU-time accounting (manager/accounting).
	Accounting accounting.Options
	// Idle paces the idle policy (manager/idle) and says where its waker answers.
	Idle idle.Options
	// AgentMetrics is where the node agents serve their metrics; with a port the
	// leader applies spec.idle.gpuPods from their per-pod GPU utilization.
	AgentMetrics AgentMetrics
	// SkipNameValidation lets a process run a second manager after the first
	// (tests that restart the manager).
	SkipNameValidation bool
}

// New returns a controller manager running the Team reconciler and the pod
// admission webhook against cfg.
func New(ctx context.Context, cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	mgrOpts := ctrl.Options{
		Scheme:                  scheme.New(),
		Metrics:                 metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:  opts.HealthAddr,
		PprofBindAddress:        opts.PprofAddr,
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        "gpuvc-manager.gpuvc.dev",
		LeaderElectionNamespace: opts.LeaderElectionNS,
		Controller:              config.Controller{SkipNameValidation: &opts.SkipNameValidation},
		Cache:                   cacheOptions(),
		// Kueue's objects are unstructured (gpuvc links no Kueue API), and
		// controller-runtime's client reads unstructured objects from the API
		// server unless told otherwise: at rest with queueing teams, every
		// Workload event and Team pass read Workloads, LocalQueues and
		// ClusterQueues from the API server (~800 requests a minute at 30 teams
		// and 1,000 pods), although the manager watches them anyway.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	}
	var certs *certRotation
	if opts.WebhookCertSecret != (types.NamespacedName{}) {
		if opts.WebhookPort == 0 {
			return nil, fmt.Errorf("webhook certificate Secret %s given, but the webhook is off (port 0)", opts.WebhookCertSecret)
		}
		var err error
		if certs, err = newCertRotation(ctx, cfg, opts.WebhookCertSecret, opts.WebhookCertDir); err != nil {
			return nil, err
		}
	}
	if opts.WebhookPort != 0 {
		srv := newWebhookServer(opts.WebhookHost, opts.WebhookPort, opts.WebhookCertDir)
		if certs != nil {
			srv = certs.gate(srv)
		}
		mgrOpts.WebhookServer = srv
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("creating controller manager: %w", err)
	}
	if certs != nil {
		if err := certs.addTo(mgr); err != nil {
			return nil, err
		}
	}
	vc, err := vclusters.New(cfg, vclusters.WithAloneSince(aloneSince(ctx, mgr, opts.LeaderElection)))
	if err != nil {
		return nil, err
	}
	self, err := whoAmI(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := installCELFence(ctx, cfg, self, opts.KueueUsers); err != nil {
		return nil, err
	}
	// Status written by an older gpuvc goes to its owners once, from the API
	// server: the cache strips managedFields, so the writers cannot see it.
	if err := mgr.Add(upgradeTeamStatus(mgr)); err != nil {
		return nil, err
	}
	opts.Team.SystemPool = opts.SystemPool
	// What gpuvc decides about a team as a whole, told in its own cluster too;
	// one recorder, so that a wake flushes what the reconciler held meanwhile.
	teamEvents := teamevents.New(mgr.GetAPIReader(), teamevents.Options{Dial: opts.Idle.Dial})
	opts.Idle.TeamEvents = teamEvents
	r := team.NewReconciler(mgr.GetClient(), vc, mgr.GetEventRecorder("gpuvc-manager"), opts.Team, team.WithTeamEvents(teamEvents))
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	// Per-team GPU requests and quota; a second manager in one process (tests)
	// keeps the first one's collector.
	if err := metrics.Registry.Register(team.NewUsageCollector(mgr.GetCache())); err != nil && !errors.As(err, &prometheus.AlreadyRegisteredError{}) {
		return nil, err
	}
	// Queueing teams' standing in Kueue per GPU kind (status.queue.flavors).
	if err := metrics.Registry.Register(team.NewQueueCollector(mgr.GetCache())); err != nil && !errors.As(err, &prometheus.AlreadyRegisteredError{}) {
		return nil, err
	}
	// Pools' GPU devices and each team's pool, for dashboards.
	if err := metrics.Registry.Register(team.NewPoolCollector(mgr.GetCache())); err != nil && !errors.As(err, &prometheus.AlreadyRegisteredError{}) {
		return nil, err
	}
	if err := addAccounting(mgr, opts.Accounting); err != nil {
		return nil, err
	}
	// The idle policy runs on the leader: the teams' Services point at its waker.
	if err := addIdle(ctx, mgr, opts.Idle); err != nil {
		return nil, err
	}
	if err := addGPUPodReaper(mgr, opts.AgentMetrics, opts.Idle); err != nil {
		return nil, err
	}
	if err := addVirtualNodes(mgr, opts); err != nil {
		return nil, err
	}
	if opts.WebhookPort != 0 {
		if err := addWebhook(mgr, self, opts); err != nil {
			return nil, err
		}
	}
	if opts.ReserveImage != "" {
		if err := addShareController(mgr, opts); err != nil {
			return nil, err
		}
	}
	// Why a queueing team's pod waits, on the pod (if Kueue is installed).
	isTeamNamespace := func(ns string) bool { return strings.HasPrefix(ns, gpuvcv1.HostNamespace("")) }
	if _, err := queued.New(mgr.GetClient(), mgr.GetEventRecorder("gpuvc-queue")).SetupWithManager(mgr, isTeamNamespace); err != nil {
		return nil, err
	}
	// ... and why one Kueue never took waits forever.
	notQueued := queued.NewNotQueued(mgr.GetClient(), mgr.GetEventRecorder("gpuvc-queue"), queued.WithGrace(opts.NotQueuedAfter),
		queued.WithReader(mgr.GetAPIReader()))
	if err := notQueued.SetupWithManager(mgr, isTeamNamespace); err != nil {
		return nil, err
	}
	// Its pods are this manager's own: a second manager in one process (tests
	// that restart it) takes the stopped one's place, whose count stands still.
	if err := registerReplacing(notQueued); err != nil {
		return nil, err
	}
	// A spec.dra team's ResourceClaims and templates, copied from its cluster
	// to the host (vCluster OSS copies none), on the leader.
	if err := addClaimSync(mgr, cfg, opts.Idle.Dial); err != nil {
		return nil, err
	}
	// Why a team's claim does not bind, on the claim (vCluster copies its status).
	if err := claims.New(mgr.GetClient(), nil).SetupWithManager(mgr, isTeamNamespace); err != nil {
		return nil, err
	}
	if opts.HealthAddr != "0" && opts.HealthAddr != "" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return nil, err
		}
		check := healthz.Ping
		if opts.WebhookPort != 0 {
			check = mgr.GetWebhookServer().StartedChecker()
		}
		if err := mgr.AddReadyzCheck("webhook", check); err != nil {
			return nil, err
		}
		if certs != nil {
			if err := mgr.AddReadyzCheck("webhook-certificate", certs.readyCheck); err != nil {
				return nil, err
			}
		}
	}
	return mgr, nil
}

// installCELFence applies the cluster-wide ValidatingAdmissionPolicies that fence
// team pods when the webhook is down; only the manager (self) may write their
// per-team parameters, only Kueue (kueueUsers) may lift its admission gate.
func installCELFence(ctx context.Context, cfg *rest.Config, self string, kueueUsers []string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return celpolicy.Install(ctx, cs, celpolicy.Options{ParamsWriters: []string{self}, KueueUsers: kueueUsers})
}

// addClaimSync runs gpuvc's sync of spec.dra teams' claims and claim templates
// (manager/teamclaims), reaching each team's control plane as team events do.
func addClaimSync(mgr ctrl.Manager, cfg *rest.Config, dial func(context.Context, string, string) (net.Conn, error)) error {
	host, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return mgr.Add(teamclaims.New(mgr.GetClient(), mgr.GetAPIReader(), host, teamclaims.Options{Dial: dial}))
}

// addAccounting runs the GPU-time accountant on the leader and exports its
// counter.
func addAccounting(mgr ctrl.Manager, opts accounting.Options) error {
	if err := accounting.Register(metrics.Registry); err != nil {
		return err
	}
	return mgr.Add(accounting.New(mgr.GetClient(), mgr.GetAPIReader(), opts))
}

// addIdle runs the idle policy; a Team's sleep or wake request, and a control
// plane's change of scale, are acted on at once rather than at the next interval.
func addIdle(ctx context.Context, mgr ctrl.Manager, opts idle.Options) error {
	s := idle.New(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder("gpuvc-idle"), opts)
	if err := s.AddEventHandlers(ctx, mgr.GetCache()); err != nil {
		return err
	}
	return mgr.Add(s)
}

// addWebhook registers the syncer's pod webhook. The manager's own identity is
// trusted to write gpuvc.dev/ metadata and lift share gates.
func addWebhook(mgr ctrl.Manager, self string, opts Options) error {
	m, err := syncer.NewMetrics(metrics.Registry)
	if err != nil {
		return err
	}
	wh, err := syncer.New(syncer.Options{
		Policies: teampolicy.Source{Reader: mgr.GetClient(), SystemPool: opts.SystemPool},
		Nodes:    syncer.ClientNodePools{Reader: mgr.GetClient()},
		Quotas:   syncer.ClientQuotaUsage{Reader: mgr.GetClient(), Name: team.QuotaName},
		// Uncached: the cache holds only gpuvc's own Secrets; the manager's Role in
		// every team namespace may get its ConfigMaps and Secrets.
		EnvSources: syncer.ClientEnvSources{Reader: mgr.GetAPIReader()},
		// Uncached too: only spec.dra teams read them, on the pods and claims
		// they create; fresh usage narrows the GPU ceiling's race (docs/dra.md).
		Claims:       syncer.ClientClaimSpecs{Reader: mgr.GetAPIReader()},
		Devices:      syncer.ClientQuotaUsage{Reader: mgr.GetAPIReader(), Name: team.QuotaName},
		MIG:          migmap.Catalog{},
		Recorder:     mgr.GetEventRecorder("gpuvc-syncer"),
		Metrics:      m,
		TrustedUsers: []string{self},
		KueueUsers:   opts.KueueUsers,
		Log:          mgr.GetLogger().WithName("syncer"),
	})
	if err != nil {
		return err
	}
	wh.Register(mgr.GetWebhookServer())
	return nil
}

// shareMetrics registers the share controller's metrics once per process: a
// second manager (tests that restart it) reuses them.
var shareMetrics = sync.OnceValues(func() (*share.Metrics, error) { return share.NewMetrics(metrics.Registry) })

// addShareController serves fractional GPU requests with reservation pods in each
// team's namespace.
func addShareController(mgr ctrl.Manager, opts Options) error {
	m, err := shareMetrics()
	if err != nil {
		return err
	}
	c, err := share.New(share.Options{
		Client:             mgr.GetClient(),
		APIReader:          mgr.GetAPIReader(),
		Recorder:           mgr.GetEventRecorder("gpuvc-share"),
		Teams:              teampolicy.Source{Reader: mgr.GetClient(), SystemPool: opts.SystemPool},
		Metrics:            m,
		Image:              opts.ReserveImage,
		ServiceAccountName: contract.ReserveServiceAccount,
	})
	if err != nil {
		return err
	}
	return c.SetupWithManager(mgr)
}

// whoAmI asks the API server which user these credentials authenticate as.
func whoAmI(ctx context.Context, cfg *rest.Config) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("finding the manager's own user (SelfSubjectReview): %w", err)
	}
	return r.Status.UserInfo.Username, nil
}

// upgradeTeamStatus hands Team status fields that Update operations co-own
// (written before api/teamstatus) to their owners, once, on the leader.
func upgradeTeamStatus(mgr ctrl.Manager) manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error {
		n, err := teamstatus.UpgradeAll(ctx, mgr.GetAPIReader(), mgr.GetClient())
		if err != nil {
			// Not fatal: the writers keep working; a field they stop writing stays until the next start.
			log.FromContext(ctx).Error(err, "upgrading Team status written by an older gpuvc")
			return nil
		}
		if n > 0 {
			log.FromContext(ctx).Info("Team status written by an older gpuvc handed to its owners", "teams", n)
		}
		return nil
	})
}

// registerReplacing registers c with controller-runtime's registry in place of
// an equal collector registered before (by an earlier manager in this process).
func registerReplacing(c prometheus.Collector) error {
	err := metrics.Registry.Register(c)
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		metrics.Registry.Unregister(already.ExistingCollector)
		err = metrics.Registry.Register(c)
	}
	return err
}
