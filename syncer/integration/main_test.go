package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/nodepool"
	"github.com/gpuvc/gpuvc/syncer"
	"github.com/gpuvc/gpuvc/syncer/migmap"
	"github.com/gpuvc/gpuvc/syncer/syncertest"
)

// Identities requests come from. Tenant pods arrive as vCluster's host service
// account would send them; the share controller is gpuvc's own.
const (
	shareController = "system:serviceaccount:gpuvc-system:gpuvc-manager"
	webhookName     = "gpuvc-syncer"
	evilPath        = "/test/evil"
)

// env is what TestMain set up for the tests.
var env struct {
	cp      *localcluster.ControlPlane
	metrics *syncer.Metrics
	// share acts as the share controller (a TrustedUser of the webhook).
	share kubernetes.Interface
	// sources create tenant pods per team.
	sources map[string]podSource
	baseURL string
	ca      []byte
	// events counts what the webhook emits, per pod (see events_test.go).
	events *emissions
}

// teams are the team namespaces the tests use, with their policies.
var teams = map[string]syncer.TeamPolicy{
	"fraud": {
		PoolGPUProduct: nodepool.ProductA100_80GB, PoolGPUMemoryMiB: 81920,
		MaxGPUsPerPod: 4, AllowedMIGProfiles: []string{"1g.10gb", "2g.20gb"},
		FractionsEnabled: true, VClusterName: "fraud",
	},
	"ml": {
		PoolGPUProduct: nodepool.ProductA100_80GB, MaxGPUsPerPod: 2,
		AllowedMIGProfiles: []string{"1g.10gb"}, WholeGPUAs: "1g.10gb", VClusterName: "ml",
	},
	// A team with spec.dra (dra_test.go).
	draTeam: {
		PoolGPUProduct: nodepool.ProductA100_80GB, MaxGPUsPerPod: 2, VClusterName: draTeam,
		DRA: true, AllowedDeviceClasses: []string{draClass}, GPUCeiling: draCeiling,
	},
	// Another spec.dra team in the same pool, without a quota.
	draTeam2: {
		PoolGPUProduct: nodepool.ProductA100_80GB, MaxGPUsPerPod: 2, VClusterName: draTeam2,
		DRA: true, AllowedDeviceClasses: []string{draClass},
	},
}

func TestMain(m *testing.M) {
	// The webhook server logs through controller-runtime; tests read events.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(localcp.RunTests(m, localcluster.Options{}, func(ctx context.Context, cp *localcluster.ControlPlane) (func(), error) {
		env.cp = cp
		return setUp(ctx, cp)
	}))
}

// setUp starts the webhook server on a loopback port, registers it with the API
// server and creates the team namespaces.
func setUp(ctx context.Context, cp *localcluster.ControlPlane) (stop func(), err error) {
	reader, err := client.New(cp.Config, client.Options{})
	if err != nil {
		return nil, err
	}
	if env.metrics, err = syncer.NewMetrics(metrics.Registry); err != nil {
		return nil, err
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cp.Client.EventsV1()})
	var srv *syncertest.Serving
	sinkCtx, cancelSink := context.WithCancel(context.Background())
	// Stop serving first, then let the broadcaster flush what it queued.
	stop = func() {
		if srv != nil {
			srv.Stop()
		}
		broadcaster.Shutdown()
		cancelSink()
	}
	if err := broadcaster.StartRecordingToSinkWithContext(sinkCtx); err != nil {
		return stop, err
	}
	recorder := broadcaster.NewRecorder(clientgoscheme.Scheme, "gpuvc-syncer")
	if env.events, err = watchEmissions(broadcaster, recorder); err != nil {
		return stop, err
	}
	wh, err := syncer.New(syncer.Options{
		Policies:     &syncertest.NamespacePolicies{Reader: reader, Teams: teams},
		Nodes:        syncer.ClientNodePools{Reader: reader},
		MIG:          migmap.Catalog{},
		Claims:       syncer.ClientClaimSpecs{Reader: reader},
		Devices:      syncer.ClientQuotaUsage{Reader: reader, Name: draQuota},
		Recorder:     recorder,
		Metrics:      env.metrics,
		TrustedUsers: []string{shareController},
	})
	if err != nil {
		return stop, err
	}

	srv, err = syncertest.Serve(ctx, cp.Dir, 30*time.Second, func(s webhook.Server) {
		wh.Register(s)
		s.Register(evilPath, &webhook.Admission{Handler: evilHandler{}})
	})
	if err != nil {
		return stop, err
	}
	env.baseURL, env.ca = srv.URL, srv.CA

	mutating, validating := syncer.Configurations(syncer.ConfigOptions{Name: webhookName, URL: env.baseURL, CABundle: env.ca})
	if _, err := cp.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		return stop, err
	}
	if _, err := cp.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		return stop, err
	}
	if err := createNamespaces(ctx, cp); err != nil {
		return stop, err
	}
	if env.share, err = impersonate(cp.Config, shareController); err != nil {
		return stop, err
	}
	env.sources = map[string]podSource{}
	for team := range teams {
		c, err := impersonate(cp.Config, vclusterUser(team))
		if err != nil {
			return stop, err
		}
		env.sources[team] = &directSource{client: c, hostNamespace: "team-" + team, vcluster: team}
	}
	return stop, waitForWebhook(ctx, cp)
}

