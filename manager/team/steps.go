package team

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// ensureNetworkPolicies applies gpuvc's policies in the team namespace: the
// default deny with what every pod keeps, the control plane's, the reservation
// pods', DNS, and the same-namespace allowances computed from the team's own
// policies (network_team.go); stale allowances are removed after the new ones
// are in place. The condition NetworkPoliciesHonored says whether the team's
// policies narrow its traffic.
func (r *Reconciler) ensureNetworkPolicies(ctx context.Context, t *gpuvcv1.Team) error {
	var desired []*networkingv1ac.NetworkPolicyApplyConfiguration
	teamPolicies := &networkingv1.NetworkPolicyList{}
	var allowances []namespaceAllowance
	if defaultDeny(t) {
		// vCluster's copies of the team's policies: its marker with the team's
		// release (the cache holds every NetworkPolicy: Owns).
		if err := r.client.List(ctx, teamPolicies, client.InNamespace(gpuvcv1.HostNamespace(t.Name)),
			client.MatchingLabels{contract.LabelVClusterManagedBy: gpuvcv1.ReleaseName(t)}); err != nil {
			return err
		}
		// By name: the condition's message lists them, and must not change
		// with the cache's order.
		slices.SortFunc(teamPolicies.Items, func(a, b networkingv1.NetworkPolicy) int { return strings.Compare(a.Name, b.Name) })
		desired = append(desired, desiredNetworkPolicy(t), desiredControlPlanePolicy(t), desiredReservationPolicy(t), desiredDNSPolicy(t))
		for _, dir := range []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress} {
			a, err := namespaceAllowanceFor(dir, teamPolicies.Items)
			if err != nil {
				return err
			}
			allowances = append(allowances, a)
			desired = append(desired, desiredNamespaceAllowances(t, a)...)
		}
	}
	keep := map[string]bool{}
	objs := make([]runtime.ApplyConfiguration, 0, len(desired))
	for _, p := range desired {
		objs = append(objs, p.WithOwnerReferences(ownerRef(t)))
		keep[*p.Name] = true
	}
	if err := r.applyAll(ctx, objs...); err != nil {
		return err
	}
	if err := r.removeStaleNetworkPolicies(ctx, t, keep); err != nil {
		return err
	}
	r.reportHonored(t, len(teamPolicies.Items), allowances)
	return nil
}

// removeStaleNetworkPolicies deletes gpuvc's policies of the namespace that are
// not in keep: allowances past the current count, or all of them once the
// Team turns default deny off.
func (r *Reconciler) removeStaleNetworkPolicies(ctx context.Context, t *gpuvcv1.Team, keep map[string]bool) error {
	for _, name := range []string{NetworkPolicyName, ControlPlanePolicyName, ReservationPolicyName, DNSPolicyName} {
		if keep[name] {
			continue
		}
		if err := r.deleteIfExists(ctx, &networkingv1.NetworkPolicy{ObjectMeta: meta(t, name)}); err != nil {
			return err
		}
	}
	mine := &networkingv1.NetworkPolicyList{}
	if err := r.client.List(ctx, mine, client.InNamespace(gpuvcv1.HostNamespace(t.Name)), client.MatchingLabels(teamLabels(t))); err != nil {
		return err
	}
	for i := range mine.Items {
		p := &mine.Items[i]
		if isAllowance(p) && !keep[p.Name] {
			if err := r.deleteIfExists(ctx, &networkingv1.NetworkPolicy{ObjectMeta: meta(t, p.Name)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// reportHonored sets the condition NetworkPoliciesHonored, with an event when
// it turns False (or says something new while False) and when it turns True
// again.
func (r *Reconciler) reportHonored(t *gpuvcv1.Team, teamPolicies int, allowances []namespaceAllowance) {
	ok, reason, msg := honoredCondition(t, teamPolicies, allowances...)
	var before *metav1.Condition // a copy: condition updates the one in t in place
	if c := apimeta.FindStatusCondition(t.Status.Conditions, gpuvcv1.ConditionNetworkPoliciesHonored); c != nil {
		before = c.DeepCopy()
	}
	r.condition(t, gpuvcv1.ConditionNetworkPoliciesHonored, ok, reason, msg)
	switch {
	case !ok && (before == nil || before.Message != msg):
		r.recorder.Eventf(t, nil, corev1.EventTypeWarning, reason, "NetworkPolicy", "%s", eventNote(msg))
	case ok && before != nil && before.Status == metav1.ConditionFalse:
		r.recorder.Eventf(t, nil, corev1.EventTypeNormal, gpuvcv1.ConditionNetworkPoliciesHonored, "NetworkPolicy", "%s", eventNote(msg))
	}
}

func (r *Reconciler) ensureRBAC(ctx context.Context, t *gpuvcv1.Team) error {
	sa, role, binding := desiredReserveRBAC(t)
	objs := []runtime.ApplyConfiguration{desiredMemberRole(t).WithOwnerReferences(ownerRef(t)),
		sa.WithOwnerReferences(ownerRef(t)), role.WithOwnerReferences(ownerRef(t)), binding.WithOwnerReferences(ownerRef(t))}
	b := desiredMemberBinding(t)
	if b != nil {
		objs = append(objs, b.WithOwnerReferences(ownerRef(t)))
	}
	if err := r.applyAll(ctx, objs...); err != nil || b != nil {
		return err
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
