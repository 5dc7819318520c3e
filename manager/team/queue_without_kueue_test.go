package team_test

import (
	"strings"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// TestQueueingTeamWithoutKueueSaysWhatToInstall: this package's control plane has
// no Kueue. A Team with spec.queueing is not provisioned as if it queued: its
// HostResourcesReady is False with reason QueueFailed, naming the missing API,
// the Kueue versions to install and the other way out.
func TestQueueingTeamWithoutKueueSaysWhatToInstall(t *testing.T) {
	ctx := integration(t)
	createTeam(ctx, t, testobj.Team("elastic-nokueue", "a100").GPUs(2).Borrow(1).Obj())
	got := &gpuvcv1.Team{}
	get(ctx, t, ns("elastic-nokueue"), got, func() (bool, string) {
		c := apimeta.FindStatusCondition(got.Status.Conditions, gpuvcv1.ConditionHostResourcesReady)
		if c == nil {
			return false, "no HostResourcesReady yet"
		}
		want := "spec.queueing needs Kueue, and this cluster serves no kueue.x-k8s.io/v1beta2 ResourceFlavor: install Kueue v0.15.0 or later (gpuvc is tested with v0.17.0), or remove spec.queueing"
		return c.Status == metav1.ConditionFalse && c.Reason == "QueueFailed" && strings.Contains(c.Message, want),
			string(c.Status) + " " + c.Reason + ": " + c.Message
	})
	if got.Status.Queue != nil {
		t.Errorf("status.queue without Kueue: %+v", *got.Status.Queue)
	}
}
