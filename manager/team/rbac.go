package team

import (
	rbacv1 "k8s.io/api/rbac/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// desiredMemberRole lets team members read, on the host, exactly their kubeconfig
// Secret and their namespace's pods, logs and events — enough for `gpuvc team
// kubeconfig` and for debugging where a pod landed, nothing of any other team.
func desiredMemberRole(t *gpuvcv1.Team) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(MemberRoleName, gpuvcv1.HostNamespace(t.Name)).
		WithLabels(teamLabels(t)).
		WithRules(
			rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("secrets").
				WithResourceNames(contract.KubeconfigSecretName).WithVerbs("get"),
			rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("pods", "pods/log", "events").
				WithVerbs("get", "list", "watch"),
		)
}

// desiredMemberBinding binds the role to the Team's members, or nil without members.
func desiredMemberBinding(t *gpuvcv1.Team) *rbacv1ac.RoleBindingApplyConfiguration {
	if len(t.Spec.Members) == 0 {
		return nil
	}
	b := rbacv1ac.RoleBinding(MemberRoleName, gpuvcv1.HostNamespace(t.Name)).
		WithLabels(teamLabels(t)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(MemberRoleName))
	for _, m := range t.Spec.Members {
		b.WithSubjects(rbacv1ac.Subject().WithKind(m.Kind).WithAPIGroup(rbacv1.GroupName).WithName(m.Name))
	}
	return b
}

// desiredReserveRBAC lets reservation pods (gpuvc reserve) record the UUID of the
// GPU they hold on their own pod.
func desiredReserveRBAC(t *gpuvcv1.Team) (*corev1ac.ServiceAccountApplyConfiguration, *rbacv1ac.RoleApplyConfiguration, *rbacv1ac.RoleBindingApplyConfiguration) {
	ns := gpuvcv1.HostNamespace(t.Name)
	sa := corev1ac.ServiceAccount(contract.ReserveServiceAccount, ns).WithLabels(teamLabels(t))
	role := rbacv1ac.Role(contract.ReserveServiceAccount, ns).WithLabels(teamLabels(t)).
		WithRules(rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("pods").WithVerbs("get", "patch"))
	binding := rbacv1ac.RoleBinding(contract.ReserveServiceAccount, ns).WithLabels(teamLabels(t)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(contract.ReserveServiceAccount)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(contract.ReserveServiceAccount).WithNamespace(ns))
	return sa, role, binding
}
