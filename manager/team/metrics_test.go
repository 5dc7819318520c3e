package team

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gpuvc/gpuvc/api/contract"
)

func TestUsageCollector(t *testing.T) {
	quota := func(ns, name, team string, hard, used corev1.ResourceList) *corev1.ResourceQuota {
		labels := map[string]string{LabelManagedBy: managedBy}
		if team != "" {
			labels[contract.LabelTeam] = team
		}
		return &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Status:     corev1.ResourceQuotaStatus{Hard: hard, Used: used},
		}
	}
	q := resource.MustParse
	c := fake.NewClientBuilder().WithObjects(
		quota("team-fraud", QuotaName, "fraud",
			corev1.ResourceList{"requests.nvidia.com/gpu": q("4"), "requests.nvidia.com/mig-1g.10gb": q("2"), "requests.cpu": q("64")},
			corev1.ResourceList{"requests.nvidia.com/gpu": q("3"), "requests.nvidia.com/mig-1g.10gb": q("1"), "requests.cpu": q("10")}),
		// Not a team quota: another name, or no team label.
		quota("team-fraud", "extra", "fraud", corev1.ResourceList{"requests.nvidia.com/gpu": q("9")}, nil),
		quota("elsewhere", QuotaName, "", corev1.ResourceList{"requests.nvidia.com/gpu": q("9")}, nil),
	).Build()
	want := `
# HELP gpuvc_team_gpu_quota GPU devices the team's quota allows, by resource.
# TYPE gpuvc_team_gpu_quota gauge
gpuvc_team_gpu_quota{resource="nvidia.com/gpu",team="fraud"} 4
gpuvc_team_gpu_quota{resource="nvidia.com/mig-1g.10gb",team="fraud"} 2
# HELP gpuvc_team_gpu_requests GPU devices the team's pods request, by resource (nvidia.com/gpu, nvidia.com/mig-<profile>).
# TYPE gpuvc_team_gpu_requests gauge
gpuvc_team_gpu_requests{resource="nvidia.com/gpu",team="fraud"} 3
gpuvc_team_gpu_requests{resource="nvidia.com/mig-1g.10gb",team="fraud"} 1
`
	if err := testutil.CollectAndCompare(NewUsageCollector(c), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
