package celpolicy_test

import (
	"context"
	corev1 "k8s.io/api/core/v1"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/syncer"
	"github.com/gpuvc/gpuvc/syncer/celpolicy"
)

func TestClusterObjects(t *testing.T) {
	objs := celpolicy.ClusterObjects(celpolicy.Options{})
	if len(objs) != 12 {
		t.Fatalf("got %d objects, want policy, binding, guard, guard binding, network fence, network fence binding, storage fence, storage fence binding, claim fence, claim fence binding, template fence, template fence binding", len(objs))
	}
	for i, name := range map[int]string{8: celpolicy.ClaimFenceName, 10: celpolicy.TemplateFenceName} {
		dra := objs[i].(*admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration)
		draBinding := objs[i+1].(*admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration)
		if *dra.Name != name || *draBinding.Spec.PolicyName != name || *draBinding.Spec.ParamRef.Name != celpolicy.ParamsName ||
			*draBinding.Spec.ParamRef.ParameterNotFoundAction != admissionregistrationv1.DenyAction {
			t.Errorf("DRA fence %d: %s bound by %s to params %s (%s)", i, *dra.Name, *draBinding.Spec.PolicyName, *draBinding.Spec.ParamRef.Name, *draBinding.Spec.ParamRef.ParameterNotFoundAction)
		}
	}
	fence := objs[0].(*admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration)
	binding := objs[1].(*admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration)
	guard := objs[2].(*admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration)
	guardBinding := objs[3].(*admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration)
	network := objs[4].(*admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration)
	networkBinding := objs[5].(*admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration)

	if got := *fence.Name; got != celpolicy.PolicyName {
		t.Errorf("policy name %s", got)
	}
	if got := *fence.Spec.ParamKind; *got.Kind != "ConfigMap" || *got.APIVersion != "v1" {
		t.Errorf("paramKind %s/%s, want v1 ConfigMap", *got.APIVersion, *got.Kind)
	}
	if got := *fence.Spec.FailurePolicy; got != admissionregistrationv1.Fail {
		t.Errorf("failurePolicy %s", got)
	}
	rule := fence.Spec.MatchConstraints.ResourceRules[0]
	if diff := cmp.Diff([]string{"pods", "pods/ephemeralcontainers"}, rule.Resources); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, rule.Operations); diff != "" {
		t.Errorf("operations (-want +got):\n%s", diff)
	}
	for _, v := range fence.Spec.Validations {
		if !strings.HasPrefix(*v.Message, "gpuvc: ") || *v.MessageExpression == "" || *v.Reason != metav1.StatusReasonForbidden {
			t.Errorf("validation %q: message %q, messageExpression set %v, reason %s", *v.Expression, *v.Message, *v.MessageExpression != "", *v.Reason)
		}
	}

	spec := binding.Spec
	if *spec.PolicyName != celpolicy.PolicyName {
		t.Errorf("binding binds %s", *spec.PolicyName)
	}
	if diff := cmp.Diff(admissionv1ac.ParamRef().WithName(celpolicy.ParamsName).
		WithParameterNotFoundAction(admissionregistrationv1.DenyAction), spec.ParamRef); diff != "" {
		t.Errorf("paramRef (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}, spec.ValidationActions); diff != "" {
		t.Errorf("validationActions (-want +got):\n%s", diff)
	}
	for _, v := range network.Spec.Validations {
		if !strings.HasPrefix(*v.Message, "gpuvc: ") || *v.MessageExpression == "" || *v.Reason != metav1.StatusReasonForbidden {
			t.Errorf("network fence validation %q: message %q, messageExpression set %v, reason %s", *v.Expression, *v.Message, *v.MessageExpression != "", *v.Reason)
		}
	}
	if *networkBinding.Spec.PolicyName != *network.Name || network.Spec.ParamKind != nil || *network.Spec.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("network fence binding binds %s; paramKind %v", *networkBinding.Spec.PolicyName, network.Spec.ParamKind)
	}
	for _, b := range []*admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration{binding, guardBinding, networkBinding} {
		sel := b.Spec.MatchResources.NamespaceSelector.MatchExpressions
		if len(sel) != 1 || *sel[0].Key != contract.LabelTeam || *sel[0].Operator != metav1.LabelSelectorOpExists {
			t.Errorf("binding %s selects namespaces %+v, want %s Exists", *b.Name, sel, contract.LabelTeam)
		}
	}
	if *guardBinding.Spec.PolicyName != *guard.Name || guard.Spec.ParamKind != nil {
		t.Errorf("guard binding binds %s; guard paramKind %v", *guardBinding.Spec.PolicyName, guard.Spec.ParamKind)
	}
}

