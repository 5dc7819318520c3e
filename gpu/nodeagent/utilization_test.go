package nodeagent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpuvc/gpuvc/gpu/usage"
)

// fakePodResources is the kubelet's pod-resources service with fixed answers.
type fakePodResources struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	pods []*podresourcesv1.PodResources
}

func (f *fakePodResources) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	return &podresourcesv1.ListPodResourcesResponse{PodResources: f.pods}, nil
}

// servePodResources serves f on a unix socket, as the kubelet does, and
// returns a client dialled with DialPodResources.
func servePodResources(t *testing.T, f *fakePodResources) podresourcesv1.PodResourcesListerClient {
	t.Helper()
	dir, err := os.MkdirTemp("", "gpuvc-pr-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	socket := filepath.Join(dir, "kubelet.sock")
	serveOn(t, socket, f)
	c, closeConn, err := DialPodResources(socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closeConn() })
	return c
}

func devices(resource string, ids ...string) []*podresourcesv1.ContainerDevices {
	return []*podresourcesv1.ContainerDevices{{ResourceName: resource, DeviceIds: ids}}
}

// A scrape joins NVML's samples with the kubelet's device assignments: a
// whole GPU held by a team's training pod, a shared GPU held by the team's
// reservation, a MIG device of another team, an idle GPU without owner.
func TestUtilizationCollector(t *testing.T) {
	client := servePodResources(t, &fakePodResources{pods: []*podresourcesv1.PodResources{
		{Name: "train", Namespace: "team-fraud", Containers: []*podresourcesv1.ContainerResources{
			{Name: "main", Devices: devices("nvidia.com/gpu", "GPU-a")},
			{Name: "sidecar", Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "example.com/fpga", DeviceIds: []string{"fpga0"}}}},
		}},
		{Name: "gpuvc-gpu-x1", Namespace: "team-fraud", Containers: []*podresourcesv1.ContainerResources{
			{Name: "reserve", Devices: devices("nvidia.com/gpu", "GPU-b")},
		}},
		{Name: "infer", Namespace: "team-ads", Containers: []*podresourcesv1.ContainerResources{
			{Name: "main", Devices: devices("nvidia.com/mig-1g.10gb", "MIG-1")},
		}},
	}})
	util := func(v float64) *float64 { return &v }
	c := &UtilizationCollector{
		Node: "n0", Log: logr.Discard(),
		Read: func() ([]usage.Sample, error) {
			return []usage.Sample{
				{UUID: "GPU-a", GPU: 0, UtilizationPercent: util(73), MemoryUsedBytes: 10, MemoryTotalBytes: 80},
				{UUID: "GPU-b", GPU: 1, UtilizationPercent: util(12), MemoryUsedBytes: 20, MemoryTotalBytes: 80},
				{UUID: "MIG-1", GPU: 2, MIG: true, MemoryUsedBytes: 3, MemoryTotalBytes: 10},
				{UUID: "GPU-d", GPU: 3, UtilizationPercent: util(0), MemoryUsedBytes: 0, MemoryTotalBytes: 80},
			}, nil
		},
		Owners: func(ctx context.Context) (map[string]DeviceOwner, error) { return DeviceOwners(ctx, client) },
	}
	want := `
# HELP gpuvc_team_gpu_utilization Percent of time a kernel ran on the GPU over NVML's last sample period, with the pod holding it (kubelet pod-resources). Not reported for MIG devices.
# TYPE gpuvc_team_gpu_utilization gauge
gpuvc_team_gpu_utilization{UUID="GPU-a",container="main",gpu="0",mig="false",namespace="team-fraud",node="n0",pod="train",team="fraud"} 73
gpuvc_team_gpu_utilization{UUID="GPU-b",container="reserve",gpu="1",mig="false",namespace="team-fraud",node="n0",pod="gpuvc-gpu-x1",team="fraud"} 12
gpuvc_team_gpu_utilization{UUID="GPU-d",container="",gpu="3",mig="false",namespace="",node="n0",pod="",team=""} 0
# HELP gpuvc_team_gpu_memory_used_bytes GPU or MIG device memory in use, with the pod holding the device.
# TYPE gpuvc_team_gpu_memory_used_bytes gauge
gpuvc_team_gpu_memory_used_bytes{UUID="GPU-a",container="main",gpu="0",mig="false",namespace="team-fraud",node="n0",pod="train",team="fraud"} 10
gpuvc_team_gpu_memory_used_bytes{UUID="GPU-b",container="reserve",gpu="1",mig="false",namespace="team-fraud",node="n0",pod="gpuvc-gpu-x1",team="fraud"} 20
gpuvc_team_gpu_memory_used_bytes{UUID="GPU-d",container="",gpu="3",mig="false",namespace="",node="n0",pod="",team=""} 0
gpuvc_team_gpu_memory_used_bytes{UUID="MIG-1",container="main",gpu="2",mig="true",namespace="team-ads",node="n0",pod="infer",team="ads"} 3
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "gpuvc_team_gpu_utilization", "gpuvc_team_gpu_memory_used_bytes"); err != nil {
		t.Error(err)
	}
}

func TestDeviceOwnerTeam(t *testing.T) {
	for ns, want := range map[string]string{"team-fraud": "fraud", "kube-system": "", "team-": ""} {
		if got := (DeviceOwner{Namespace: ns}).Team(); got != want {
			t.Errorf("%s: team %q, want %q", ns, got, want)
		}
	}
}
