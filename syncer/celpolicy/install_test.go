package celpolicy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	c "github.com/gpuvc/gpuvc/syncer/celpolicy"
)

// TestInstallPermissions pins the RBAC the manager needs beyond write access to
// policies and bindings: the API server lets only users who may read every
// object of the paramKind create a policy with it ("get" on all ConfigMaps),
// and a binding only if they may read the ConfigMap it names.
func TestInstallPermissions(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	const user = "test-installer"
	grant(ctx, t, user+"-vap", user, rbacv1.PolicyRule{
		APIGroups: []string{"admissionregistration.k8s.io"},
		Resources: []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"},
		Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete"},
	})
	installer, err := impersonate(user)
	if err != nil {
		t.Fatal(err)
	}
	// Fresh names, so the API server authorizes a creation (it skips the
	// check on updates that keep paramKind and paramRef).
	policy := func() error {
		p := c.ClusterObjects(c.Options{})[0].(*admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration)
		return dryRunApply(ctx, installer, p.WithName("authz-probe"), nil)
	}
	binding := func() error {
		b := c.ClusterObjects(c.Options{})[1].(*admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration)
		return dryRunApply(ctx, installer, nil, b.WithName("authz-probe"))
	}
	// RBAC takes effect when the API server's caches have it: poll.
	eventually(ctx, t, "policy refused without get on ConfigMaps", func() error { return policy() },
		`must have "get" permission on all objects of the referenced paramKind`)
	eventually(ctx, t, "binding refused without get on the parameter ConfigMaps", func() error { return binding() },
		`does not have "get" permission on the object referenced by paramRef`)

	grant(ctx, t, user+"-configmaps", user, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}})
	eventually(ctx, t, "policy admitted with get on ConfigMaps", func() error { return policy() }, "")
	eventually(ctx, t, "binding admitted with get on ConfigMaps", func() error { return binding() }, "")
}

// eventually polls f until its error contains want, or until it succeeds when
// want is "".
func eventually(ctx context.Context, t *testing.T, what string, f func() error, want string) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		last = f()
		if want == "" {
			return last == nil, nil
		}
		return last != nil && strings.Contains(last.Error(), want), nil
	})
	if err != nil {
		t.Fatalf("%s: never happened; last: %v", what, last)
	}
}

func dryRunApply(ctx context.Context, cl kubernetes.Interface, p *admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration, b *admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration) error {
	opts := metav1.ApplyOptions{FieldManager: c.FieldManager, Force: true, DryRun: []string{metav1.DryRunAll}}
	var err error
	if p != nil {
		_, err = cl.AdmissionregistrationV1().ValidatingAdmissionPolicies().Apply(ctx, p, opts)
	} else {
		_, err = cl.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Apply(ctx, b, opts)
	}
	return err
}

// grant binds a cluster-wide rule to a user.
func grant(ctx context.Context, t *testing.T, name, user string, rule rbacv1.PolicyRule) {
	t.Helper()
	a := env.cp.Client.RbacV1()
	if _, err := a.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