func TestOptionsReachTheExpressions(t *testing.T) {
	objs := celpolicy.ClusterObjects(celpolicy.Options{
		ParamsWriters:        []string{"system:serviceaccount:ops:gpuvc"},
		ControlPlaneCreators: []string{"system:serviceaccount:kube-system:my-sts-controller"},
	})
	fence := objs[0].(*admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration)
	guard := objs[2].(*admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration)
	var cp string
	for _, v := range fence.Spec.Variables {
		if *v.Name == "controlPlane" {
			cp = *v.Expression
		}
	}
	if !strings.Contains(cp, `["system:serviceaccount:kube-system:my-sts-controller"]`) || strings.Contains(cp, syncer.DefaultStatefulSetControllers[0]) {
		t.Errorf("controlPlane variable does not use the configured creators: %s", cp)
	}
	if e := *guard.Spec.Validations[0].Expression; !strings.Contains(e, `["system:serviceaccount:ops:gpuvc"]`) || strings.Contains(e, celpolicy.DefaultParamsWriter) {
		t.Errorf("guard does not use the configured writers: %s", e)
	}
}

func TestTrustedUsersReachTheExpressions(t *testing.T) {
	trusted := func(opts celpolicy.Options) string {
		fence := celpolicy.ClusterObjects(opts)[0].(*admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration)
		for _, v := range fence.Spec.Variables {
			if *v.Name == "trusted" {
				return *v.Expression
			}
		}
		t.Fatal("no trusted variable")
		return ""
	}
	if e := trusted(celpolicy.Options{ParamsWriters: []string{"system:serviceaccount:ops:gpuvc"}}); !strings.Contains(e, `["system:serviceaccount:ops:gpuvc"]`) {
		t.Errorf("trusted users do not default to the params writers: %s", e)
	}
	if e := trusted(celpolicy.Options{TrustedUsers: []string{"share-controller"}}); !strings.Contains(e, `["share-controller"]`) || strings.Contains(e, celpolicy.DefaultParamsWriter) {
		t.Errorf("trusted variable does not use the configured users: %s", e)
	}
}

