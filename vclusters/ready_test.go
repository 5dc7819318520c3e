package vclusters

import (
	"k8s.io/utils/ptr"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReleaseReadiness(t *testing.T) {
	rel := func(st release.Status, desc string) *releaseSummary {
		return &releaseSummary{Version: 3, Status: st, Description: desc}
	}
	cases := map[string]struct {
		rel      *releaseSummary
		want     Readiness
		wantDone bool
	}{
		"absent": {nil, Readiness{Reason: ReasonReleaseNotFound, Message: "vCluster release team-fraud/fraud is not installed"}, true},
		"failed": {rel(release.StatusFailed, "Upgrade \"fraud\" failed: boom"),
			Readiness{Reason: ReasonReleaseFailed, Message: "vCluster release team-fraud/fraud revision 3 failed: Upgrade \"fraud\" failed: boom"}, true},
		"pending": {rel(release.StatusPendingUpgrade, ""),
			Readiness{Reason: ReasonReleasePending, Message: "vCluster release team-fraud/fraud revision 3 is pending-upgrade"}, true},
		"uninstalling": {rel(release.StatusUninstalling, ""),
			Readiness{Reason: ReasonReleaseUninstalling, Message: "vCluster release team-fraud/fraud is uninstalling"}, true},
		"deployed: the workload decides": {rel(release.StatusDeployed, ""), Readiness{}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, done := releaseReadiness(makeSpec(), tc.rel)
			if diff := cmp.Diff(tc.want, got); diff != "" || done != tc.wantDone {
				t.Errorf("done=%v (want %v), readiness (-want +got):\n%s", done, tc.wantDone, diff)
			}
		})
	}
}

func TestWorkloadReadiness(t *testing.T) {
	sts := func(mutate func(*appsv1.StatefulSet)) *workload {
		s := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "fraud", Generation: 2},
			Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To(int32(1))},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, ReadyReplicas: 1, UpdatedReplicas: 1,
				CurrentRevision: "fraud-2", UpdateRevision: "fraud-2"},
		}
		if mutate != nil {
			mutate(s)
		}
		return statefulSetWorkload(s)
	}
	dep := func(mutate func(*appsv1.Deployment)) *workload {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "fraud", Generation: 1},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(int32(1))},
			Status:     appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1},
		}
		if mutate != nil {
			mutate(d)
		}
		return deploymentWorkload(d)
	}
	pending := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fraud-0"}, Status: corev1.PodStatus{
		Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Message: "0/4 nodes are available: 3 node(s) had untolerated taint {gpuvc.dev/pool: a100}."}},
	}}
	pulling := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fraud-0"}, Status: corev1.PodStatus{
		Phase: corev1.PodPending,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "syncer", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}},
	}}
	cases := map[string]struct {
		w    *workload
		pods []corev1.Pod
		want Readiness
	}{
		"ready StatefulSet": {sts(nil), nil, Readiness{Ready: true, Reason: ReasonReady,
			Message: "vCluster control plane StatefulSet team-fraud/fraud is ready: 1 of 1 replicas"}},
		"ready Deployment": {dep(nil), nil, Readiness{Ready: true, Reason: ReasonReady,
			Message: "vCluster control plane Deployment team-fraud/fraud is ready: 1 of 1 replicas"}},
		"missing": {nil, nil, Readiness{Reason: ReasonControlPlaneMissing,
			Message: "the release is deployed but its control plane (StatefulSet or Deployment team-fraud/fraud) does not exist"}},
		"change not yet observed": {sts(func(s *appsv1.StatefulSet) { s.Generation = 3 }), nil, Readiness{Reason: ReasonControlPlaneRollout,
			Message: "vCluster control plane StatefulSet team-fraud/fraud has a change its controller has not processed yet"}},
		"rolling out": {sts(func(s *appsv1.StatefulSet) { s.Status.UpdateRevision = "fraud-3"; s.Status.UpdatedReplicas = 0 }), nil,
			Readiness{Reason: ReasonControlPlaneRollout,
				Message: "vCluster control plane StatefulSet team-fraud/fraud is rolling out a change: 0 of 1 replicas updated, 1 ready"}},
		"deployment with an old replica left": {dep(func(d *appsv1.Deployment) { d.Status.Replicas = 2 }), nil,
			Readiness{Reason: ReasonControlPlaneRollout,
				Message: "vCluster control plane Deployment team-fraud/fraud is rolling out a change: 1 of 1 replicas updated, 1 ready"}},
		"unschedulable": {sts(func(s *appsv1.StatefulSet) { s.Status.ReadyReplicas = 0 }), []corev1.Pod{pending},
			Readiness{Reason: ReasonControlPlaneStarting,
				Message: "vCluster control plane StatefulSet team-fraud/fraud is starting: 0 of 1 replicas ready; pod fraud-0 cannot be scheduled: 0/4 nodes are available: 3 node(s) had untolerated taint {gpuvc.dev/pool: a100}."}},
		"image pull": {sts(func(s *appsv1.StatefulSet) { s.Status.ReadyReplicas = 0 }), []corev1.Pod{pulling},
			Readiness{Reason: ReasonControlPlaneStarting,
				Message: "vCluster control plane StatefulSet team-fraud/fraud is starting: 0 of 1 replicas ready; pod fraud-0 container syncer is waiting: ImagePullBackOff: Back-off pulling image"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, workloadReadiness(makeSpec(), tc.w, tc.pods)); diff != "" {
				t.Errorf("readiness (-want +got):\n%s", diff)
			}
		})
	}
}
