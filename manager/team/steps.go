package team

import (
	"context"

	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/teampolicy"
	"github.com/gpuvc/gpuvc/syncer/celpolicy"
)

// hostStep is one idempotent step of provisioning a team's host resources.
type hostStep struct {
	name string // names the step in conditions and events
	run  func(context.Context, *gpuvcv1.Team) error
	// then is the provisioning phase a new Team reports once the step is done.
	then phase
}

func (r *Reconciler) hostSteps() []hostStep {
	return []hostStep{
		{"Namespace", r.ensureNamespace, phasePolicies},
		{"AdmissionParams", r.ensureAdmissionParams, phaseNone},
		{"ResourceQuota", r.ensureQuota, phaseNone},
		{"Queue", r.ensureQueue, phaseNone},
		{"LimitRange", r.ensureLimitRange, phaseNone},
		{"NetworkPolicy", r.ensureNetworkPolicies, phaseNone},
		{"RBAC", r.ensureRBAC, phaseNone},
	}
}

func meta(t *gpuvcv1.Team, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: gpuvcv1.HostNamespace(t.Name)}
}

func (r *Reconciler) ensureNamespace(ctx context.Context, t *gpuvcv1.Team) error {
	return r.apply(ctx, desiredNamespace(t).WithOwnerReferences(ownerRef(t)))
}

func (r *Reconciler) ensureQuota(ctx context.Context, t *gpuvcv1.Team) error {
	before, existed, err := r.quotaHardNow(ctx, t)
	if err != nil {
		return err
	}
	var after corev1.ResourceList
	if q := desiredQuota(t); q != nil {
		if err := r.apply(ctx, q.WithOwnerReferences(ownerRef(t))); err != nil {
			return err
		}
		after = *q.Spec.Hard
	} else if err := r.deleteIfExists(ctx, &corev1.ResourceQuota{ObjectMeta: meta(t, QuotaName)}); err != nil {
		return err
	}
	r.announceQuotaChange(ctx, t, before, existed, after)
	return nil
}

func (r *Reconciler) ensureLimitRange(ctx context.Context, t *gpuvcv1.Team) error {
	if l := desiredLimitRange(t); l != nil {
		return r.apply(ctx, l.WithOwnerReferences(ownerRef(t)))
	}
	return r.deleteIfExists(ctx, &corev1.LimitRange{ObjectMeta: meta(t, LimitRangeName)})
}

func (r *Reconciler) ensureNetworkPolicies(ctx context.Context, t *gpuvcv1.Team) error {
	if p := desiredNetworkPolicy(t); p != nil {
		for _, p := range []*networkingv1ac.NetworkPolicyApplyConfiguration{p, desiredControlPlanePolicy(t), desiredReservationPolicy(t)} {
			if err := r.apply(ctx, p.WithOwnerReferences(ownerRef(t))); err != nil {
				return err
			}
		}
		return nil
	}
	for _, name := range []string{NetworkPolicyName, ControlPlanePolicyName, ReservationPolicyName} {
		if err := r.deleteIfExists(ctx, &networkingv1.NetworkPolicy{ObjectMeta: meta(t, name)}); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) ensureRBAC(ctx context.Context, t *gpuvcv1.Team) error {
	if err := r.apply(ctx, desiredMemberRole(t).WithOwnerReferences(ownerRef(t))); err != nil {
		return err
	}
	sa, role, binding := desiredReserveRBAC(t)
	for _, obj := range []interface {
		runtime.ApplyConfiguration
	}{sa.WithOwnerReferences(ownerRef(t)), role.WithOwnerReferences(ownerRef(t)), binding.WithOwnerReferences(ownerRef(t))} {
		if err := r.apply(ctx, obj); err != nil {
			return err
		}
	}
	if b := desiredMemberBinding(t); b != nil {
		return r.apply(ctx, b.WithOwnerReferences(ownerRef(t)))
	}
	return r.deleteIfExists(ctx, &rbacv1.RoleBinding{ObjectMeta: meta(t, MemberRoleName)})
}

// ensureAdmissionParams writes the parameters the CEL admission policy (the fence
// that holds when the webhook is down) judges the team's pods by. Without them
// every pod of the namespace is refused.
func (r *Reconciler) ensureAdmissionParams(ctx context.Context, t *gpuvcv1.Team) error {
	systemPool := r.opts.SystemPool
	if systemPool == "" {
		systemPool = contract.DefaultSystemPool
	}
	product, memMiB, err := teampolicy.PoolGPU(ctx, r.client, t.Spec.Pool)
	if err != nil {
		return err
	}
	p := celpolicy.PolicyParams(teampolicy.Policy(t, product, memMiB, systemPool))
	return r.apply(ctx, celpolicy.TeamParams(gpuvcv1.HostNamespace(t.Name), p).
		WithLabels(teamLabels(t)).WithOwnerReferences(ownerRef(t)))
}
