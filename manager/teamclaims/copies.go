package teamclaims

import (
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Kinds as vCluster writes them into annotationKind (GroupVersionKind.String()).
const (
	kindClaim    = "resource.k8s.io/v1, Kind=ResourceClaim"
	kindTemplate = "resource.k8s.io/v1, Kind=ResourceClaimTemplate"
)

// hostMeta is the metadata of the host copy of virtual object v (kind as
// annotationKind has it): the pod translator's name, vCluster's marker and
// namespace labels and its object annotations, and LabelDRACopy. The
// tenant's own labels and annotations stay in its cluster: on the host they
// would only be keys a tenant chose next to gpuvc's.
func hostMeta(v metav1.ObjectMeta, kind, namespace, release string) metav1.ObjectMeta {
	name := HostName(v.Name, v.Namespace, release)
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: namespace,
		Labels: map[string]string{
			contract.LabelVClusterManagedBy: release,
			contract.KeyVClusterNamespace:   v.Namespace,
			contract.LabelDRACopy:           "true",
		},
		Annotations: map[string]string{
			annotationName:          v.Name,
			annotationNamespace:     v.Namespace,
			annotationUID:           string(v.UID),
			annotationKind:          kind,
			annotationHostName:      name,
			annotationHostNamespace: namespace,
		},
	}
}

// hostClaim is the host copy of virtual claim v: its spec as the tenant wrote
// it (immutable; the fence judges it on the host), no status.
func hostClaim(v *resourcev1.ResourceClaim, namespace, release string) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: hostMeta(v.ObjectMeta, kindClaim, namespace, release),
		Spec:       *v.Spec.DeepCopy(),
	}
}

// hostTemplate is the host copy of virtual template v. The metadata it gives
// the claims made from it keeps the tenant's keys except gpuvc's and
// vCluster's: a claim the resource claim controller makes must not pass for
// one of gpuvc's copies or vCluster's.
func hostTemplate(v *resourcev1.ResourceClaimTemplate, namespace, release string) *resourcev1.ResourceClaimTemplate {
	t := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: hostMeta(v.ObjectMeta, kindTemplate, namespace, release),
		Spec:       *v.Spec.DeepCopy(),
	}
	t.Spec.ObjectMeta = metav1.ObjectMeta{
		Labels:      withoutReservedKeys(v.Spec.ObjectMeta.Labels),
		Annotations: withoutReservedKeys(v.Spec.ObjectMeta.Annotations),
	}
	return t
}

// withoutReservedKeys drops gpuvc.dev/ and vcluster.loft.sh/ keys.
func withoutReservedKeys(m map[string]string) map[string]string {
	var out map[string]string
	for k, v := range m {
		if reservedKey(k) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

func reservedKey(k string) bool {
	prefix, _, found := strings.Cut(k, "/")
	if !found {
		return false
	}
	return prefix == "gpuvc.dev" || strings.HasSuffix(prefix, ".gpuvc.dev") ||
		prefix == "vcluster.loft.sh" || strings.HasSuffix(prefix, ".vcluster.loft.sh")
}

// copyOf reports whether host object meta h is the copy of virtual object v
// (same UID): a virtual object deleted and created again under its name has a
// new UID, and its old copy must go first (a claim's spec is immutable).
func copyOf(h, v metav1.ObjectMeta) bool {
	return h.Annotations[annotationUID] == string(v.UID)
}
