package celpolicy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
)

// A team's NetworkPolicies reach the host through vCluster's syncer
// (sync.toHost.networkPolicies), which keeps pod and namespace selectors inside
// the team's host namespace but copies ipBlock peers as written, and a rule
// without peers means "everyone". NetworkPolicies add up: whatever one admits
// is admitted, whatever the host's default deny says. So the fence lets a team
// write only policies that narrow what the host already allows: every rule
// names its peers, and every peer is a podSelector in the team's own namespace
// — no namespaceSelector (another team's namespace), no ipBlock (other teams'
// pod IPs, the node, 0.0.0.0/0). Egress to addresses outside the cluster is the
// Team's spec.network.allowedEgressCIDRs, a platform engineer's setting. gpuvc's
// own policies (the manager) and cluster admins (system:masters) are not
// judged.

// networkPolicyFence is the ValidatingAdmissionPolicy on NetworkPolicies in
// team namespaces.
func networkPolicyFence(opts Options) *admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration {
	writers := litList(opts.paramsWriters())
	peersOf := func(rules, field string) string {
		return `variables.` + rules + `.map(r, r.?` + field + `.orValue([]))`
	}
	spec := admissionv1ac.ValidatingAdmissionPolicySpec().
		WithFailurePolicy(admissionregistrationv1.Fail).
		WithMatchConstraints(admissionv1ac.MatchResources().WithResourceRules(
			admissionv1ac.NamedRuleWithOperations().
				WithOperations(admissionregistrationv1.Create, admissionregistrationv1.Update).
				WithAPIGroups("networking.k8s.io").WithAPIVersions("v1").WithResources("networkpolicies"))).
		WithMatchConditions(admissionv1ac.MatchCondition().WithName("not-gpuvc-or-admin").
			WithExpression(`!(request.userInfo.username in `+writers+`) && !("system:masters" in request.userInfo.?groups.orValue([]))`)).
		WithVariables(
			admissionv1ac.Variable().WithName("ingress").WithExpression(`object.spec.?ingress.orValue([])`),
			admissionv1ac.Variable().WithName("egress").WithExpression(`object.spec.?egress.orValue([])`),
			admissionv1ac.Variable().WithName("fromPeers").WithExpression(peersOf("ingress", "from")),
			admissionv1ac.Variable().WithName("toPeers").WithExpression(peersOf("egress", "to")),
			admissionv1ac.Variable().WithName("ipBlocks").WithExpression(
				`(variables.fromPeers + variables.toPeers).map(ps, ps.filter(p, has(p.ipBlock)).map(p, p.ipBlock.cidr + `+
					`(size(p.ipBlock.?except.orValue([])) > 0 ? " except " + p.ipBlock.except.join(",") : "")).join(", ")).filter(s, s != "")`),
			admissionv1ac.Variable().WithName("namespaceSelectors").WithExpression(
				`(variables.fromPeers + variables.toPeers).exists(ps, ps.exists(p, has(p.namespaceSelector)))`),
		).
		WithValidations(
			networkCheck(ReasonNetworkPolicyAllSources,
				`variables.ingress.all(r, size(r.?from.orValue([])) > 0)`,
				`" has an ingress rule without from, which admits every source: other teams' pods, the node, anything outside `+
					`(limit: a team's policy admits only the team's own pods); name them with from: [{podSelector: ...}]"`),
			networkCheck(ReasonNetworkPolicyAllSources,
				`variables.egress.all(r, size(r.?to.orValue([])) > 0)`,
				`" has an egress rule without to, which allows every destination: other teams' pods, the node, anything outside `+
					`(limit: a team's policy allows only the team's own pods; addresses outside the cluster are the Team's spec.network.allowedEgressCIDRs); `+
					`name them with to: [{podSelector: ...}] or ask the platform team for an egress CIDR"`),
			networkCheck(ReasonNetworkPolicyNamespace,
				`!variables.namespaceSelectors`,
				`" names a namespaceSelector peer, which on the host reaches other teams' namespaces `+
					`(limit: the team's own namespace: vCluster writes podSelector peers only); use podSelector"`),
			networkCheck(ReasonNetworkPolicyIPBlock,
				`size(variables.ipBlocks) == 0`,
				`" names ipBlock peers [" + variables.ipBlocks.join("; ") + "], which on the host reach other teams' pods, the node and the world past the host's default deny `+
					`(limit: podSelector peers of the team's own pods; egress CIDRs are the Team's spec.network.allowedEgressCIDRs, set by the platform team); `+
					`remove the ipBlock or ask the platform team for an egress CIDR"`),
		)
	return admissionv1ac.ValidatingAdmissionPolicy(NetworkPolicyFenceName).WithLabels(labels()).WithSpec(spec)
}

// networkCheck refuses a NetworkPolicy unless expr holds; why follows the
// policy's name in the message (a CEL string expression).
func networkCheck(reason, expr, why string) *admissionv1ac.ValidationApplyConfiguration {
	return admissionv1ac.Validation().
		WithExpression(expr).
		WithMessage(prefix(reason) + "a team's NetworkPolicy may only narrow the host's default deny (limit: podSelector peers of the team's own pods)").
		WithMessageExpression(lit(prefix(reason)+"NetworkPolicy ") + ` + namespaceObject.metadata.name + "/" + object.metadata.name + ` + why).
		WithReason(metav1.StatusReasonForbidden)
}

func networkPolicyFenceBinding() *admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration {
	return admissionv1ac.ValidatingAdmissionPolicyBinding(NetworkPolicyFenceBindingName).WithLabels(labels()).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicyBindingSpec().
			WithPolicyName(NetworkPolicyFenceName).
			WithMatchResources(teamNamespaces()).
			WithValidationActions(admissionregistrationv1.Deny))
}
