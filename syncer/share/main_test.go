package share_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/nodepool"
	"github.com/gpuvc/gpuvc/syncer"
	"github.com/gpuvc/gpuvc/syncer/share"
	"github.com/gpuvc/gpuvc/syncer/syncertest"
)

// The controller runs as gpuvc's manager identity: a TrustedUser of the
// webhook, with exactly the RBAC docs/share.md lists.
const controllerUser = "system:serviceaccount:gpuvc-system:gpuvc-manager"

// Test timings: a short grace keeps tests fast; the retry interval is a
// backstop only (events wake the controller).
const (
	emptyGrace    = 2 * time.Second
	retryInterval = 10 * time.Second
)

var env struct {
	cp      *localcluster.ControlPlane
	c       client.Client // admin
	metrics *share.Metrics
	ctrl    *running // the controller currently running
}

// maxPodsPerGPU of the teams whose default the tests change.
var maxPodsPerGPU = map[string]int{"tight": 2}

// fractionLimits of the teams that opted in (spec.gpuSharing.fractionLimits).
var fractionLimits = map[string]share.FractionLimits{"limited": {ReserveMiB: 256}}

func TestMain(m *testing.M) {
	if os.Getenv("GPUVC_TEST_LOG") != "" {
		ctrl.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, time.Now().Format("15:04:05.000"), prefix, args) }, funcr.Options{Verbosity: 1}))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	var stopErr error
	code := localcp.RunTests(m, localcluster.Options{}, func(ctx context.Context, cp *localcluster.ControlPlane) (func(), error) {
		env.cp = cp
		stopWebhook, err := setUp(ctx)
		// The controller stops before the webhook it calls through the API server.
		return func() {
			if env.ctrl != nil {
				stopErr = env.ctrl.stop()
			}
			if stopWebhook != nil {
				stopWebhook()
			}
		}, err
	})
	if stopErr != nil {
		fmt.Fprintln(os.Stderr, stopErr)
		code = 1
	}
	os.Exit(code)
}

func setUp(ctx context.Context) (stop func(), err error) {
	if env.c, err = client.New(env.cp.Config, client.Options{}); err != nil {
		return nil, err
	}
	if env.metrics, err = share.NewMetrics(metrics.Registry); err != nil {
		return nil, err
	}
	if err := grantController(ctx); err != nil {
		return nil, err
	}
	if stop, err = startWebhook(ctx); err != nil {
		return stop, err
	}
	env.ctrl, err = startController()
	return stop, err
}

// grantController gives the controller's identity the RBAC of docs/share.md.
func grantController(ctx context.Context) error {
	c := env.cp.Client
	if _, err := c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "gpuvc-share-controller"}, Rules: share.RBACRules(),
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gpuvc-share-controller"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gpuvc-share-controller"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: controllerUser}},
	}, metav1.CreateOptions{})
	return err
}

// teamPolicies gives every namespace labelled gpuvc.dev/team a policy with
// fractions on, in the pool of its label.
type teamPolicies struct{ reader client.Reader }

func (p teamPolicies) TeamPolicy(ctx context.Context, namespace string) (*syncer.TeamPolicy, error) {
	var ns corev1.Namespace
	if err := p.reader.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, syncer.ErrNotTeamNamespace
		}
		return nil, err
	}
	team := ns.Labels[contract.LabelTeam]
	if team == "" {
		return nil, syncer.ErrNotTeamNamespace
	}
	return &syncer.TeamPolicy{
		Team: team, Namespace: namespace, Pool: ns.Labels[contract.LabelPool],
		PoolGPUProduct: nodepool.ProductA100_80GB, PoolGPUMemoryMiB: 81920,
		MaxGPUsPerPod: 8, FractionsEnabled: true,
	}, nil
}

// startWebhook serves the syncer's real webhook on a loopback port and registers
// it, as syncer/integration does, so pods are gated by the real webhook.
func startWebhook(ctx context.Context) (stop func(), err error) {
	reader, err := client.New(env.cp.Config, client.Options{})
	if err != nil {
		return nil, err
	}
	wh, err := syncer.New(syncer.Options{
		Policies:     teamPolicies{reader: reader},
		Nodes:        syncer.ClientNodePools{Reader: reader},
		TrustedUsers: []string{controllerUser},
	})
	if err != nil {
		return nil, err
	}
	// Two minutes: on a machine shared with other suites (load average 30-50
	// seen under make bench) 30 s was not always enough.
	srv, err := syncertest.Serve(ctx, env.cp.Dir, 2*time.Minute, wh.Register)
	if err != nil {
		return nil, err
	}
	stop = srv.Stop
	mutating, validating := syncer.Configurations(syncer.ConfigOptions{Name: "gpuvc-syncer", URL: srv.URL, CABundle: srv.CA})
	if _, err := env.cp.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		return stop, err
	}
	if _, err := env.cp.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		return stop, err
	}
	return stop, waitForWebhook(ctx)
}

// waitForWebhook dry-runs a share pod until the API server calls the webhook
// (it learns about configurations asynchronously).
func waitForWebhook(ctx context.Context) error {
	ns := testobj.TeamNamespace("probe", "a100")
	if _, err := env.cp.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := env.cp.WaitForServiceAccount(ctx, ns.Name, "default"); err != nil {
		return err
	}
	probe := testobj.Pod("probe", ns.Name).GPUFraction("0.5").Obj()
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := env.cp.Client.CoreV1().Pods(ns.Name).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && len(got.Spec.SchedulingGates) > 0, nil
	})
}

// running is a share controller in its own manager, as gpuvc's manager would
// run it.
type running struct {
	cancel context.CancelFunc
	done   chan error
}

func startController() (*running, error) {
	cfg := rest.CopyConfig(env.cp.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: controllerUser, Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Tests start a new controller after stopping the last one.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	c, err := share.New(share.Options{
		Client:        mgr.GetClient(),
		APIReader:     mgr.GetAPIReader(),
		Recorder:      mgr.GetEventRecorder("gpuvc-share"),
		Teams:         share.NamespaceTeams{Reader: mgr.GetClient(), MaxPodsPerGPU: maxPodsPerGPU, FractionLimits: fractionLimits},
		Metrics:       env.metrics,
		Image:         "registry.invalid/gpuvc/gpuvc:test",
		EmptyGrace:    emptyGrace,
		RetryInterval: retryInterval,
	})
	if err != nil {
		return nil, err
	}
	if err := c.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- mgr.Start(ctx) }()
	return r, nil
}

func (r *running) stop() error {
	r.cancel()
	select {
	case err := <-r.done:
		return err
	case <-time.After(30 * time.Second):
		return errors.New("share controller did not stop within 30s")
	}
}
