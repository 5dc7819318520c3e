package celpolicy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
)

// A team's PersistentVolumeClaims reach its host namespace through vCluster
// (sync.toHost.persistentVolumeClaims). Its PersistentVolumes do not (PV sync
// is off: a hostPath or local PV a team writes stays in its own cluster), and
// pods with hostPath volumes are refused by the pod fence. What is left is a
// claim that names a host volume (spec.volumeName): it would bind to a
// PersistentVolume that was not provisioned for it — a platform engineer's
// hand-made hostPath or local volume, or a released one with another team's
// data. The storage fence refuses a new claim that names a volume, except by
// gpuvc and cluster admins; the volume controller's binding of a claim is an
// update, not judged.

// storageFence is the ValidatingAdmissionPolicy on new PersistentVolumeClaims
// in team namespaces.
func storageFence(opts Options) *admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration {
	writers := litList(opts.paramsWriters())
	spec := admissionv1ac.ValidatingAdmissionPolicySpec().
		WithFailurePolicy(admissionregistrationv1.Fail).
		WithMatchConstraints(admissionv1ac.MatchResources().WithResourceRules(
			admissionv1ac.NamedRuleWithOperations().
				WithOperations(admissionregistrationv1.Create).
				WithAPIGroups("").WithAPIVersions("v1").WithResources("persistentvolumeclaims"))).
		WithMatchConditions(admissionv1ac.MatchCondition().WithName("not-gpuvc-or-admin").
			WithExpression(`!(request.userInfo.username in ` + writers + `) && !("system:masters" in request.userInfo.?groups.orValue([]))`)).
		WithValidations(admissionv1ac.Validation().
			WithExpression(`object.spec.?volumeName.orValue("") == ""`).
			WithMessage(prefix(ReasonClaimNamesVolume) + "spec.volumeName binds a team's claim to a host volume not provisioned for it (limit: claims are provisioned through a StorageClass)").
			WithMessageExpression(lit(prefix(ReasonClaimNamesVolume)+"PersistentVolumeClaim ") + ` + namespaceObject.metadata.name + "/" + object.metadata.name + ` +
				`" names the host volume spec.volumeName=" + object.spec.volumeName + ", which was not provisioned for it (a hand-made hostPath or local volume, another team's released data) ` +
				`(limit: a team's claims are provisioned through a StorageClass); remove spec.volumeName"`).
			WithReason(metav1.StatusReasonForbidden))
	return admissionv1ac.ValidatingAdmissionPolicy(StorageFenceName).WithLabels(labels()).WithSpec(spec)
}

func storageFenceBinding() *admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration {
	return admissionv1ac.ValidatingAdmissionPolicyBinding(StorageFenceBindingName).WithLabels(labels()).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicyBindingSpec().
			WithPolicyName(StorageFenceName).
			WithMatchResources(teamNamespaces()).
			WithValidationActions(admissionregistrationv1.Deny))
}
