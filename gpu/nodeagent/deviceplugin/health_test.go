package deviceplugin

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// A failed GPU turns Unhealthy on the open ListAndWatch streams: a whole GPU
// on nvidia.com/gpu, and a MIG-mode GPU's devices on every MIG resource; the
// other GPU's devices stay Healthy. A GPU back in service turns Healthy again.
func TestUnhealthyGPUIsResent(t *testing.T) {
	dir := shortDir(t)
	inv := testInventory(t) // GPU 0 MIG all-balanced, GPU 1 whole
	kubelet := startKubelet(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := NewHealth(inv)
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, Options{Dir: dir, Inventory: inv, Health: h}) }()
	waitRegistrations(t, kubelet, []string{"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"})

	_, gpuStream := listDevices(ctx, t, dial(t, dir, "gpuvc-gpu.sock"))
	_, migStream := listDevices(ctx, t, dial(t, dir, "gpuvc-mig-1g.10gb.sock"))

	h.SetUnhealthy(inv.GPUs[1].UUID)
	h.SetUnhealthy(inv.GPUs[1].UUID) // again: no second update
	if got := healthOf(t, gpuStream); !cmp.Equal(got, map[string]string{inv.GPUs[1].UUID: pluginapi.Unhealthy}) {
		t.Errorf("nvidia.com/gpu after GPU 1 failed: %v", got)
	}
	if got := healthOf(t, migStream); got[inv.GPUs[0].MIG.Instances[0].Devices[0].UUID] != pluginapi.Healthy {
		t.Errorf("MIG devices of the healthy GPU 0 after GPU 1 failed: %v", got)
	}

	h.SetUnhealthy(inv.GPUs[0].UUID)
	for id, state := range healthOf(t, migStream) {
		if state != pluginapi.Unhealthy {
			t.Errorf("MIG device %s of failed GPU 0 is %s", id, state)
		}
	}
	_ = healthOf(t, gpuStream) // every change is sent on every stream

	// GPU 0 returns to service (probation over): its MIG devices are Healthy
	// again; GPU 1 stays out.
	h.SetHealthy(inv.GPUs[0].UUID)
	h.SetHealthy(inv.GPUs[0].UUID) // again: no second update
	for id, state := range healthOf(t, migStream) {
		if state != pluginapi.Healthy {
			t.Errorf("MIG device %s of returned GPU 0 is %s", id, state)
		}
	}
	if got := healthOf(t, gpuStream); !cmp.Equal(got, map[string]string{inv.GPUs[1].UUID: pluginapi.Unhealthy}) {
		t.Errorf("nvidia.com/gpu after GPU 0 returned: %v", got)
	}
	h.SetHealthy(inv.GPUs[1].UUID)
	if got := healthOf(t, gpuStream); !cmp.Equal(got, map[string]string{inv.GPUs[1].UUID: pluginapi.Healthy}) {
		t.Errorf("nvidia.com/gpu after GPU 1 returned: %v", got)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

func healthOf(t *testing.T, s interface {
	Recv() (*pluginapi.ListAndWatchResponse, error)
}) map[string]string {
	t.Helper()
	resp, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range resp.Devices {
		out[d.ID] = d.Health
	}
	return out
}
