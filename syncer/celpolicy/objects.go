package celpolicy

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/syncer"
)

// Options shape the cluster-wide objects. The zero value fits a standard
// install (manager service account gpuvc-system/gpuvc-manager, the
// kube-controller-manager's StatefulSet controller).
type Options struct {
	// ParamsWriters are the users who may create parameter ConfigMaps and change
	// their data, besides members of system:masters. Empty: DefaultParamsWriter.
	ParamsWriters []string
	// ControlPlaneCreators are the users whose pods may be a team's vCluster
	// control plane (the StatefulSet controller). Empty:
	// syncer.DefaultStatefulSetControllers, as the webhook.
	ControlPlaneCreators []string
	// TrustedUsers are gpuvc's own components (the share controller): the only
	// users who may write gpuvc.dev/ metadata on pods and lift the share gate,
	// as the webhook's Options.TrustedUsers. Empty: the ParamsWriters (the
	// manager runs the share controller).
	TrustedUsers []string
	// KueueUsers are the users Kueue's controller runs as: the only ones who
	// may lift Kueue's admission gate, as the webhook's Options.KueueUsers.
	// Empty: contract.KueueDefaultUser.
	KueueUsers []string
}

func (o Options) kueueUsers() []string {
	if len(o.KueueUsers) == 0 {
		return []string{contract.KueueDefaultUser}
	}
	return o.KueueUsers
}

func (o Options) trustedUsers() []string {
	if len(o.TrustedUsers) == 0 {
		return o.paramsWriters()
	}
	return o.TrustedUsers
}

func (o Options) paramsWriters() []string {
	if len(o.ParamsWriters) == 0 {
		return []string{DefaultParamsWriter}
	}
	return o.ParamsWriters
}

func (o Options) controlPlaneCreators() []string {
	if len(o.ControlPlaneCreators) == 0 {
		return syncer.DefaultStatefulSetControllers
	}
	return o.ControlPlaneCreators
}

// ClusterObjects returns the cluster-scoped objects of the fence, policies
// before their bindings: the pod fence and its binding, the guard of the
// parameter ConfigMaps and its binding, the NetworkPolicy fence and its
// binding, the storage fence and its binding, the DRA fences (claims,
// templates) and their bindings. Apply each with server-side apply.
func ClusterObjects(opts Options) []runtime.ApplyConfiguration {
	return []runtime.ApplyConfiguration{podFence(opts), podFenceBinding(), paramsGuard(opts), paramsGuardBinding(),
		networkPolicyFence(opts), networkPolicyFenceBinding(), storageFence(opts), storageFenceBinding(),
		claimFence(), draFenceBinding(ClaimFenceName), templateFence(), draFenceBinding(TemplateFenceName)}
}

// Install applies ClusterObjects with server-side apply (field manager
// FieldManager, taking over conflicting fields). The API server enforces the
// policies shortly after, asynchronously.
func Install(ctx context.Context, c kubernetes.Interface, opts Options) error {
	apply := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	for _, obj := range ClusterObjects(opts) {
		var err error
		switch o := obj.(type) {
		case *admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration:
			_, err = c.AdmissionregistrationV1().ValidatingAdmissionPolicies().Apply(ctx, o, apply)
		case *admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration:
			_, err = c.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Apply(ctx, o, apply)
		default:
			err = fmt.Errorf("unexpected object %T", obj)
		}
		if err != nil {
			return fmt.Errorf("applying the CEL pod fence: %w", err)
		}
	}
	return nil
}
