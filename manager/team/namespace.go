package team

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// Pod Security Admission labels.
const (
	psaEnforce        = "pod-security.kubernetes.io/enforce"
	psaEnforceVersion = "pod-security.kubernetes.io/enforce-version"
	psaWarn           = "pod-security.kubernetes.io/warn"
	psaAudit          = "pod-security.kubernetes.io/audit"
)

// desiredNamespace is the team's host namespace: labelled with team and pool (the
// syncer's webhook selects on them) and with the team's Pod Security level.
func desiredNamespace(t *gpuvcv1.Team) *corev1ac.NamespaceApplyConfiguration {
	level := t.Spec.PodSecurity
	if level == "" {
		level = "baseline"
	}
	labels := teamLabels(t)
	labels[contract.LabelPool] = t.Spec.Pool
	labels[psaEnforce] = level
	labels[psaEnforceVersion] = "latest"
	labels[psaWarn] = level
	labels[psaAudit] = level
	return corev1ac.Namespace(gpuvcv1.HostNamespace(t.Name)).WithLabels(labels)
}