// vclusterUser is the host identity of a team's vCluster syncer.
func vclusterUser(team string) string {
	return "system:serviceaccount:team-" + team + ":vc-" + team
}

func impersonate(cfg *rest.Config, user string) (kubernetes.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	return kubernetes.NewForConfig(c)
}

// createNamespaces creates the team namespaces, a plain one, and RBAC: each
// vCluster may manage pods in its own namespace, the share controller
// everywhere.
func createNamespaces(ctx context.Context, cp *localcluster.ControlPlane) error {
	c := cp.Client
	podRules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "pods/ephemeralcontainers", "configmaps"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}},
	}
	for team := range teams {
		ns := "team-" + team
		// Labelled as the manager labels a team with podSecurity: privileged:
		// Pod Security Admission lets everything through, the webhook must not.
		labels := testobj.PodSecurityLabels("privileged")
		labels[contract.LabelTeam], labels[contract.LabelPool] = team, "a100"
		if _, err := c.CoreV1().Namespaces().Create(ctx, testobj.Namespace(ns, labels), metav1.CreateOptions{}); err != nil {
			return err
		}
		if _, err := c.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "vcluster"}, Rules: podRules,
		}, metav1.CreateOptions{}); err != nil {
			return err
		}
		if _, err := c.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "vcluster"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "vcluster"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "vc-" + team, Namespace: ns}},
		}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if _, err := c.CoreV1().Namespaces().Create(ctx, testobj.Namespace("plain", nil), metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "gpuvc-share-controller"}, Rules: podRules,
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gpuvc-share-controller"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gpuvc-share-controller"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: shareController}},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, ns := range []string{"team-fraud", "team-ml", "plain"} {
		if err := cp.WaitForServiceAccount(ctx, ns, "default"); err != nil {
			return err
		}
	}
	return nil
}

// waitForWebhook polls with dry-run creates until the API server calls both
// webhooks (it learns about configurations asynchronously).
func waitForWebhook(ctx context.Context, cp *localcluster.ControlPlane) error {
	mutated, validated := env.metrics.Requests.WithLabelValues("fraud", "mutate", "create", "patched"), env.metrics.Requests.WithLabelValues("fraud", "validate", "create", "allowed")
	probe := testobj.Pod("probe", "team-fraud").Obj()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := cp.Client.CoreV1().Pods("team-fraud").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			last = err
			return false, nil
		}
		return got.Labels[contract.LabelTeam] == "fraud" && counter(mutated) > 0 && counter(validated) > 0, nil
	})
	if err != nil {
		return errors.Join(fmt.Errorf("the API server never called the webhook: %w", err), last)
	}
	return nil
}
