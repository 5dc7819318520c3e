package team

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

func desiredKubeconfigSecret(t *gpuvcv1.Team, kubeconfig []byte) *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(contract.KubeconfigSecretName, gpuvcv1.HostNamespace(t.Name)).
		WithLabels(teamLabels(t)).
		WithType("Opaque").
		WithData(map[string][]byte{contract.KubeconfigSecretKey: kubeconfig})
}