func TestPolicyParams(t *testing.T) {
	for name, tc := range map[string]struct {
		policy syncer.TeamPolicy
		want   map[string]string
	}{
		"defaults": {syncer.TeamPolicy{Pool: "a100"}, map[string]string{
			"pool": "a100", "maxGPUsPerPod": "0", "systemPool": "system", "controlPlane": "",
			"migProfiles": "", "fractions": "false", "gpuMemoryMiB": "0", "schedulerName": "default-scheduler",
			"priorityClasses": "", "runtimeClasses": "", "queue": "",
			"tolerations": "", "kueueQueue": "", "kueuePriorityClasses": "", "dra": "false", "deviceClasses": "",
		}},
		"everything": {syncer.TeamPolicy{
			Pool: "a100", SystemPool: "infra", MaxGPUsPerPod: 4, VClusterName: "fraud", PoolGPUMemoryMiB: 81920,
			AllowedMIGProfiles: []string{"2g.20gb", "1g.10gb", "2g.20gb"}, WholeGPUAs: "3g.40gb", FractionsEnabled: true,
			SchedulerName: "kai-scheduler", Queue: "fraud", AllowedPriorityClasses: []string{"low", "", "high"}, AllowedRuntimeClasses: []string{"nvidia"},
			KueueQueue: "gpuvc", AllowedKueuePriorityClasses: []string{"team-low", "team-batch"},
			DRA: true, AllowedDeviceClasses: []string{"mig.nvidia.com", "gpu.nvidia.com"},
			AllowedTolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}, {Key: "example.com/x", Value: "y"}},
		}, map[string]string{
			"pool": "a100", "maxGPUsPerPod": "4", "systemPool": "infra", "controlPlane": "fraud",
			"migProfiles": "1g.10gb,2g.20gb,3g.40gb", "fractions": "true", "gpuMemoryMiB": "81920", "schedulerName": "kai-scheduler",
			"priorityClasses": "high,low", "runtimeClasses": "nvidia", "queue": "fraud",
			"tolerations": "example.com/x|Equal|y|,nvidia.com/gpu|Exists||NoSchedule", "kueueQueue": "gpuvc", "kueuePriorityClasses": "team-batch,team-low",
			"dra": "true", "deviceClasses": "gpu.nvidia.com,mig.nvidia.com",
		}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, celpolicy.PolicyParams(&tc.policy)); diff != "" {
				t.Errorf("params (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTeamParams(t *testing.T) {
	got := celpolicy.TeamParams("team-fraud", celpolicy.Params("a100", 4, "system", "fraud"))
	want := map[string]string{"pool": "a100", "maxGPUsPerPod": "4", "systemPool": "system", "controlPlane": "fraud"}
	if diff := cmp.Diff(want, got.Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	if *got.Name != celpolicy.ParamsName || *got.Namespace != "team-fraud" {
		t.Errorf("ConfigMap %s/%s", *got.Namespace, *got.Name)
	}
}

// TestPolicyTypeChecks: the API server type-checks every expression against
// the Pod and ConfigMap schemas and reports problems in the policy's status.
// A canary policy with a type error proves the check runs.
func TestPolicyTypeChecks(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	policies := env.cp.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	canary := admissionv1ac.ValidatingAdmissionPolicy("typecheck-canary").WithSpec(admissionv1ac.ValidatingAdmissionPolicySpec().
		WithMatchConstraints(admissionv1ac.MatchResources().WithResourceRules(admissionv1ac.NamedRuleWithOperations().
			WithOperations(admissionregistrationv1.Create).WithAPIGroups("").WithAPIVersions("v1").WithResources("pods"))).
		WithValidations(admissionv1ac.Validation().WithExpression(`object.spec.containers[0].name == 1`)))
	if _, err := policies.Apply(ctx, canary, metav1.ApplyOptions{FieldManager: "test"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = policies.Delete(context.Background(), "typecheck-canary", metav1.DeleteOptions{}) })

	typeChecked := func(name string) *admissionregistrationv1.ValidatingAdmissionPolicy {
		var p *admissionregistrationv1.ValidatingAdmissionPolicy
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			var err error
			p, err = policies.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return p.Status.ObservedGeneration == p.Generation && p.Status.TypeChecking != nil, nil
		})
		if err != nil {
			t.Fatalf("%s: no type-checking status: %v", name, err)
		}
		return p
	}
	if w := typeChecked("typecheck-canary").Status.TypeChecking.ExpressionWarnings; len(w) == 0 {
		t.Fatal("the API server reported no warning for a type error: type checking does not run")
	} else {
		t.Logf("canary: %s: %s", w[0].FieldRef, w[0].Warning)
	}
	for _, name := range []string{celpolicy.PolicyName, celpolicy.GuardPolicyName, celpolicy.NetworkPolicyFenceName, celpolicy.StorageFenceName} {
		for _, w := range typeChecked(name).Status.TypeChecking.ExpressionWarnings {
			t.Errorf("%s: %s: %s", name, w.FieldRef, w.Warning)
		}
	}
}
