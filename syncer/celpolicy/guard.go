package celpolicy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// The parameter ConfigMap lives in the team namespace, where the team's vCluster
// syncer has a host service account that may write ConfigMaps (it syncs the
// tenant's). vCluster renames what it syncs (<name>-x-<namespace>-x-<vcluster>),
// so a tenant cannot reach the name through vCluster; but a compromised or
// misconfigured vCluster holds the service account itself and could rewrite its
// own limits. The guard refuses every CREATE, and every UPDATE that changes the
// data, by anyone but gpuvc (and system:masters, who can remove the policies
// anyway). Deleting the ConfigMap is left alone: without it every pod of the
// namespace is refused (fail closed), and the namespace and garbage collectors
// must be able to remove it.

// paramsGuard is the ValidatingAdmissionPolicy on parameter ConfigMaps.
func paramsGuard(opts Options) *admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration {
	writers := litList(opts.paramsWriters())
	spec := admissionv1ac.ValidatingAdmissionPolicySpec().
		WithFailurePolicy(admissionregistrationv1.Fail).
		WithMatchConstraints(admissionv1ac.MatchResources().WithResourceRules(
			admissionv1ac.NamedRuleWithOperations().
				WithOperations(admissionregistrationv1.Create, admissionregistrationv1.Update).
				WithAPIGroups("").WithAPIVersions("v1").WithResources("configmaps"))).
		WithMatchConditions(admissionv1ac.MatchCondition().WithName("admission-params").
			WithExpression(`object.metadata.name == ` + lit(ParamsName))).
		WithValidations(admissionv1ac.Validation().
			WithExpression(`request.userInfo.username in ` + writers + ` || "system:masters" in request.userInfo.?groups.orValue([]) || ` +
				`(request.operation == "UPDATE" && object.?data.orValue({}) == oldObject.?data.orValue({}) && ` +
				`object.?binaryData.orValue({}) == oldObject.?binaryData.orValue({}))`).
			WithMessage(prefix(ReasonParamsWriter) + "only gpuvc writes a team's admission parameters (ConfigMap " + ParamsName + ")").
			WithMessageExpression(lit(prefix(ReasonParamsWriter)) + ` + request.userInfo.username + " may not ` +
				`" + (request.operation == "CREATE" ? "create" : "change the data of") + " ConfigMap " + namespaceObject.metadata.name + "/` + ParamsName +
				` (limit: only gpuvc, ` + "\" + " + writers + `.join(", ") + ", writes a team's admission parameters)"`).
			WithReason(metav1.StatusReasonForbidden))
	return admissionv1ac.ValidatingAdmissionPolicy(GuardPolicyName).WithLabels(labels()).WithSpec(spec)
}

func paramsGuardBinding() *admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration {
	return admissionv1ac.ValidatingAdmissionPolicyBinding(GuardBindingName).WithLabels(labels()).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicyBindingSpec().
			WithPolicyName(GuardPolicyName).
			WithMatchResources(teamNamespaces()).
			WithValidationActions(admissionregistrationv1.Deny))
}

// teamNamespaces selects namespaces labelled gpuvc.dev/team, as the webhook does.
func teamNamespaces() *admissionv1ac.MatchResourcesApplyConfiguration {
	return admissionv1ac.MatchResources().WithNamespaceSelector(metav1ac.LabelSelector().WithMatchExpressions(
		metav1ac.LabelSelectorRequirement().WithKey(contract.LabelTeam).WithOperator(metav1.LabelSelectorOpExists)))
}
