package celpolicy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/syncer/celpolicy"
)

// The integration tests run on a real API server with no admission webhook at
// all: whatever they see refused, the CEL policies refused alone. Pod Security
// Admission enforces nothing either: team fraud's namespace is labelled as the
// manager labels a team with podSecurity: privileged, the others carry no PSA
// labels (the API server's default is privileged).

const (
	team       = "fraud"
	teamNS     = "team-" + team
	plainNS    = "plain" // no gpuvc.dev/team label: the fence does not apply
	pool       = "a100"
	systemPool = "system"
	maxGPUs    = 2
)

// env is what TestMain set up.
var env struct {
	cp *localcluster.ControlPlane
	// tenant acts as the team's vCluster syncer on the host: the identity every
	// tenant pod arrives with.
	tenant kubernetes.Interface
}

func TestMain(m *testing.M) {
	// The webhook server of TestWithWebhook logs through controller-runtime.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(localcp.RunTests(m, localcluster.Options{}, func(ctx context.Context, cp *localcluster.ControlPlane) (func(), error) {
		started := time.Now()
		env.cp = cp
		if err := setUp(ctx); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "celpolicy: policy enforced %s after the control plane was ready\n", time.Since(started).Round(time.Millisecond))
		return nil, nil
	}))
}

func setUp(ctx context.Context) error {
	c := env.cp.Client
	// The fence must hold on its own: no webhook may take part.
	if m, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{}); err != nil || len(m.Items) > 0 {
		return errors.Join(fmt.Errorf("want no mutating webhooks, have %d", len(m.Items)), err)
	}
	if v, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{}); err != nil || len(v.Items) > 0 {
		return errors.Join(fmt.Errorf("want no validating webhooks, have %d", len(v.Items)), err)
	}
	if err := celpolicy.Install(ctx, c, celpolicy.Options{}); err != nil {
		return err
	}
	if err := createSchedulingClasses(ctx); err != nil {
		return err
	}
	if err := createTeamNamespace(ctx, teamNS, team, celpolicy.PolicyParams(&fraudPolicy)); err != nil {
		return err
	}
	if err := labelNamespace(ctx, teamNS, testobj.PodSecurityLabels("privileged")); err != nil {
		return err
	}
	if err := createPlatformServiceAccounts(ctx, teamNS, team); err != nil {
		return err
	}
	if _, err := c.CoreV1().Namespaces().Create(ctx, testobj.Namespace(plainNS, nil), metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := env.cp.WaitForServiceAccount(ctx, plainNS, "default"); err != nil {
		return err
	}
	var err error
	env.tenant, err = impersonate(vclusterUser(team))
	return err
}

// vclusterUser is the host identity of a team's vCluster syncer.
func vclusterUser(team string) string { return "system:serviceaccount:team-" + team + ":vc-" + team }

func impersonate(user string) (kubernetes.Interface, error) {
	c := rest.CopyConfig(env.cp.Config)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	return kubernetes.NewForConfig(c)
}

// createTeamNamespace creates a team namespace as the manager would lay it out
// for the fence: labels, the vCluster syncer's RBAC on pods and ConfigMaps (as
// vCluster's chart grants it), and — unless params is nil — the parameter
// ConfigMap. It returns once the fence judges the namespace's pods with those
// parameters (or, without parameters, refuses them).
func createTeamNamespace(ctx context.Context, ns, team string, params map[string]string) error {
	c := env.cp.Client
	if _, err := c.CoreV1().Namespaces().Create(ctx, testobj.Namespace(ns, map[string]string{
		contract.LabelTeam: team, contract.LabelPool: pool,
	}), metav1.CreateOptions{}); err != nil {
		return err
	}
	rules := []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"pods", "pods/ephemeralcontainers", "configmaps"},
		Verbs: []string{"get", "list", "create", "update", "patch", "delete"},
	}}
	if _, err := c.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "vcluster"}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := c.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "vcluster"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "vcluster"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "vc-" + team, Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := env.cp.WaitForServiceAccount(ctx, ns, "default"); err != nil {
		return err
	}
	if params == nil {
		return waitForFence(ctx, ns, "no params found")
	}
	if err := applyParams(ctx, ns, params); err != nil {
		return err
	}
	return waitForFence(ctx, ns, "")
}

func applyParams(ctx context.Context, ns string, params map[string]string) error {
	_, err := env.cp.Client.CoreV1().ConfigMaps(ns).Apply(ctx, celpolicy.TeamParams(ns, params),
		metav1.ApplyOptions{FieldManager: celpolicy.FieldManager, Force: true})
	return err
}

// waitForFence polls with dry-run creates until the API server enforces the
// fence in ns — it loads policies, bindings and parameters asynchronously. A
// privileged probe must be refused by the policy, and a pod that breaks no rule
// must be admitted, or, when refusedWith is set, refused with that text.
func waitForFence(ctx context.Context, ns, refusedWith string) error {
	c := env.cp.Client
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	bad := testobj.Pod("probe-bad", ns).InPool(pool).Privileged().Obj()
	good := testobj.Pod("probe-good", ns).InPool(pool).Obj()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, errBad := c.CoreV1().Pods(ns).Create(ctx, bad, dryRun)
		_, errGood := c.CoreV1().Pods(ns).Create(ctx, good, dryRun)
		last = fmt.Errorf("privileged probe: %v; compliant probe: %v", errBad, errGood)
		if errBad == nil || !strings.Contains(errBad.Error(), policyRefusal) {
			return false, nil
		}
		if refusedWith != "" {
			return errGood != nil && strings.Contains(errGood.Error(), refusedWith), nil
		}
		return errGood == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the fence never took effect in %s: %w (last: %v)", ns, err, last)
	}
	return nil
}

// policyRefusal starts every refusal by the pod fence.
var policyRefusal = fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request", celpolicy.PolicyName, celpolicy.BindingName)
