package celpolicy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	c "github.com/gpuvc/gpuvc/syncer/celpolicy"
)

// TestMissingParamsRefusesPods: a team namespace without its parameter
// ConfigMap refuses every pod (parameterNotFoundAction: Deny) until gpuvc
// writes it.
func TestMissingParamsRefusesPods(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	const ns = "team-noparams"
	if err := createTeamNamespace(ctx, ns, "noparams", nil); err != nil {
		t.Fatal(err)
	}
	pods := env.cp.Client.CoreV1().Pods(ns)
	_, err := pods.Create(ctx, testobj.Pod("compliant", ns).InPool(pool).Obj(), metav1.CreateOptions{})
	refusedByFenceSetup(t, err, "no params found for policy binding with `Deny` parameterNotFoundAction")

	if err := applyParams(ctx, ns, c.Params(pool, 1, systemPool, "noparams")); err != nil {
		t.Fatal(err)
	}
	if err := waitForFence(ctx, ns, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, testobj.Pod("compliant", ns).InPool(pool).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("refused once the parameters exist: %v", err)
	}
}

// TestInvalidParamsRefusePods: parameters gpuvc did not write (or a broken
// manager) fail closed with a message naming the bad value.
func TestInvalidParamsRefusePods(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	const ns = "team-badparams"
	if err := createTeamNamespace(ctx, ns, "badparams", nil); err != nil {
		t.Fatal(err)
	}
	bad := c.Params(pool, 1, systemPool, "")
	bad[c.KeyMaxGPUsPerPod] = "lots"
	if err := applyParams(ctx, ns, bad); err != nil {
		t.Fatal(err)
	}
	var err error
	if pollErr := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err = env.cp.Client.CoreV1().Pods(ns).Create(ctx, testobj.Pod("compliant", ns).InPool(pool).Obj(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil || !strings.Contains(err.Error(), "no params found"), nil
	}); pollErr != nil {
		t.Fatalf("the fence never read the parameters: %v (last: %v)", pollErr, err)
	}
	refusedByFence(t, err, refusal(c.ReasonInvalidParams, `ConfigMap team-badparams/gpuvc-admission-params`, `maxGPUsPerPod="lots"`, "limit: pool and systemPool set, maxGPUsPerPod a whole number")...)
}

// TestParamsGuard: the team's vCluster syncer may write ConfigMaps in its
// namespace (vCluster's chart grants it), yet not its own admission
// parameters; gpuvc's manager and system:masters may.
func TestParamsGuard(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	const emptyNS = "team-guarded"
	if err := createTeamNamespace(ctx, emptyNS, "guarded", nil); err != nil {
		t.Fatal(err)
	}
	// The vCluster syncer of team "guarded", and gpuvc's manager (allowed
	// everywhere by RBAC here, by the guard only for the parameters).
	tenantGuarded, err := impersonate(vclusterUser("guarded"))
	if err != nil {
		t.Fatal(err)
	}
	manager := grantConfigMaps(ctx, t, c.DefaultParamsWriter)

	raise := func(cl kubernetes.Interface, ns string, dryRun ...string) error {
		_, err := cl.CoreV1().ConfigMaps(ns).Apply(ctx, c.TeamParams(ns, c.Params("h100", 64, systemPool, "")),
			metav1.ApplyOptions{FieldManager: "tenant", Force: true, DryRun: dryRun})
		return err
	}
	// The guard takes effect asynchronously, like every policy: probe with
	// dry runs so nothing is written before it does.
	if pollErr := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return raise(tenantGuarded, emptyNS, metav1.DryRunAll) != nil, nil
	}); pollErr != nil {
		t.Fatalf("the guard never refused the tenant: %v", pollErr)
	}
	err = raise(tenantGuarded, emptyNS)

	t.Run("tenant creating its parameters is refused", func(t *testing.T) {
		refusedByGuard(t, err, "system:serviceaccount:team-guarded:vc-guarded may not create ConfigMap team-guarded/gpuvc-admission-params",
			"limit: only gpuvc, "+c.DefaultParamsWriter)
	})
	t.Run("tenant raising its limit is refused", func(t *testing.T) {
		refusedByGuard(t, raise(env.tenant, teamNS), "system:serviceaccount:team-fraud:vc-fraud may not change the data of ConfigMap team-fraud/gpuvc-admission-params")
		cm, err := env.cp.Client.CoreV1().ConfigMaps(teamNS).Get(ctx, c.ParamsName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data[c.KeyMaxGPUsPerPod] != "2" || cm.Data[c.KeyPool] != pool {
			t.Errorf("parameters changed: %v", cm.Data)
		}
	})
	t.Run("tenant labelling the parameters is admitted", func(t *testing.T) {
		_, err := env.tenant.CoreV1().ConfigMaps(teamNS).Apply(ctx,
			corev1ac.ConfigMap(c.ParamsName, teamNS).WithLabels(map[string]string{"example.com/seen": "true"}),
			metav1.ApplyOptions{FieldManager: "tenant"})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("tenant ConfigMaps of other names are admitted", func(t *testing.T) {
		_, err := env.tenant.CoreV1().ConfigMaps(teamNS).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "gpuvc-admission-params-x-default-x-fraud"}, Data: map[string]string{"pool": "h100"},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("gpuvc's manager writes the parameters", func(t *testing.T) {
		eventually(ctx, t, "the manager writes the parameters", func() error {
			_, err := manager.CoreV1().ConfigMaps(emptyNS).Apply(ctx, c.TeamParams(emptyNS, c.Params(pool, 1, systemPool, "guarded")),
				metav1.ApplyOptions{FieldManager: c.FieldManager, Force: true})
			return err
		}, "")
	})
}

// grantConfigMaps lets user write ConfigMaps in every namespace and returns a
// client acting as that user.
func grantConfigMaps(ctx context.Context, t *testing.T, user string) kubernetes.Interface {
	t.Helper()
	grant(ctx, t, "test-configmaps", user, rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "update", "patch"},
	})
	cl, err := impersonate(user)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func refusedByGuard(t *testing.T, err error, words ...string) {
	t.Helper()
	want := "ValidatingAdmissionPolicy '" + c.GuardPolicyName + "' with binding '" + c.GuardBindingName + "' denied request: gpuvc: " + c.ReasonParamsWriter + ": "
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("want a refusal by %s, got %v", c.GuardPolicyName, err)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal lacks %q:\n%v", w, err)
		}
	}
}

// refusedByFenceSetup asserts a refusal by the fence's binding configuration
// (no parameters), which carries no gpuvc reason.
func refusedByFenceSetup(t *testing.T, err error, words ...string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), policyRefusal) {
		t.Fatalf("want a refusal by %s, got %v", c.PolicyName, err)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal lacks %q:\n%v", w, err)
		}
	}
}
