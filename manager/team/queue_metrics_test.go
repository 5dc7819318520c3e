package team

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gpuvc/gpuvc/api/scheme"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

func TestQueueCollector(t *testing.T) {
	queueing := &gpuvcv1.Team{
		ObjectMeta: metav1.ObjectMeta{Name: "vision"},
		Spec:       gpuvcv1.TeamSpec{Pool: "a100", Queueing: &gpuvcv1.Queueing{}},
		Status: gpuvcv1.TeamStatus{Queue: &gpuvcv1.QueueStatus{Flavors: []gpuvcv1.QueueFlavorStatus{
			{Resource: "nvidia.com/gpu", Guaranteed: 4, BorrowingLimit: 2, Used: 6, Borrowed: 2, Queued: 1},
			{Resource: "nvidia.com/mig-1g.10gb", Guaranteed: 2, Lent: 2},
		}}},
	}
	// Not queueing (a stale status is ignored), or queueing without a report yet.
	plain := &gpuvcv1.Team{ObjectMeta: metav1.ObjectMeta{Name: "fraud"}, Spec: gpuvcv1.TeamSpec{Pool: "a100"},
		Status: gpuvcv1.TeamStatus{Queue: &gpuvcv1.QueueStatus{Flavors: []gpuvcv1.QueueFlavorStatus{{Resource: "nvidia.com/gpu", Used: 9}}}}}
	fresh := &gpuvcv1.Team{ObjectMeta: metav1.ObjectMeta{Name: "new"}, Spec: gpuvcv1.TeamSpec{Pool: "a100", Queueing: &gpuvcv1.Queueing{}}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(queueing, plain, fresh).WithStatusSubresource(&gpuvcv1.Team{}).Build()
	want := `
# HELP gpuvc_team_queue_gpus A queueing team's GPU devices in Kueue by resource (nvidia.com/gpu, nvidia.com/mig-<profile>) and state: guaranteed, borrowing_limit, used (reserved for admitted pods), borrowed (used beyond the guarantee), lent (its guarantee other teams of the pool use now), queued (requested by waiting pods).
# TYPE gpuvc_team_queue_gpus gauge
gpuvc_team_queue_gpus{pool="a100",resource="nvidia.com/gpu",state="borrowed",team="vision"} 2
gpuvc_team_queue_gpus{pool="a100",resource="nvidia.com/gpu",state="borrowing_limit",team="vision"} 2
gpuvc_team_queue_gpus{pool="a100",resource="nvidia.com/gpu",state="guaranteed",team="vision"} 4
gpuvc_team_queue_gpus{pool="a100",resource="nvidia.com/gpu",state="lent",team="vision"} 0
gpuvc_team_queue_gpus{pool="a100",resource="nvidia.com/gpu",state="queued",team="vision"} 1
gpuvc_team_queue_gpus{pool="a100",resource="nvidia.com/gpu",state="used",team="vision"} 6
gpuvc_team_queue_gpus{pool="a100",resource="nvidia.com/mig-1g.10gb",state="borrowed",team="vision"} 0
gpuvc_team_queue_gpus{pool="a100",resource="nvidia.com/mig-1g.10gb",state="borrowing_limit",team="vision"} 0
gpuvc_team_queue_gpus{pool="a100",resource="nvidia.com/mig-1g.10gb",state="guaranteed",team="vision"} 2
gpuvc_team_queue_gpus{pool="a100",resource="nvidia.com/mig-1g.10gb",state="lent",team="vision"} 2
gpuvc_team_queue_gpus{pool="a100",resource="nvidia.com/mig-1g.10gb",state="queued",team="vision"} 0
gpuvc_team_queue_gpus{pool="a100",resource="nvidia.com/mig-1g.10gb",state="used",team="vision"} 0
`
	if err := testutil.CollectAndCompare(NewQueueCollector(c), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
