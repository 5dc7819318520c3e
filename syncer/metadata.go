package syncer

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Reserved metadata: gpuvc.dev/ labels and annotations drive the share
// controller and the role of a pod, so only gpuvc writes them.

// reservedMetadata returns the gpuvc.dev/ labels and annotations the pod must
// carry.
func reservedMetadata(in *Input) (labels, annotations map[string]string) {
	labels = map[string]string{contract.LabelTeam: in.Policy.Team}
	annotations = map[string]string{contract.AnnotationRole: in.Role}
	if in.Role != contract.RoleWorkload {
		return labels, annotations
	}
	if s, ok, reason, _ := parseShare(in); ok && reason == "" && in.Policy.FractionsEnabled {
		labels[contract.LabelGPUShare] = "true"
		annotations[contract.AnnotationShareConfigMap] = shareConfigMapName(in.Pod.Name)
		if s.fraction != "" {
			annotations[contract.AnnotationGPUFraction] = s.fraction
		} else {
			annotations[contract.AnnotationGPUMemory] = strconv.FormatInt(s.memoryMiB, 10)
		}
	}
	return labels, annotations
}

// mutateReservedMetadata makes the pod's gpuvc.dev/ keys exactly the ones gpuvc
// sets: tenant-written keys are removed. Trusted requests keep extra keys of
// their own. The decisions annotation belongs to the handler and is left alone.
func mutateReservedMetadata(in *Input) []Note {
	wantL, wantA := reservedMetadata(in)
	var removed, set []string
	in.Pod.Labels = syncReserved(in.Pod.Labels, wantL, in.Trusted, "label ", &removed, &set)
	in.Pod.Annotations = syncReserved(in.Pod.Annotations, wantA, in.Trusted, "annotation ", &removed, &set)
	var notes []Note
	if len(removed) > 0 {
		notes = append(notes, Note{Warning, ReasonReservedMetadataRemoved, fmt.Sprintf(
			"removed %s: keys under %s are written by gpuvc only", strings.Join(removed, ", "), contract.ReservedPrefix)})
	}
	if len(set) > 0 {
		notes = append(notes, Note{"", ReasonReservedMetadataSet, "set " + strings.Join(set, ", ")})
	}
	return notes
}

func syncReserved(have, want map[string]string, keepExtra bool, kind string, removed, set *[]string) map[string]string {
	for _, k := range slices.Sorted(maps.Keys(have)) {
		if !strings.HasPrefix(k, contract.ReservedPrefix) || k == contract.AnnotationDecisions {
			continue
		}
		if w, ok := want[k]; ok && w == have[k] {
			continue
		}
		if _, ok := want[k]; ok || !keepExtra {
			*removed = append(*removed, fmt.Sprintf("%s%s=%q", kind, k, have[k]))
			delete(have, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if v, ok := have[k]; ok && v == want[k] {
			continue
		}
		if have == nil {
			have = map[string]string{}
		}
		have[k] = want[k]
		*set = append(*set, fmt.Sprintf("%s%s=%q", kind, k, want[k]))
	}
	return have
}

// Default users the kube-controller-manager's StatefulSet and ReplicaSet
// controllers act as: with --use-service-account-credentials, and without. vCluster
// runs its control plane as a StatefulSet, or as a Deployment (pods created by the
// ReplicaSet controller) when its datastore is ephemeral.
var DefaultStatefulSetControllers = []string{
	"system:serviceaccount:kube-system:statefulset-controller",
	"system:serviceaccount:kube-system:replicaset-controller",
	"system:kube-controller-manager",
}

// roleOf decides, on CREATE, whether a pod is the team's vCluster control plane.
// Labels can be copied by any tenant, so they do not count: the pod must be
// created by the StatefulSet controller (the request's user, which a tenant
// cannot forge), be controlled by the team's vCluster StatefulSet, and not be a
// pod vCluster synced (those carry vcluster.loft.sh/managed-by). The chain then
// refuses GPUs on it and pins it to the system pool.
func roleOf(pod *corev1.Pod, p *TeamPolicy, user string, stsControllers []string) string {
	if p.VClusterName == "" || !slices.Contains(stsControllers, user) {
		return contract.RoleWorkload
	}
	if _, synced := pod.Labels[contract.LabelVClusterManagedBy]; synced {
		return contract.RoleWorkload
	}
	for _, o := range pod.OwnerReferences {
		if o.Controller == nil || !*o.Controller || !strings.HasPrefix(o.APIVersion, "apps/") {
			continue
		}
		// A Deployment's ReplicaSets are named <deployment>-<hash>. Tenants cannot
		// create ReplicaSets in their host namespace (vCluster syncs pods only),
		// and the request's user is the controller, so the name is enough.
		if (o.Kind == "StatefulSet" && o.Name == p.VClusterName) ||
			(o.Kind == "ReplicaSet" && strings.HasPrefix(o.Name, p.VClusterName+"-")) {
			return contract.RoleControlPlane
		}
	}
	return contract.RoleWorkload
}

// storedRole is the role recorded on a stored pod; pods admitted before gpuvc
// ran count as workloads.
func storedRole(pod *corev1.Pod) string {
	if pod.Annotations[contract.AnnotationRole] == contract.RoleControlPlane {
		return contract.RoleControlPlane
	}
	return contract.RoleWorkload
}
