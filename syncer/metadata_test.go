package syncer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

func TestRoleOf(t *testing.T) {
	sts := "system:serviceaccount:kube-system:statefulset-controller"
	cpPod := func() *corev1.Pod { return pod().OwnedBy("apps/v1", "StatefulSet", "fraud", "uid-1").Obj() }
	cases := map[string]struct {
		pod  *corev1.Pod
		user string
		edit func(*TeamPolicy)
		want string
	}{
		"vCluster pod created by the StatefulSet controller": {pod: cpPod(), user: sts, want: contract.RoleControlPlane},
		"same pod created by the tenant's syncer":            {pod: cpPod(), user: "system:serviceaccount:team-fraud:vc-fraud", want: contract.RoleWorkload},
		"synced pod claiming the owner": {
			pod: pod().OwnedBy("apps/v1", "StatefulSet", "fraud", "uid-1").Label(contract.LabelVClusterManagedBy, "fraud").Obj(), user: sts, want: contract.RoleWorkload,
		},
		"another StatefulSet":          {pod: pod().OwnedBy("apps/v1", "StatefulSet", "jupyter", "uid-2").Obj(), user: sts, want: contract.RoleWorkload},
		"no vCluster configured":       {pod: cpPod(), user: sts, edit: func(p *TeamPolicy) { p.VClusterName = "" }, want: contract.RoleWorkload},
		"owner that is not controller": {pod: func() *corev1.Pod { p := cpPod(); p.OwnerReferences[0].Controller = nil; return p }(), user: sts, want: contract.RoleWorkload},
		"ephemeral vCluster pod created by the ReplicaSet controller": {
			pod: pod().OwnedBy("apps/v1", "ReplicaSet", "fraud-7796c7bbdb", "uid-3").Obj(), user: "system:serviceaccount:kube-system:replicaset-controller", want: contract.RoleControlPlane,
		},
		"ReplicaSet of another Deployment": {
			pod: pod().OwnedBy("apps/v1", "ReplicaSet", "jupyter-7796c7bbdb", "uid-4").Obj(), user: "system:serviceaccount:kube-system:replicaset-controller", want: contract.RoleWorkload,
		},
		"labels only": {
			pod: pod().Label("app", "vcluster").Label("release", "fraud").Obj(), user: sts, want: contract.RoleWorkload,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := fraudPolicy()
			if tc.edit != nil {
				tc.edit(p)
			}
			if got := roleOf(tc.pod, p, tc.user, DefaultStatefulSetControllers); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestMutateReservedMetadata(t *testing.T) {
	forged := func() *corev1.Pod {
		return pod().Label(contract.LabelGPUShare, "true").Label(contract.LabelTeam, "payments").Label("app", "x").
			Annotation(contract.AnnotationRole, contract.RoleControlPlane).Annotation("gpuvc.dev/reservation", "victim").Obj()
	}
	cases := map[string]struct {
		pod         *corev1.Pod
		trusted     bool
		wantLabels  map[string]string
		wantAnn     map[string]string
		wantReasons []string
	}{
		"plain pod gets team and role": {
			pod: pod().Obj(), wantLabels: map[string]string{contract.LabelTeam: "fraud"},
			wantAnn: map[string]string{contract.AnnotationRole: contract.RoleWorkload}, wantReasons: []string{ReasonReservedMetadataSet},
		},
		"forged keys are removed": {
			pod:        forged(),
			wantLabels: map[string]string{contract.LabelTeam: "fraud", "app": "x"}, wantAnn: map[string]string{contract.AnnotationRole: contract.RoleWorkload},
			wantReasons: []string{ReasonReservedMetadataRemoved, ReasonReservedMetadataSet},
		},
		"trusted callers keep their own keys": {
			pod: forged(), trusted: true,
			wantLabels:  map[string]string{contract.LabelTeam: "fraud", contract.LabelGPUShare: "true", "app": "x"},
			wantAnn:     map[string]string{contract.AnnotationRole: contract.RoleWorkload, "gpuvc.dev/reservation": "victim"},
			wantReasons: []string{ReasonReservedMetadataRemoved, ReasonReservedMetadataSet},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := input(tc.pod)
			in.Trusted = tc.trusted
			notes := mutateReservedMetadata(in)
			if diff := cmp.Diff(tc.wantLabels, in.Pod.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAnn, in.Pod.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantReasons, reasonsOf(notes)); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
}
